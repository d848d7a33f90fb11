"""The state of the Schedules tab of a bot (:mod:`grobot.pages.bot_schedules` is its view): the bot's scheduled
posts, the add/edit dialog, "Run now", "Try in Test Chat" and the delete confirmation. Admins only; every handler
checks on the server that the schedule it names belongs to the open bot (:func:`schedules.get_schedule`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.core.errors import ValidationError
from grobot.core.models import AppUser, Bot, BotSchedule
from grobot.core.services import schedules, tester_chat
from grobot.core.services.users import NotSignedIn
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

logger = logging.getLogger(__name__)

KIND_LABELS = {"text": "Post a fixed text", "prompt": "Answer a prompt, post the answer"}


@dataclass
class ScheduleRow:
    """One schedule as the tab shows it (times in the schedule's zone)."""

    id: int
    name: str
    channel_id: str
    channel: str  # its name where the bot has talked there ("#general"), else its id
    kind: str
    content: str
    cron: str
    interval_seconds: int
    timezone: str
    grace_seconds: int
    enabled: bool
    when: str
    next_run: str
    last_run: str
    last_status: str


@dataclass
class ChannelChoice:
    """A channel the bot has talked in, offered in the dialog's channel field."""

    id: str
    name: str


def _row(row: BotSchedule, channels: dict[str, str] | None = None) -> ScheduleRow:
    return ScheduleRow(
        id=row.id or 0, name=row.name, channel_id=row.channel_id,
        channel=(channels or {}).get(row.channel_id) or f"channel {row.channel_id}", kind=row.kind, content=row.content, cron=row.cron,
        interval_seconds=row.interval_seconds, timezone=row.timezone, grace_seconds=row.grace_seconds,
        enabled=row.enabled, when=schedules.describe(row).rsplit(", in channel", 1)[0],
        next_run=schedules.in_zone(row.next_run_at, row.timezone),
        last_run=schedules.in_zone(row.last_run_at, row.timezone), last_status=row.last_status)


def _rows(session: Session, _user: AppUser, bot: Bot) -> tuple[list[ScheduleRow], list[ChannelChoice]]:
    assert bot.id is not None
    channels = schedules.known_channels(bot.id, session=session)
    return ([_row(r, channels) for r in schedules.list_schedules(bot.id, session=session)],
            [ChannelChoice(id=k, name=v) for k, v in sorted(channels.items(), key=lambda item: item[1].lower())])


def _reader(schedule_id: int) -> Callable[[Session, AppUser, Bot], ScheduleRow]:
    """Read schedule ``schedule_id`` of the open bot (NotFoundError for any other's)."""
    def read(session: Session, _user: AppUser, bot: Bot) -> ScheduleRow:
        assert bot.id is not None
        return _row(schedules.get_schedule(bot.id, int(schedule_id), session=session))

    return read


def _number(form: dict[str, Any], key: str, what: str) -> int:
    text = str(form.get(key) or "").strip()
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        raise ValidationError(f"{what} is a whole number of seconds.") from None


def _fields(form: dict[str, Any]) -> dict[str, Any]:
    """The schedule's fields from the dialog's form (validated by the service)."""
    timing = str(form.get("timing") or "cron")
    return {
        "name": str(form.get("name") or ""),
        "channel_id": str(form.get("channel_id") or "").strip(),
        "kind": str(form.get("kind") or "text"),
        "content": str(form.get("content") or ""),
        "cron": str(form.get("cron") or "").strip() if timing == "cron" else "",
        "interval_seconds": _number(form, "every", "The interval") if timing == "interval" else 0,
        "timezone": str(form.get("timezone") or "UTC").strip() or "UTC",
        "grace_seconds": _number(form, "grace", "The grace time") if str(form.get("grace") or "").strip()
        else schedules.DEFAULT_GRACE_SECONDS,
    }


class SchedulesState(BotPageState):
    """The open bot's schedules, the add/edit dialog and the delete confirmation."""

    rows: list[ScheduleRow] = []
    channels: list[ChannelChoice] = []  # where the bot has talked (the channel field's suggestions)
    sched_loaded: bool = False
    sched_error: str = ""
    editor_open: bool = False
    editor_key: int = 0  # a new key resets the dialog's form to the values below
    editor_id: int = 0  # 0: a new schedule
    editor_values: dict[str, str] = {}
    editor_error: str = ""
    delete_id: int = 0
    delete_name: str = ""

    async def _call(self, work: Callable[[Session, AppUser, Bot], Any], *, write: bool = False) -> Any:
        return await asyncio.to_thread(run_for_bot, self.session_token, self.current_bot_id, work, admin=True,
                                       readonly=not write)

    async def _try(self, work: Callable[[Session, AppUser, Bot], Any], *, write: bool = False) -> tuple[Any, Any]:
        """``(result, None)``, or ``(None, the event that says why not)``."""
        try:
            return await self._call(work, write=write), None
        except NotSignedIn:
            self._forget_session()
            return None, sign_out_script()
        except Exception as exc:
            return None, rx.toast.error(user_message(exc))

    async def _reload(self) -> None:
        self.rows, self.channels = await self._call(_rows)

    @rx.event
    async def load(self):
        """On load: the bot's schedules."""
        self.sched_loaded, self.sched_error = False, ""
        if not self.bot_ready:
            return None
        try:
            await self._reload()
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.sched_error = user_message(exc)
        self.sched_loaded = True
        return None

    async def _act(self, work: Callable[[Session, AppUser, Bot], Any], done: str):
        _, refused = await self._try(work, write=True)
        if refused is not None:
            return refused
        shown, refused = await self._try(_rows)
        if refused is not None:
            return refused
        self.rows, self.channels = shown
        return rx.toast.success(done)

    def _open_editor(self, values: dict[str, str], schedule_id: int) -> None:
        self.editor_values, self.editor_id, self.editor_error = values, schedule_id, ""
        self.editor_key += 1
        self.editor_open = True

    @rx.event
    def start_add(self):
        """The dialog, empty (each Monday at 09:00 in UTC as an example)."""
        self._open_editor({"name": "", "channel_id": "", "kind": "text", "content": "", "timing": "cron",
                           "cron": "0 9 * * mon", "every": "3600", "timezone": "UTC",
                           "grace": str(schedules.DEFAULT_GRACE_SECONDS)}, 0)

    @rx.event
    async def start_edit(self, schedule_id: int):
        """The dialog with the schedule's values (a schedule of this bot only)."""
        row, refused = await self._try(_reader(schedule_id))
        if refused is not None:
            return refused
        self._open_editor({"name": row.name, "channel_id": row.channel_id, "kind": row.kind, "content": row.content,
                           "timing": "cron" if row.cron else "interval", "cron": row.cron or "0 9 * * mon",
                           "every": str(row.interval_seconds or 3600), "timezone": row.timezone,
                           "grace": str(row.grace_seconds)}, row.id)
        return None

    @rx.event
    def editor_open_change(self, is_open: bool):
        self.editor_open = bool(is_open) and self.editor_open

    @rx.event
    async def save(self, form: dict[str, Any]):
        """Add the schedule, or change the one being edited (its next run computed again from now)."""
        schedule_id = self.editor_id

        def write(session: Session, user: AppUser, bot: Bot) -> None:
            assert bot.id is not None
            values = _fields(form)
            if schedule_id:
                schedules.update_schedule(bot.id, schedule_id, session=session, **values)
            else:
                schedules.create_schedule(bot.id, session=session, **values)
            logger.info("User %s %s a schedule of bot %s", user.username, "changed" if schedule_id else "added", bot.id)

        try:
            await self._call(write, write=True)
            await self._reload()
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.editor_error = user_message(exc)
            return None
        self.editor_open, self.editor_error = False, ""
        return rx.toast.success("Schedule saved.")

    @rx.event
    async def set_enabled(self, schedule_id: int, enabled: bool):
        """Pause (no run until resumed) or resume (from its next time on)."""
        def work(session: Session, _user: AppUser, bot: Bot) -> None:
            assert bot.id is not None
            schedules.set_enabled(bot.id, int(schedule_id), bool(enabled), session=session)

        return await self._act(work, "Schedule resumed." if enabled else "Schedule paused.")

    @rx.event
    async def run_now(self, schedule_id: int):
        """The worker posts it within a second or two (paused or not)."""
        def work(session: Session, _user: AppUser, bot: Bot) -> None:
            assert bot.id is not None
            schedules.request_run(bot.id, int(schedule_id), session=session)

        return await self._act(work, "The bot posts it within a second or two (when the worker runs).")

    @rx.event
    async def try_in_chat(self, schedule_id: int):
        """The schedule's prompt sent in the admin's Test Chat, as in the schedule's channel (its persona, if it
        has one): what it would post, nothing posted."""
        def work(session: Session, user: AppUser, bot: Bot) -> None:
            assert bot.id is not None and user.id is not None
            row = schedules.get_schedule(bot.id, int(schedule_id), session=session)
            if row.kind != "prompt":
                raise ValidationError("This schedule posts its text as it is: there is nothing to try.")
            conv = tester_chat.open_session(bot.id, user.id, session=session)
            tester_chat.submit(conv.id or 0, row.content, session=session, author_name=user.username,
                               author_id=f"app-user:{user.id}", channel_id=row.channel_id)  # as in its channel

        _, refused = await self._try(work, write=True)
        return refused if refused is not None else rx.redirect(f"/bots/{self.current_bot_id}/chat")

    @rx.event
    async def ask_delete(self, schedule_id: int):
        """The confirmation of deleting a schedule of this bot."""
        row, refused = await self._try(_reader(schedule_id))
        if refused is not None:
            return refused
        self.delete_id, self.delete_name = row.id, row.name or f"schedule {row.id}"
        return None

    @rx.event
    def cancel_delete(self):
        self.delete_id, self.delete_name = 0, ""

    @rx.event
    async def confirm_delete(self):
        schedule_id = self.delete_id
        self.delete_id = 0
        if not schedule_id:
            return None

        def work(session: Session, _user: AppUser, bot: Bot) -> None:
            assert bot.id is not None
            schedules.delete_schedule(bot.id, schedule_id, session=session)

        return await self._act(work, "Schedule deleted.")
