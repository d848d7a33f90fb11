"""The Usage page (admins): LLM calls, tokens, latency and estimated cost of the fleet over the
last 1, 7 or 30 days: charts per day, breakdowns per model, bot, Discord user and source, tables
per bot and agent role, the budget alerts, and the prices (everything aggregated in SQL by
``grobot.core.services.usage`` and ``usage_charts``, each list limited there)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import reflex as rx

from grobot.components.budget_alerts import budget_alert_banner
from grobot.components.empty_state import empty_state
from grobot.components.formatting import count
from grobot.components.layout import NARROW_ONLY, WIDE_CELL, page_layout
from grobot.components.stat_card import stat_card
from grobot.core.agents.roles import role_name
from grobot.core.services import costs, usage, usage_charts
from grobot.core.wording import duration
from grobot.pages import usage_charts as charts
from grobot.pages.usage_prices import PricesState, prices_card
from grobot.state.admin_state import AdminState

logger = logging.getLogger(__name__)

ROUTE = "/usage"
TITLE = "Usage · GroBot"
PERIODS = {"1": "24 hours", "7": "7 days", "30": "30 days"}
LABEL_CHARS = 20  # a chart's category label (a model, a bot, a user) beside its bar


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
    cost: str = "—"


@dataclass
class Totals:
    calls: str = "0"
    tokens: str = "0"
    errors: str = "0"
    latency: str = "—"
    cost: str = "—"


@dataclass
class UsageView:
    """Everything the page shows for one period."""

    by_bot: list[UsageLine]
    by_role: list[UsageLine]
    totals: Totals
    daily: list[dict[str, Any]] = field(default_factory=list)
    models: list[dict[str, Any]] = field(default_factory=list)
    bots: list[dict[str, Any]] = field(default_factory=list)
    users: list[dict[str, Any]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)
    months: list[dict[str, Any]] = field(default_factory=list)
    currency: str = costs.DEFAULT_CURRENCY


def _line(name: str, row: usage.UsageRow | usage.RoleUsageRow, currency: str) -> UsageLine:
    rate = f"{100 * row.errors / row.calls:.1f} %" if row.calls else "—"
    return UsageLine(
        name=name,
        calls=count(row.calls),
        tokens_in=count(row.tokens_in),
        tokens_out=count(row.tokens_out),
        errors=row.errors,
        error_rate=rate,
        latency=duration(row.avg_latency_ms / 1000),
        cost=costs.money(row.cost, currency) if row.priced_calls else "—",
    )


def _item(point: usage_charts.Point, currency: str) -> dict[str, Any]:
    """A breakdown line: numbers for the chart, text for the table."""
    return {"name": point.label, "short": short_label(point.label), "calls": point.calls,
            "tokens": count(point.tokens), "latency": duration(point.avg_latency_ms / 1000),
            "cost": costs.money(point.cost, currency) if point.priced_calls else "—"}


def short_label(name: str, limit: int = LABEL_CHARS) -> str:
    """A chart's category label that fits beside its bar (the tables below give it whole)."""
    return name if len(name) <= limit else name[: limit - 1].rstrip() + "…"


def month_label(month: str) -> str:
    """``2026-11`` -> ``November 2026``."""
    try:
        return datetime.strptime(month, "%Y-%m").strftime("%B %Y")
    except ValueError:
        return month


def day_label(day: str) -> str:
    """``2026-11-21`` -> ``Nov 21`` (a chart's day)."""
    try:
        return datetime.strptime(day, "%Y-%m-%d").strftime("%b %-d")
    except ValueError:
        return day


def _alert_lines(rows: list[usage.BotDayUsage], currency: str) -> list[str]:
    lines = []
    for row in rows:
        for alert in row.alerts:
            amounts = (f"{costs.money(alert['used'], currency)} of {costs.money(alert['limit'], currency)}"
                       if "cost" in alert["budget"] else f"{alert['used']:,.0f} of {alert['limit']:,.0f}")
            verb = "reached: no LLM calls until it resets" if alert["reached"] else "used"
            lines.append(f"{row.bot_name}: {alert['percent']:.0f} % of the {alert['label']} budget {verb} ({amounts})")
    return lines[:20]


def load_usage(days: int):
    """Blocking work: the charts, breakdowns and tables of the period, the totals and the budget alerts."""

    def work(session, _user) -> UsageView:
        currency = costs.get_currency(session=session)
        by_bot = usage.usage_by_bot(session=session, days=days)
        by_role = usage.usage_by_role(session=session, days=days)
        calls = sum(r.calls for r in by_role)
        latency = sum(r.avg_latency_ms * r.calls for r in by_role) / calls if calls else 0.0
        totals = Totals(
            calls=count(calls),
            tokens=count(sum(r.tokens_in + r.tokens_out for r in by_role)),
            errors=count(sum(r.errors for r in by_role)),
            latency=duration(latency / 1000) if calls else "—",
            cost=costs.money(sum(r.cost for r in by_role), currency) if any(r.priced_calls for r in by_role) else "—",
        )
        daily = [{"day": day_label(p.key), "calls": p.calls, "tokens_in": p.tokens_in, "tokens_out": p.tokens_out,
                  "latency": round(p.avg_latency_ms / 1000, 2) if p.calls else None, "cost": round(p.cost, 6)}
                 for p in usage_charts.every_day(usage_charts.by_day(session=session, days=days), days=days)]
        fills = charts.SOURCE_COLORS
        return UsageView(
            by_bot=[_line(r.bot_name, r, currency) for r in by_bot],
            by_role=[_line(role_name(r.agent_role), r, currency) for r in by_role],
            totals=totals,
            daily=daily,
            models=[_item(p, currency) for p in usage_charts.by_model(session=session, days=days, limit=10)],
            bots=[_item(p, currency) for p in usage_charts.by_bot(session=session, days=days, limit=10)],
            users=[_item(p, currency) for p in usage_charts.by_user(session=session, days=days, limit=10)],
            sources=[{**_item(p, currency), "fill": fills.get(p.key, "var(--gray-9)")}
                     for p in usage_charts.by_source(session=session, days=days)],
            alerts=_alert_lines(usage.fleet_usage(session=session, limit=500), currency),
            months=[{"name": month_label(m.month), "calls": count(m.calls), "tokens": count(m.tokens), "latency": "",
                     "cost": costs.money(m.cost, currency)} for m in usage_charts.by_month(session=session, months=6)],
            currency=currency,
        )

    return work


class UsageState(AdminState):
    """The charts and tables of the chosen period."""

    period: str = "7"
    by_bot: list[UsageLine] = []
    by_role: list[UsageLine] = []
    totals: Totals = Totals()
    daily: list[dict[str, Any]] = []
    models: list[dict[str, Any]] = []
    bot_items: list[dict[str, Any]] = []
    users: list[dict[str, Any]] = []
    sources: list[dict[str, Any]] = []
    alerts: list[str] = []
    months: list[dict[str, Any]] = []
    currency: str = costs.DEFAULT_CURRENCY
    loaded: bool = False

    @rx.var
    def period_label(self) -> str:
        return PERIODS.get(self.period, "7 days")

    async def _reload(self) -> None:
        view: UsageView = await self._admin(load_usage(int(self.period)))
        self.by_bot, self.by_role, self.totals = view.by_bot, view.by_role, view.totals
        self.daily, self.models, self.bot_items, self.users = view.daily, view.models, view.bots, view.users
        self.sources, self.alerts, self.currency, self.months = view.sources, view.alerts, view.currency, view.months
        self.loaded = True

    @rx.event
    async def open(self):
        """On load and on "Refresh": read the usage of the chosen period, then the prices."""
        refused = await self._open()
        return refused or PricesState.open

    @rx.event
    async def set_period(self, value: str | list[str]):
        """Show another period (1, 7 or 30 days)."""
        value = value[0] if isinstance(value, list) else value
        if value in PERIODS:
            self.period = value
            return await self._open()
        return None


def usage_row(line: UsageLine) -> rx.Component:
    """One bot's or agent role's usage; a narrow screen shows its tokens in and out under its name, in
    place of their columns, so the row (mean latency and cost too) fits the screen."""
    return rx.table.row(
        rx.table.row_header_cell(rx.vstack(
            rx.text(line.name, weight="medium", word_break="break-word"),
            rx.text(line.tokens_in, " in · ", line.tokens_out, " out tokens", size="1", color=rx.color("gray", 11),
                    display=NARROW_ONLY, data_testid="usage-tokens"),
            spacing="1",
        )),
        rx.table.cell(line.calls, text_align="right"),
        rx.table.cell(line.tokens_in, text_align="right", display=WIDE_CELL),
        rx.table.cell(line.tokens_out, text_align="right", display=WIDE_CELL),
        rx.table.cell(
            rx.cond(
                line.errors > 0,
                rx.text(line.errors, " (", line.error_rate, ")", color=rx.color("red", 11)),
                rx.text("0", color=rx.color("gray", 11)),
            ),
            text_align="right",
        ),
        rx.table.cell(line.latency, text_align="right"),
        rx.table.cell(line.cost, text_align="right"),
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
                rx.table.column_header_cell("Tokens in", display=WIDE_CELL, **right),
                rx.table.column_header_cell("Tokens out", display=WIDE_CELL, **right),
                rx.table.column_header_cell("Errors", **right),
                rx.table.column_header_cell("Mean latency", **right),
                rx.table.column_header_cell("Est. cost", **right),
            )
        ),
        rx.table.body(rx.foreach(lines, usage_row)),
        variant="surface",
        size=rx.breakpoints(initial="1", md="2"),
        width="100%",
        data_testid=testid,
    )


def alerts_banner() -> rx.Component:
    return budget_alert_banner(UsageState.alerts, title="Budget alerts", testid="budget-alerts")


def grid(*children: rx.Component) -> rx.Component:
    return rx.grid(*children, columns=rx.breakpoints(initial="1", md="2"), gap="1rem", width="100%")


def usage_content() -> rx.Component:
    return rx.vstack(
        rx.flex(
            stat_card("LLM calls", UsageState.totals.calls, "activity", "accent"),
            stat_card("Tokens", UsageState.totals.tokens, "coins", "amber"),
            stat_card("Errors", UsageState.totals.errors, "triangle-alert", "red"),
            stat_card("Mean latency", UsageState.totals.latency, "timer", "green"),
            stat_card("Estimated cost", UsageState.totals.cost, "wallet", "grass"),
            gap="1rem",
            wrap="wrap",
            width="100%",
        ),
        rx.heading("Over time", size="4", as_="h2", margin_top="0.5rem"),
        grid(charts.calls_chart(UsageState.daily), charts.tokens_chart(UsageState.daily),
             charts.latency_chart(UsageState.daily), charts.cost_chart(UsageState.daily, UsageState.currency)),
        rx.heading("Breakdowns", size="4", as_="h2", margin_top="0.5rem"),
        grid(charts.breakdown_chart("LLM calls per model", UsageState.models, "chart-models"),
             charts.source_chart(UsageState.sources),
             charts.breakdown_chart("LLM calls per bot", UsageState.bot_items, "chart-bots"),
             charts.breakdown_chart("LLM calls per Discord user", UsageState.users, "chart-users",
                                    empty_text="No Discord user's message was answered in this period "
                                               "(Test Chat and command-line runs are not counted here).")),
        rx.heading("Per month (UTC)", size="4", as_="h2", margin_top="0.5rem"),
        charts.month_table(UsageState.months),
        rx.heading("Per model", size="4", as_="h2", margin_top="0.5rem"),
        charts.breakdown_table("Model", UsageState.models, "usage-by-model"),
        rx.heading("Per Discord user", size="4", as_="h2", margin_top="0.5rem"),
        rx.cond(UsageState.users.length() > 0,
                charts.breakdown_table("Discord user", UsageState.users, "usage-by-user"),
                rx.text("No Discord messages answered in this period.", size="2", color=rx.color("gray", 11))),
        rx.heading("Per bot", size="4", as_="h2", margin_top="0.5rem"),
        rx.box(usage_table("Bot", UsageState.by_bot, "usage-by-bot"), overflow_x="auto", width="100%"),
        rx.heading("Per agent role", size="4", as_="h2", margin_top="0.5rem"),
        rx.box(usage_table("Agent role", UsageState.by_role, "usage-by-role"), overflow_x="auto", width="100%"),
        spacing="4",
        width="100%",
    )


def usage_page() -> rx.Component:
    """The Usage page."""
    return page_layout(
        rx.vstack(
            alerts_banner(),
            rx.cond(
                UsageState.loaded,
                rx.cond(
                    UsageState.by_bot.length() > 0,
                    usage_content(),
                    empty_state(
                        "chart-no-axes-column",
                        "No LLM calls in the last " + UsageState.period_label,
                        "Every LLM call a bot makes (on Discord or in Test Chat) is counted here. "
                        "Chat with a bot, or choose a longer period.",
                    ),
                ),
                rx.center(rx.spinner(size="3"), padding="3rem", width="100%"),
            ),
            prices_card(),
            spacing="4",
            width="100%",
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
            rx.icon_button(rx.icon("refresh-cw", size=16), variant="soft", color_scheme="gray", on_click=UsageState.open,
                           aria_label="Refresh", title="Refresh"),
            spacing="3",
            align="center",
        ),
    )
