"""The Logs tab (admins): the bot's log entries, newest first, filtered by level and text,
with a live tail and "load more" (every query is limited in SQL)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import reflex as rx
from sqlmodel import Session

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import LOGS
from grobot.components.empty_state import empty_state
from grobot.components.formatting import counted
from grobot.components.forms import switch_label
from grobot.components.safe_text import safe_text
from grobot.core.models import AppUser, Bot
from grobot.core.services import log_entries
from grobot.core.services.users import NotSignedIn
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

logger = logging.getLogger(__name__)

PAGE_SIZE = 100
MAX_SHOWN = 1000
TAIL_MS = 3000
TAIL_STALE_SECONDS = 30.0
LEVEL_CHOICES = ["ALL", "DEBUG", "INFO", "WARNING", "ERROR"]
LEVEL_COLORS = {"DEBUG": "gray", "INFO": "blue", "WARNING": "amber", "ERROR": "red", "CRITICAL": "crimson"}


@dataclass
class LogRow:
    """One log entry as the table shows it."""

    id: int
    time: str
    level: str
    logger: str
    message: str


def load_logs(token: str, bot_id: int, level: str, search: str, limit: int) -> tuple[list[LogRow], bool]:
    """The newest ``limit`` matching entries and whether there are more (blocking; admins only)."""

    def work(session: Session, _user: AppUser, bot: Bot) -> tuple[list[LogRow], bool]:
        lines = log_entries.recent_logs(session=session, bot_id=bot.id or 0, min_level=level, search=search,
                                        limit=limit + 1)
        rows = [LogRow(id=line.id, time=line.created_at.strftime("%Y-%m-%d %H:%M:%S"), level=line.level,
                       logger=line.logger, message=line.message) for line in lines[:limit]]
        return rows, len(lines) > limit

    return run_for_bot(token, bot_id, work, admin=True)


class LogsState(BotPageState):
    """The log view of the open bot."""

    rows: list[LogRow] = []
    level: str = "ALL"
    search: str = ""
    limit: int = PAGE_SIZE
    has_more: bool = False
    live: bool = True
    logs_loaded: bool = False
    logs_error: str = ""
    _tail_started: float = 0.0

    @rx.var
    def shown_count(self) -> int:
        return len(self.rows)

    @rx.var
    def filtered(self) -> bool:
        return self.level != "ALL" or self.search != ""

    async def _reload(self):
        try:
            self.rows, self.has_more = await asyncio.to_thread(
                load_logs, self.session_token, self.current_bot_id, self.level, self.search, self.limit)
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
        """On load: the newest entries with the current filter."""
        self.logs_loaded = False
        self.limit = PAGE_SIZE
        if not self.bot_ready:
            return None
        return await self._reload()

    @rx.event
    async def set_level(self, level: str):
        self.level = level if level in LEVEL_CHOICES else "ALL"
        self.limit = PAGE_SIZE
        return await self._reload()

    @rx.event
    async def apply_search(self, form_data: dict[str, str]):
        self.search = (form_data.get("search") or "").strip()[: log_entries.MAX_SEARCH_CHARS]
        self.limit = PAGE_SIZE
        return await self._reload()

    @rx.event
    async def clear_filters(self):
        self.level, self.search, self.limit = "ALL", "", PAGE_SIZE
        return await self._reload()

    @rx.event
    async def load_more(self):
        self.limit = min(self.limit + PAGE_SIZE, MAX_SHOWN)
        return await self._reload()

    @rx.event
    def set_live(self, live: bool) -> None:
        self.live = bool(live)

    @rx.event(background=True)
    async def tail(self, _tick: str = ""):
        """Live tail: reload the newest entries on every timer tick while "Live" is on."""
        async with self:
            if not (self.live and self.logs_loaded and self.bot_ready and self.is_admin):
                return
            now = time.monotonic()
            if self._tail_started and now - self._tail_started < TAIL_STALE_SECONDS:
                return
            self._tail_started = now
            args = (self.session_token, self.current_bot_id, self.level, self.search, self.limit)
        try:
            rows, more = await asyncio.to_thread(load_logs, *args)
        except Exception as exc:
            logger.debug("Log tail failed: %s", type(exc).__name__)
            rows, more = None, False
        async with self:
            self._tail_started = 0.0
            if rows is not None and args[1:] == (self.current_bot_id, self.level, self.search, self.limit):
                if not self.rows or not rows or rows[0].id != self.rows[0].id:
                    self.rows, self.has_more = rows, more


# --------------------------------------------------------------------------- components


def level_badge(level: rx.Var[str]) -> rx.Component:
    color = rx.match(level, *[(name, col) for name, col in LEVEL_COLORS.items()], "gray")
    return rx.badge(level, color_scheme=color, variant="soft", size="1", min_width="4.5rem", justify_content="center")


def log_row(row: LogRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(row.time, size="1", color=rx.color("gray", 11), white_space="nowrap",
                              font_family="var(--code-font-family)")),
        rx.table.cell(level_badge(row.level)),
        rx.table.cell(rx.text(row.logger, size="1", color=rx.color("gray", 11), truncate=True, max_width="14rem",
                              title=row.logger)),
        rx.table.cell(safe_text(row.message, size="2", white_space="pre-wrap", word_break="break-word",
                              font_family="var(--code-font-family)")),
        data_level=row.level,
    )


def toolbar() -> rx.Component:
    return rx.flex(
        rx.hstack(
            rx.text("Level", size="2", color=rx.color("gray", 11)),
            rx.select.root(
                rx.select.trigger(aria_label="Level"),
                rx.select.content(*[rx.select.item(choice, value=choice) for choice in LEVEL_CHOICES]),
                value=LogsState.level,
                on_change=LogsState.set_level,
            ),
            align="center",
            spacing="2",
        ),
        rx.form(
            rx.hstack(
                rx.input(rx.input.slot(rx.icon("search", size=14)), name="search", placeholder="Search messages…",
                         default_value=LogsState.search, aria_label="Search", width="18rem"),
                rx.button("Search", type="submit", variant="soft"),
                spacing="2",
            ),
            on_submit=LogsState.apply_search,
            width="auto",
        ),
        rx.cond(LogsState.filtered, rx.button("Clear filters", variant="ghost", color_scheme="gray",
                                              on_click=LogsState.clear_filters)),
        rx.spacer(),
        switch_label(
            rx.moment(interval=TAIL_MS, format="HH:mm:ss", on_change=LogsState.tail, display="none"),
            rx.switch(checked=LogsState.live, on_change=LogsState.set_live, aria_label="Live tail"),
            rx.text("Live", size="2", color=rx.color("gray", 11)),
        ),
        gap="0.75rem",
        align="center",
        wrap="wrap",
        width="100%",
    )


def logs_table() -> rx.Component:
    return rx.vstack(
        rx.table.root(
            rx.table.header(rx.table.row(
                rx.table.column_header_cell("Time", width="11rem"),
                rx.table.column_header_cell("Level", width="6rem"),
                rx.table.column_header_cell("Logger", width="14rem"),
                rx.table.column_header_cell("Message"),
            )),
            rx.table.body(rx.foreach(LogsState.rows, log_row)),
            variant="surface",
            size="1",
            width="100%",
        ),
        rx.hstack(
            rx.text(counted(LogsState.shown_count, "entry", "entries") + " shown, newest first", size="1", color=rx.color("gray", 10)),
            rx.cond(LogsState.has_more & (LogsState.limit < MAX_SHOWN),
                    rx.button("Load older entries", variant="soft", size="1", on_click=LogsState.load_more)),
            justify="between",
            align="center",
            width="100%",
        ),
        spacing="3",
        width="100%",
    )


def no_logs() -> rx.Component:
    return rx.cond(
        LogsState.filtered,
        empty_state("search-x", "No entries match", "Try another level or search text, or clear the filters."),
        empty_state("scroll-text", "No log entries yet",
                    "The bot writes its log here once the bot worker runs it. Enable the bot and start the worker "
                    "(python -m grobot worker)."),
    )


def logs_tab() -> rx.Component:
    return rx.vstack(
        toolbar(),
        rx.cond(LogsState.logs_error != "",
                rx.callout(LogsState.logs_error, icon="triangle-alert", color_scheme="red", width="100%")),
        rx.cond(
            LogsState.logs_loaded,
            rx.cond(LogsState.shown_count > 0, logs_table(), no_logs()),
            rx.cond(LogsState.logs_error == "", rx.center(rx.spinner(size="3"), height="8rem", width="100%")),
        ),
        spacing="4",
        width="100%",
    )


def logs_page() -> rx.Component:
    return bot_page(LOGS, logs_tab())
