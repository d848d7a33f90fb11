"""The Logs tab (admins): the bot's log entries, newest first, filtered by level, text and dates
(whole days in the browser's time zone), a page at a time, with a live tail on the first page
and a download of the filtered entries (every query is limited in SQL)."""

from __future__ import annotations

import reflex as rx

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import LOGS
from grobot.components.budget_alerts import budget_alert_banner
from grobot.components.empty_state import empty_state
from grobot.components.forms import switch_label
from grobot.components.layout import NARROW_ONLY, WIDE_CELL, narrow_only, wide_only
from grobot.components.safe_text import safe_text
from grobot.components.technical_details import technical_details
from grobot.pages.bot_logs_state import LEVEL_CHOICES, LogRow, LogsState

TAIL_MS = 3000
LEVEL_COLORS = {"DEBUG": "gray", "INFO": "blue", "WARNING": "amber", "ERROR": "red", "CRITICAL": "crimson"}


# --------------------------------------------------------------------------- components


def level_badge(level: rx.Var[str]) -> rx.Component:
    color = rx.match(level, *[(name, col) for name, col in LEVEL_COLORS.items()], "gray")
    return rx.badge(level, color_scheme=color, variant="soft", size="1", min_width="4.5rem", justify_content="center")


def log_time(row: LogRow, *, offset: bool) -> rx.Component:
    """The entry's time in the browser's zone (formatted by the server: no date library per row)."""
    return rx.text(row.shown, *([" ", row.offset] if offset else []), title=row.time, size="1",
                   color=rx.color("gray", 11), white_space="nowrap", font_family="var(--code-font-family)")


def log_row(row: LogRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(log_time(row, offset=True), data_testid="log-time", display=WIDE_CELL),
        rx.table.cell(level_badge(row.level), display=WIDE_CELL),
        rx.table.cell(rx.text(row.source, size="1", color=rx.color("gray", 11), white_space="nowrap",
                              title=row.logger, data_testid="log-source"), display=WIDE_CELL),
        rx.table.cell(
            rx.hstack(level_badge(row.level), log_time(row, offset=False), display=NARROW_ONLY,
                      spacing="2", align="center", margin_bottom="0.25rem",
                      data_testid="log-when"),  # narrow screens: above the message, not in columns beside it
            safe_text(row.message, size="2", white_space="pre-wrap", word_break="break-word"),
            technical_details(row.detail),
        ),
        data_level=row.level,
    )


def date_input(label: str, value: rx.Var, on_change: rx.EventHandler) -> rx.Component:
    return rx.hstack(
        rx.text(label, size="2", color=rx.color("gray", 11)),
        rx.input(type="date", value=value, on_change=on_change, aria_label=label + " date", width="9.5rem"),
        align="center",
        spacing="2",
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
                         default_value=LogsState.search, aria_label="Search", width="16rem",
                         key=LogsState.search_key),
                rx.button("Search", type="submit", variant="soft"),
                spacing="2",
            ),
            on_submit=LogsState.apply_search,
            width="auto",
        ),
        date_input("From", LogsState.first_day, LogsState.set_first_day),
        date_input("To", LogsState.last_day, LogsState.set_last_day),
        rx.cond(LogsState.filtered, rx.button("Clear filters", variant="ghost", color_scheme="gray",
                                              on_click=LogsState.clear_filters)),
        rx.spacer(),
        rx.menu.root(
            rx.menu.trigger(rx.button(rx.icon("download", size=14), "Download", variant="soft", color_scheme="gray")),
            rx.menu.content(
                rx.menu.item("CSV", on_click=LogsState.download("csv")),
                rx.menu.item("JSON Lines", on_click=LogsState.download("jsonl")),
            ),
        ),
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


def pager() -> rx.Component:
    return rx.hstack(
        rx.text(LogsState.page_label, size="1", color=rx.color("gray", 11), data_testid="logs-page"),
        rx.hstack(
            rx.button(rx.icon("chevron-left", size=14), "Newer", variant="soft", size="1",
                      disabled=LogsState.page == 0, on_click=LogsState.newer),
            rx.button("Older", rx.icon("chevron-right", size=14), variant="soft", size="1",
                      disabled=~LogsState.has_more, on_click=LogsState.older),
            spacing="2",
        ),
        justify="between",
        align="center",
        width="100%",
    )


def logs_table() -> rx.Component:
    return rx.vstack(
        rx.box(
            rx.table.root(
                rx.table.header(rx.table.row(
                    rx.table.column_header_cell("Time (" + LogsState.zone_label + ")", width="13rem",
                                                display=WIDE_CELL),
                    rx.table.column_header_cell("Level", width="6rem", display=WIDE_CELL),
                    rx.table.column_header_cell("Source", width="7rem", display=WIDE_CELL),
                    rx.table.column_header_cell(
                        rx.el.span("Time (" + LogsState.zone_label + ") and message", display=narrow_only("inline")),
                        rx.el.span("Message", display=wide_only("inline")),
                    ),
                )),
                rx.table.body(rx.foreach(LogsState.rows, log_row)),
                variant="surface",
                size="1",
                width="100%",
            ),
            overflow_x="auto",
            width="100%",
        ),
        pager(),
        spacing="3",
        width="100%",
    )


def no_logs() -> rx.Component:
    return rx.cond(
        LogsState.filtered,
        empty_state("search-x", "No entries match", "Try another level, search text or dates, or clear the filters."),
        empty_state("scroll-text", "No log entries yet",
                    "The bot writes its log here once the bot worker runs it. Enable the bot and start the worker "
                    "(python -m grobot worker)."),
    )


def alerts_banner() -> rx.Component:
    return budget_alert_banner(LogsState.alerts, title="Budget alert", testid="budget-alert")


def logs_tab() -> rx.Component:
    return rx.vstack(
        alerts_banner(),
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
