"""The Usage page (admins): LLM calls, tokens, errors and latency per bot and per agent role,
over the last 1, 7 or 30 days (aggregated in SQL by ``grobot.core.services.usage``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import reflex as rx

from grobot.components.empty_state import empty_state
from grobot.components.formatting import count
from grobot.components.layout import page_layout
from grobot.components.stat_card import stat_card
from grobot.core.services import usage
from grobot.state.admin_state import AdminState

logger = logging.getLogger(__name__)

ROUTE = "/usage"
TITLE = "Usage · GroBot"
PERIODS = {"1": "24 hours", "7": "7 days", "30": "30 days"}


@dataclass
class UsageLine:
    """One line of a usage table, as text ready to show."""

    name: str
    calls: str
    tokens_in: str
    tokens_out: str
    errors: int
    error_rate: str
    latency: str


@dataclass
class Totals:
    calls: str = "0"
    tokens: str = "0"
    errors: str = "0"
    latency: str = "—"


def _line(name: str, row: usage.UsageRow | usage.RoleUsageRow) -> UsageLine:
    rate = f"{100 * row.errors / row.calls:.1f} %" if row.calls else "—"
    return UsageLine(
        name=name,
        calls=count(row.calls),
        tokens_in=count(row.tokens_in),
        tokens_out=count(row.tokens_out),
        errors=row.errors,
        error_rate=rate,
        latency=f"{row.avg_latency_ms:,.0f} ms",
    )


def load_usage(days: int):
    """Blocking work: the lines per bot and per role, and the fleet totals."""

    def work(session, _user) -> tuple[list[UsageLine], list[UsageLine], Totals]:
        by_bot = usage.usage_by_bot(session=session, days=days)
        by_role = usage.usage_by_role(session=session, days=days)
        calls = sum(r.calls for r in by_role)
        latency = sum(r.avg_latency_ms * r.calls for r in by_role) / calls if calls else 0.0
        totals = Totals(
            calls=count(calls),
            tokens=count(sum(r.tokens_in + r.tokens_out for r in by_role)),
            errors=count(sum(r.errors for r in by_role)),
            latency=f"{latency:,.0f} ms" if calls else "—",
        )
        return (
            [_line(r.bot_name, r) for r in by_bot],
            [_line(r.agent_role or "(none)", r) for r in by_role],
            totals,
        )

    return work


class UsageState(AdminState):
    """The usage tables of the chosen period."""

    period: str = "7"
    by_bot: list[UsageLine] = []
    by_role: list[UsageLine] = []
    totals: Totals = Totals()
    loaded: bool = False

    @rx.var
    def period_label(self) -> str:
        return PERIODS.get(self.period, "7 days")

    async def _reload(self) -> None:
        self.by_bot, self.by_role, self.totals = await self._admin(load_usage(int(self.period)))
        self.loaded = True

    @rx.event
    async def open(self):
        """On load and on "Refresh": read the usage of the chosen period."""
        return await self._open()

    @rx.event
    async def set_period(self, value: str | list[str]):
        """Show another period (1, 7 or 30 days)."""
        value = value[0] if isinstance(value, list) else value
        if value in PERIODS:
            self.period = value
            return await self._open()
        return None




def usage_row(line: UsageLine) -> rx.Component:
    return rx.table.row(
        rx.table.row_header_cell(rx.text(line.name, weight="medium")),
        rx.table.cell(line.calls, text_align="right"),
        rx.table.cell(line.tokens_in, text_align="right"),
        rx.table.cell(line.tokens_out, text_align="right"),
        rx.table.cell(
            rx.cond(
                line.errors > 0,
                rx.text(line.errors, " (", line.error_rate, ")", color=rx.color("red", 11)),
                rx.text("0", color=rx.color("gray", 10)),
            ),
            text_align="right",
        ),
        rx.table.cell(line.latency, text_align="right"),
        align="center",
        data_usage_name=line.name,
    )


def usage_table(first: str, lines: rx.Var, testid: str) -> rx.Component:
    right = {"text_align": "right"}
    return rx.table.root(
        rx.table.header(
            rx.table.row(
                rx.table.column_header_cell(first, width="28%"),
                rx.table.column_header_cell("LLM calls", **right),
                rx.table.column_header_cell("Tokens in", **right),
                rx.table.column_header_cell("Tokens out", **right),
                rx.table.column_header_cell("Errors", **right),
                rx.table.column_header_cell("Mean latency", **right),
            )
        ),
        rx.table.body(rx.foreach(lines, usage_row)),
        variant="surface",
        size="2",
        width="100%",
        data_testid=testid,
    )


def usage_page() -> rx.Component:
    """The Usage page."""
    return page_layout(
        rx.cond(
            UsageState.loaded,
            rx.cond(
                UsageState.by_bot.length() > 0,
                rx.vstack(
                    rx.flex(
                        stat_card("LLM calls", UsageState.totals.calls, "activity", "accent"),
                        stat_card("Tokens", UsageState.totals.tokens, "coins", "amber"),
                        stat_card("Errors", UsageState.totals.errors, "triangle-alert", "red"),
                        stat_card("Mean latency", UsageState.totals.latency, "timer", "green"),
                        gap="1rem",
                        wrap="wrap",
                        width="100%",
                    ),
                    rx.heading("Per bot", size="4", as_="h2", margin_top="0.5rem"),
                    usage_table("Bot", UsageState.by_bot, "usage-by-bot"),
                    rx.heading("Per agent role", size="4", as_="h2", margin_top="0.5rem"),
                    usage_table("Agent role", UsageState.by_role, "usage-by-role"),
                    spacing="4",
                    width="100%",
                ),
                empty_state(
                    "chart-no-axes-column",
                    "No LLM calls in the last " + UsageState.period_label,
                    "Every LLM call a bot makes (on Discord or in Test Chat) is counted here. "
                    "Chat with a bot, or choose a longer period.",
                ),
            ),
            rx.center(rx.spinner(size="3"), padding="3rem", width="100%"),
        ),
        active="usage",
        title="Usage",
        subtitle="LLM calls of the fleet over the last " + UsageState.period_label,
        actions=rx.hstack(
            rx.segmented_control.root(
                rx.segmented_control.item("24 h", value="1"),
                rx.segmented_control.item("7 days", value="7"),
                rx.segmented_control.item("30 days", value="30"),
                value=UsageState.period,
                on_change=UsageState.set_period,
                aria_label="Period",
            ),
            rx.icon_button(rx.icon("refresh-cw", size=16), variant="soft", color_scheme="gray", on_click=UsageState.open, aria_label="Refresh", title="Refresh"),
            spacing="3",
            align="center",
        ),
    )
