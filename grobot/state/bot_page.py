"""The bot a per-bot page shows: which one (from the URL), whether the user may see it, its
header (name, live status, Discord identity, enabled) and the server-side checks every tab uses.

Every tab page's state derives from :class:`BotPageState`. A tab's event handlers reach the
database only through :func:`run_for_bot`, which checks the session, the role and that the
user may see the bot, on the server, for every call.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from typing import TypeVar

import reflex as rx
from sqlmodel import Session

from grobot.core import plain_text
from grobot.core.errors import GroBotError, NotFoundError, PermissionDenied
from grobot.core.models import AppUser, Bot, BotStatus, Role
from grobot.core.services import bots as bots_service
from grobot.core.services import tester_chat
from grobot.core.services.users import NotSignedIn, SignedInUser, signed_in, visible_bot
from grobot.core.services.validation import sentences
from grobot.state.app_state import AppState, login_route, run_authorized, sign_out_script

logger = logging.getLogger(__name__)

T = TypeVar("T")

HEADER_REFRESH_STALE_SECONDS = 5.0  # like the sidebar's (grobot.state.fleet)
SAME_BOT_FRESH_SECONDS = 60.0  # a tab switch within this after the bot's check reads no header
NOT_FOUND_MESSAGE = "This bot does not exist, or you are not allowed to see it."
ADMIN_ONLY_MESSAGE = "Only administrators can open this tab. Testers can use the Test Chat."


def run_for_bot(
    token: str, bot_id: int, work: Callable[[Session, AppUser, Bot], T], *, admin: bool, readonly: bool = True
) -> T:
    """Check the session, the role (admins only when ``admin``) and that the user may see bot
    ``bot_id``, then ``work(session, user, bot)``. Blocking: run it with ``asyncio.to_thread``.

    Raises ``NotSignedIn``, ``PermissionDenied`` or ``NotFoundError`` (a bot the user may not
    see is reported exactly like a bot that does not exist).
    """
    roles = (Role.ADMIN,) if admin else ()

    def checked(session: Session, user: AppUser) -> T:
        return work(session, user, visible_bot(user, bot_id, session=session))

    return run_authorized(token, checked, *roles, readonly=readonly)


_BOT_PATH = re.compile(r"/bots/(\d{1,12})(?:/|$)")


def bot_id_from_path(path: str) -> int:
    """The bot id of a per-bot page's URL path like ``/bots/3/chat`` (0 when there is none)."""
    match = _BOT_PATH.search(path or "")
    return int(match.group(1)) if match else 0


def user_message(exc: Exception) -> str:
    """What to tell the user about a failed action (domain errors as they are, others in general words)."""
    if isinstance(exc, NotSignedIn):
        return "Your session has ended. Please sign in again."
    if isinstance(exc, PermissionDenied):
        return "Only administrators can do this."
    if isinstance(exc, NotFoundError):
        return str(exc)[:1].upper() + str(exc)[1:]
    if isinstance(exc, GroBotError):
        return sentences(str(exc))
    logger.warning("A web action failed", exc_info=exc)
    return "Something went wrong on the server. Please try again."


def _header(session: Session, user: AppUser, bot: Bot) -> dict[str, object]:
    summary = bots_service.summarize(bot, session.get(BotStatus, bot.id))
    said = plain_text.bot_status(summary.status_detail or "")
    return {
        "name": summary.name,
        "enabled": summary.enabled,
        "status": summary.status,
        "status_detail": said.text,
        "status_technical": said.detail if user.role == Role.ADMIN.value else "",
        "discord_user_name": summary.discord_user_name or "",
        "guild_count": summary.guild_count,
        "has_token": summary.has_token,
    }


def _signed_in_with_header(bot_id: int) -> Callable[[Session, AppUser], tuple[SignedInUser, dict[str, object] | None]]:
    """Who is signed in, and the header of bot ``bot_id`` (None when they may not see it)."""

    def work(session: Session, user: AppUser) -> tuple[SignedInUser, dict[str, object] | None]:
        try:
            bot = visible_bot(user, bot_id, session=session)
        except NotFoundError:
            return signed_in(user), None
        return signed_in(user), _header(session, user, bot)

    return work


def _header_and_worker(session: Session, user: AppUser, bot: Bot) -> tuple[dict[str, object], bool]:
    return _header(session, user, bot), tester_chat.worker_running(session=session)


def enabled_message(name: str, enabled: bool, *, worker_running: bool) -> str:
    """The toast of the enable switch: what the worker does, or that none runs to do it."""
    if enabled:
        return (f"{name} enabled: the worker starts it." if worker_running
                else f"{name} enabled. No bot worker is running: start it with python -m grobot worker.")
    return f"{name} disabled: the worker stops it." if worker_running else f"{name} disabled."


def _set_enabled(enabled: bool) -> Callable[[Session, AppUser, Bot], None]:
    def work(session: Session, user: AppUser, bot: Bot) -> None:
        bots_service.set_enabled(bot, enabled, session=session)
        logger.info("User %s %s bot %s in the web app", user.username, "enabled" if enabled else "disabled", bot.id)

    return work


class BotPageState(AppState):
    """The bot of the open per-bot page, and its header."""

    current_bot_id: int = 0
    current_tab: str = ""
    # Empty when the page may show the bot; otherwise why not (shown instead of the tab).
    access_error: str = ""
    bot_loaded: bool = False
    bot_name: str = ""
    bot_enabled: bool = False
    bot_status: str = "stopped"
    bot_status_detail: str = ""
    bot_status_technical: str = ""  # admins: the whole status text behind "Details" (plain_text.bot_status)
    bot_discord_name: str = ""
    bot_guild_count: int = 0
    bot_has_token: bool = False
    header_error: str = ""
    _header_refresh_started: float = 0.0
    _opened_at: float = 0.0  # when the bot was last checked and its header read (time.monotonic)

    @rx.var
    def bot_ready(self) -> bool:
        """The page may show the bot's tab."""
        return self.bot_loaded and not self.access_error

    def _show_header(self, data: dict[str, object]) -> None:
        self.bot_name = str(data["name"])
        self.bot_enabled = bool(data["enabled"])
        self.bot_status = str(data["status"])
        self.bot_status_detail = str(data["status_detail"])
        self.bot_status_technical = str(data["status_technical"])
        self.bot_discord_name = str(data["discord_user_name"])
        self.bot_guild_count = int(data["guild_count"])  # type: ignore[call-overload]
        self.bot_has_token = bool(data["has_token"])

    @rx.event
    async def open_bot(self, tab: str, admin_only: bool):
        """On load of a per-bot tab: the session, then the bot of the URL and whether this user may open the tab."""
        bot_id = bot_id_from_path(self.router.url.path)
        if self._same_bot_open(bot_id):
            # Another tab of the bot just opened: the header is live (its timer), and the tab's own
            # load checks the session and the bot again on the server (``run_for_bot``).
            self.current_tab = tab
            self.access_error = ADMIN_ONLY_MESSAGE if admin_only and not self.is_admin else ""
            return None
        self.current_tab = tab
        self.bot_loaded = False
        self.access_error = ""
        self.current_bot_id = bot_id
        token = self.session_token
        try:  # the session and the bot's header in one transaction (one thread hop per tab switch)
            user, data = await asyncio.to_thread(run_authorized, token, _signed_in_with_header(self.current_bot_id))
        except NotSignedIn:
            self._forget_session()
            back_to = self._current_path()
            return sign_out_script(back_to) if token else rx.redirect(login_route(back_to), replace=True)
        self._show_user(user)
        if admin_only and not self.is_admin:
            self.access_error = ADMIN_ONLY_MESSAGE
            logger.info("User %s was refused the %s tab of bot %s", self.username, tab, self.current_bot_id)
        if data is None:
            self.access_error = NOT_FOUND_MESSAGE
            self.bot_name = "Bot not found"
        else:
            self._show_header(data)
            self._opened_at = time.monotonic()
        self.bot_loaded = True
        return None

    def _same_bot_open(self, bot_id: int) -> bool:
        """Whether ``bot_id`` is the bot shown, checked and visible within the last minute."""
        return (bool(self.user_id) and self.bot_loaded and bot_id == self.current_bot_id and bot_id > 0
                and self.access_error in ("", ADMIN_ONLY_MESSAGE)
                and time.monotonic() - self._opened_at < SAME_BOT_FRESH_SECONDS)

    @rx.event(background=True)
    async def refresh_header(self, _tick: str = ""):
        """Reload the header's live status (on every timer tick)."""
        async with self:
            if not self.user_id or not self.current_bot_id or self.access_error:
                return
            now = time.monotonic()
            if self._header_refresh_started and now - self._header_refresh_started < HEADER_REFRESH_STALE_SECONDS:
                return
            self._header_refresh_started = now
            token, bot_id = self.session_token, self.current_bot_id
        data: dict[str, object] | None = None
        error = ""
        try:
            data = await asyncio.to_thread(run_for_bot, token, bot_id, _header, admin=False)
        except asyncio.CancelledError:
            async with self:
                self._header_refresh_started = 0.0
            raise
        except NotSignedIn:
            async with self:
                self._header_refresh_started = 0.0
                self._forget_session()
            return sign_out_script()
        except NotFoundError:
            error = "deleted"
        except Exception as exc:  # the database is away for a moment: keep the last header
            logger.debug("Bot header refresh failed: %s", type(exc).__name__)
        async with self:
            self._header_refresh_started = 0.0
            if data is not None and bot_id == self.current_bot_id:
                self._show_header(data)
            elif error and bot_id == self.current_bot_id:
                self.access_error = NOT_FOUND_MESSAGE
        return None

    @rx.event
    async def set_bot_enabled(self, enabled: bool):
        """Enable or disable the bot (admins only; the supervisor starts or stops its process)."""
        try:
            await asyncio.to_thread(run_for_bot, self.session_token, self.current_bot_id, _set_enabled(bool(enabled)),
                                    admin=True, readonly=False)
            data, worker = await asyncio.to_thread(run_for_bot, self.session_token, self.current_bot_id,
                                                   _header_and_worker, admin=False)
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        self._show_header(data)
        return rx.toast.success(enabled_message(self.bot_name, enabled, worker_running=worker))
