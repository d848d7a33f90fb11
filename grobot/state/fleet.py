"""The fleet as the signed-in user may see it: the bots with their live status, refreshed
every few seconds (the Bots page's table and the sidebar of every page read it)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import reflex as rx

from grobot.core import plain_text
from grobot.core.services import tester_chat
from grobot.core.services.bots import BotSummary
from grobot.core.services.users import NotSignedIn, bots_visible_to
from grobot.state.app_state import AppState, run_authorized, sign_out_script

logger = logging.getLogger(__name__)

REFRESH_MS = 2000
# A refresh takes milliseconds; one that died while cancelled (the browser left the page) must
# not hold the next ticks back for long.
REFRESH_STALE_SECONDS = 5.0


@dataclass
class BotRow:
    """What the page shows of one bot (never its token: only whether one is set)."""

    id: int
    name: str
    enabled: bool
    has_token: bool
    status: str
    status_detail: str
    discord_user_name: str
    guild_count: int

    @classmethod
    def from_summary(cls, summary: BotSummary) -> BotRow:
        return cls(
            id=summary.id,
            name=summary.name,
            enabled=summary.enabled,
            has_token=summary.has_token,
            status=summary.status,
            status_detail=plain_text.bot_status(summary.status_detail or "").text,  # the whole text: its header, for admins
            discord_user_name=summary.discord_user_name or "",
            guild_count=summary.guild_count,
        )


def load_bot_rows(session_token: str) -> tuple[list[BotRow], bool]:
    """The bots the session's user may see, with their status, by name, and whether a bot worker
    runs (blocking: run it in a thread). Raises ``NotSignedIn`` when the session is no longer valid."""
    return run_authorized(
        session_token,
        lambda session, user: ([BotRow.from_summary(summary) for summary in bots_visible_to(user, session=session)],
                               tester_chat.worker_running(session=session)),
    )


class BotsState(AppState):
    """The bot list of the Bots page."""

    bots: list[BotRow] = []
    loaded: bool = False
    load_error: str = ""
    # Whether a bot worker sent its heartbeat lately (True until the first read: no false alarm).
    worker_running: bool = True
    # When the refresh in flight started (time.monotonic); 0 when none. A stale value (a
    # refresh that died with its worker) stops counting after REFRESH_STALE_SECONDS.
    _refresh_started: float = 0.0

    @rx.var
    def bot_count(self) -> int:
        return len(self.bots)

    @rx.var
    def online_count(self) -> int:
        return sum(1 for bot in self.bots if bot.status == "online")

    @rx.var
    def error_count(self) -> int:
        return sum(1 for bot in self.bots if bot.status == "error")

    @rx.var
    def summary(self) -> str:
        total = len(self.bots)
        online = sum(1 for bot in self.bots if bot.status == "online")
        return f"{total} bot{'' if total == 1 else 's'} · {online} online"

    @rx.event(background=True)
    async def refresh(self, _tick: str = ""):
        """Reload the bots from the database (on load, then on every timer tick)."""
        async with self:
            if not self.user_id:
                return  # the on-load session check sends the browser to the login page
            now = time.monotonic()
            if self._refresh_started and now - self._refresh_started < REFRESH_STALE_SECONDS:
                return  # the previous tick is still reading
            self._refresh_started = now
            session_token = self.session_token
        rows: list[BotRow] | None = None
        worker_running = True
        failure: Exception | None = None
        try:
            rows, worker_running = await asyncio.to_thread(load_bot_rows, session_token)
        except asyncio.CancelledError:  # Reflex ends a page's on-load chain when the browser leaves
            async with self:
                self._refresh_started = 0.0  # else the next ticks would wait for a dead refresh
            raise
        except NotSignedIn:  # expired, or the user was disabled or deleted meanwhile
            async with self:
                self._refresh_started = 0.0
                self._forget_session()
                self.bots = []
                back_to = self._current_path()  # signing in again comes back here
            return sign_out_script(back_to)
        except Exception as exc:  # the page says so and keeps retrying
            failure = exc
        async with self:
            self._refresh_started = 0.0
            if failure is not None:
                if not self.load_error:  # once per outage with the details, not on every tick
                    logger.warning("Bots page: reading the bots failed", exc_info=failure)
                self.load_error = "The database cannot be read right now. Retrying…"
                return
            self.bots = rows or []
            self.worker_running = worker_running
            self.loaded = True
            self.load_error = ""
