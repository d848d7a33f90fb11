"""The Logs tab: its state, what it reads and does through the services with the checks of each event (the view
is in :mod:`grobot.pages.bot_logs`)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, tzinfo

import reflex as rx
from sqlmodel import Session

from grobot.core import plain_text
from grobot.core.models import AppUser, Bot
from grobot.core.services import costs, log_entries, usage_limits
from grobot.core.services.budgets import alerts_of
from grobot.core.services.users import NotSignedIn
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

logger = logging.getLogger(__name__)

PAGE_SIZE = 100
TAIL_STALE_SECONDS = 30.0
LEVEL_CHOICES = ["ALL", "DEBUG", "INFO", "WARNING", "ERROR"]
ZONE_SCRIPT = "Intl.DateTimeFormat().resolvedOptions().timeZone || ''"


@dataclass
class LogRow:
    """One log entry as the table shows it (``time``: ISO 8601 in UTC, shown in the browser's zone)."""

    id: int
    time: str
    shown: str  # the time in the browser's zone: "2026-01-11 00:15:19"
    offset: str  # that zone's offset then: "+05:30"
    level: str
    source: str  # where it comes from, in words (log_entries.source_of); the module's name is ``logger``
    logger: str
    message: str  # in plain words
    detail: str = ""  # the whole message when the plain words leave part of it out


@dataclass(frozen=True)
class LogQuery:
    """The filters of the tab: level, text, days (``YYYY-MM-DD`` in ``zone``) and the page (0: newest)."""

    level: str = "ALL"
    search: str = ""
    first_day: str = ""
    last_day: str = ""
    zone: str = ""
    page: int = 0

    def read(self, session: Session, bot_id: int, limit: int, *, offset: int | None = None,
             max_limit: int = log_entries.MAX_LIMIT) -> list[log_entries.LogLine]:
        since, until = log_entries.day_range(self.first_day, self.last_day, self.zone)
        return log_entries.recent_logs(session=session, bot_id=bot_id, min_level=self.level, search=self.search,
                                       limit=limit, since=since, until=until,
                                       offset=self.page * PAGE_SIZE if offset is None else offset,
                                       max_limit=max_limit)


def _iso(line: log_entries.LogLine) -> str:
    moment = line.created_at
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def _row(line: log_entries.LogLine, message: str, zone: tzinfo) -> LogRow:
    said = plain_text.without_technical(message, fallback="An error (see its details)", addresses=False)
    moment = line.created_at if line.created_at.tzinfo else line.created_at.replace(tzinfo=UTC)
    local = moment.astimezone(zone)
    offset = local.strftime("%z") or "+0000"
    return LogRow(id=line.id, time=_iso(line), shown=local.strftime("%Y-%m-%d %H:%M:%S"),
                  offset=f"{offset[:3]}:{offset[3:]}", level=line.level, source=log_entries.source_of(line.logger),
                  logger=line.logger, message=said.text, detail=said.detail)


def load_logs(token: str, bot_id: int, level: str, search: str, limit: int,
              query: LogQuery | None = None) -> tuple[list[LogRow], bool]:
    """A page of ``limit`` matching entries and whether there are older ones (blocking; admins only)."""
    query = query or LogQuery(level=level, search=search)

    def work(session: Session, _user: AppUser, bot: Bot) -> tuple[list[LogRow], bool]:
        lines = query.read(session, bot.id or 0, limit + 1)
        shown, zone = lines[:limit], log_entries.zone_of(query.zone)
        rows = [_row(line, text, zone) for line, text in zip(shown, log_entries.readable_messages(
            shown, session=session, bot_id=bot.id or 0), strict=True)]
        return rows, len(lines) > limit

    return run_for_bot(token, bot_id, work, admin=True)


def export_logs(token: str, bot_id: int, query: LogQuery, fmt: str) -> tuple[str, int]:
    """The filtered entries (every page, at most ``MAX_EXPORT``) as CSV or JSON Lines, and their count."""

    def work(session: Session, _user: AppUser, bot: Bot) -> tuple[str, int]:
        lines = query.read(session, bot.id or 0, log_entries.MAX_EXPORT, offset=0, max_limit=log_entries.MAX_EXPORT)
        return log_entries.export(lines, fmt=fmt, zone=query.zone), len(lines)

    return run_for_bot(token, bot_id, work, admin=True)


def budget_alerts(token: str, bot_id: int) -> list[str]:
    """The bot's budgets at 80 % or more, as banner lines (blocking; admins only)."""

    def work(session: Session, _user: AppUser, bot: Bot) -> list[str]:
        state = usage_limits.read_state(session=session, bot=bot)
        currency = costs.get_currency(session=session)
        lines = []
        for alert in alerts_of(state):
            used, limit = alert["used"], alert["limit"]
            amounts = (f"{costs.money(used, currency)} of {costs.money(limit, currency)}" if "cost" in alert["budget"]
                       else f"{used:,.0f} of {limit:,.0f}")
            state_text = "reached: no LLM calls until it resets" if alert["reached"] else "used"
            lines.append(f"{alert['percent']:.0f} % of the {alert['label']} budget {state_text} ({amounts}, "
                         f"{alert['period']})")
        return lines

    return run_for_bot(token, bot_id, work, admin=True)


class LogsState(BotPageState):
    """The log view of the open bot."""

    rows: list[LogRow] = []
    level: str = "ALL"
    search: str = ""
    first_day: str = ""
    last_day: str = ""
    zone: str = ""
    page: int = 0
    has_more: bool = False
    live: bool = True
    logs_loaded: bool = False
    logs_error: str = ""
    alerts: list[str] = []
    filters_version: int = 0
    _filters_bot: int = 0
    _tail_started: float = 0.0

    @rx.var
    def shown_count(self) -> int:
        return len(self.rows)

    @rx.var
    def filtered(self) -> bool:
        return self.level != "ALL" or self.search != "" or self.first_day != "" or self.last_day != ""

    @rx.var
    def search_key(self) -> str:
        """Changes with the bot and with "Clear filters": the search box starts empty again."""
        return f"logs-search-{self.current_bot_id}-{self.filters_version}"

    @rx.var
    def zone_label(self) -> str:
        return self.zone or "browser time"

    @rx.var
    def page_label(self) -> str:
        first = self.page * PAGE_SIZE + 1
        if len(self.rows) == 1:  # never "Entries 1-1"
            return "1 entry" if self.page == 0 else f"Entry {first:,}"
        return f"Entries {first:,}-{first + len(self.rows) - 1:,}, newest first" if self.rows else ""

    def _query(self) -> LogQuery:
        return LogQuery(level=self.level, search=self.search, first_day=self.first_day, last_day=self.last_day,
                        zone=self.zone, page=self.page)

    def _reset_filters(self) -> None:
        self.level, self.search, self.first_day, self.last_day, self.page = "ALL", "", "", "", 0
        self.filters_version += 1

    async def _reload(self):
        try:
            self.rows, self.has_more = await asyncio.to_thread(
                load_logs, self.session_token, self.current_bot_id, self.level, self.search, PAGE_SIZE, self._query())
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.logs_error = user_message(exc)
            return None
        self.logs_error = ""
        self.logs_loaded = True
        return None

    @rx.event
    async def load(self):
        """On load: the newest entries; another bot than the last one starts without filters."""
        self.logs_loaded = False
        if self._filters_bot != self.current_bot_id:
            self._reset_filters()
            self._filters_bot = self.current_bot_id
        self.page = 0
        if not self.bot_ready:
            return None
        try:
            self.alerts = await asyncio.to_thread(budget_alerts, self.session_token, self.current_bot_id)
        except Exception as exc:
            logger.debug("Budget alerts unavailable: %s", type(exc).__name__)
            self.alerts = []
        if not self.zone:  # the entries are shown in the browser's time zone: ask it first (once a visit)
            return rx.call_script(ZONE_SCRIPT, callback=LogsState.set_zone)
        signed_out = await self._reload()
        return signed_out or rx.call_script(ZONE_SCRIPT, callback=LogsState.set_zone)

    @rx.event
    async def set_zone(self, zone: str):
        """The browser's time zone (IANA name): the entries' times, the date filter's days and the download's
        times are in it."""
        zone = str(zone or "")[:64] or "UTC"
        if zone == self.zone and self.logs_loaded:
            return None
        self.zone = zone
        return await self._reload()

    @rx.event
    async def set_level(self, level: str):
        self.level = level if level in LEVEL_CHOICES else "ALL"
        self.page = 0
        return await self._reload()

    @rx.event
    async def apply_search(self, form_data: dict[str, str]):
        self.search = (form_data.get("search") or "").strip()[: log_entries.MAX_SEARCH_CHARS]
        self.page = 0
        return await self._reload()

    @rx.event
    async def set_first_day(self, value: str):
        self.first_day, self.page = str(value or "")[:10], 0
        return await self._reload()

    @rx.event
    async def set_last_day(self, value: str):
        self.last_day, self.page = str(value or "")[:10], 0
        return await self._reload()

    @rx.event
    async def clear_filters(self):
        self._reset_filters()
        return await self._reload()

    @rx.event
    async def older(self):
        if self.has_more:
            self.page += 1
            return await self._reload()
        return None

    @rx.event
    async def newer(self):
        if self.page > 0:
            self.page -= 1
            return await self._reload()
        return None

    @rx.event
    async def download(self, fmt: str):
        """The filtered entries (all pages) as a CSV or JSON Lines file."""
        fmt = "jsonl" if fmt == "jsonl" else "csv"
        try:
            data, _count = await asyncio.to_thread(export_logs, self.session_token, self.current_bot_id,
                                                   self._query(), fmt)
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.logs_error = user_message(exc)
            return None
        mime = "text/csv" if fmt == "csv" else "application/x-ndjson"
        return rx.download(data=data, filename=f"bot-{self.current_bot_id}-logs.{fmt}", mime_type=mime)

    @rx.event
    def set_live(self, live: bool) -> None:
        self.live = bool(live)

    @rx.event(background=True)
    async def tail(self, _tick: str = ""):
        """Live tail: reload the first page on every timer tick while "Live" is on."""
        async with self:
            if not (self.live and self.logs_loaded and self.bot_ready and self.is_admin and self.page == 0):
                return
            now = time.monotonic()
            if self._tail_started and now - self._tail_started < TAIL_STALE_SECONDS:
                return
            self._tail_started = now
            query = self._query()
            args = (self.session_token, self.current_bot_id, self.level, self.search, PAGE_SIZE, query)
        try:
            rows, more = await asyncio.to_thread(load_logs, *args)
        except Exception as exc:
            logger.debug("Log tail failed: %s", type(exc).__name__)
            rows, more = None, False
        async with self:
            self._tail_started = 0.0
            if rows is not None and (self.current_bot_id, self._query()) == (args[1], query):
                if not self.rows or not rows or rows[0].id != self.rows[0].id:
                    self.rows, self.has_more = rows, more
