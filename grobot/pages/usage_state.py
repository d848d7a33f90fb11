"""The Usage page's state (admins): the usage of the chosen period, read from
``grobot.core.services.usage`` and ``usage_charts`` (each list limited there), and the prices of the
models (the admin's and the defaults; local models are free) with the currency of the estimated costs.
The page: :mod:`grobot.pages.usage`."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import reflex as rx

from grobot.components.formatting import count
from grobot.core.agents.roles import role_name
from grobot.core.errors import GroBotError
from grobot.core.services import costs, usage, usage_charts
from grobot.core.services.validation import capitalised, sentences
from grobot.core.wording import duration
from grobot.pages import usage_charts as charts
from grobot.state.admin_state import AdminState, Refused

logger = logging.getLogger(__name__)

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



MAX_SHOWN = 200
PRICE_FIELDS = ("provider", "model", "input", "output")


@dataclass
class PriceLine:
    """One model's price, as text ready to show."""

    provider: str
    model: str
    input: str
    output: str
    source: str
    admin: bool


def load_prices(session, _user) -> tuple[list[PriceLine], str]:
    prices = costs.list_prices(session=session)[:MAX_SHOWN]
    lines = [PriceLine(provider=p.provider, model=p.model, input=f"{p.input_per_million:g}",
                       output=f"{p.output_per_million:g}", source="set here" if p.source == "admin" else "default",
                       admin=p.source == "admin") for p in prices]
    return lines, costs.get_currency(session=session)


class PricesState(AdminState):
    """The prices and the currency."""

    prices: list[PriceLine] = []
    currency: str = costs.DEFAULT_CURRENCY
    form_key: int = 0  # bumped after a price is saved: the form starts empty again
    price_errors: dict[str, str] = {}  # by PRICE_FIELDS

    async def _reload(self) -> None:
        self.prices, self.currency = await self._admin(load_prices)

    @rx.event
    async def open(self):
        return await self._open()

    @rx.event
    async def save_price(self, form: dict[str, str]):
        """Set the price of the model typed in the form. A problem shows next to its field and what was
        typed stays; the form starts empty again only once the price is saved."""
        typed = {name: str(form.get(name, "")) for name in PRICE_FIELDS}
        problems = costs.price_problems(typed["provider"], typed["model"], typed["input"], typed["output"])
        self.price_errors = {name: capitalised(problem).rstrip(".") + "." for name, problem in problems.items()}
        if problems:
            return None
        try:
            price = await self._admin(lambda session, _user: costs.set_price(
                typed["provider"], typed["model"], typed["input"], typed["output"], session=session), readonly=False)
            await self._reload()
        except Refused as refused:
            return refused.event
        except GroBotError as exc:
            return rx.toast.error(sentences(str(exc)))
        self.form_key += 1
        return rx.toast.success(f"Price of {price.provider}/{price.model} saved")

    @rx.event
    async def delete_price(self, provider: str, model: str):
        """Remove the admin's price of a model (its default, if any, applies again)."""
        return await self._act(lambda session, _user: costs.delete_price(provider, model, session=session),
                               f"Price of {provider}/{model} removed")

    @rx.event
    async def save_currency(self, form: dict[str, str]):
        code = form.get("currency", "")
        before = self.currency
        result = await self._act(lambda session, _user: costs.set_currency(code, session=session),
                                 lambda saved: f"Costs are shown in {saved}")
        return [result, UsageState.open] if self.currency != before else result
