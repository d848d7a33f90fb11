"""LLM usage per bot, aggregated in SQL: history from ``llm_call``, today vs limits from ``usage_daily``."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from sqlalchemy import case, func
from sqlmodel import Session, col, select

from grobot.core.errors import NotFoundError
from grobot.core.limits import LimitState
from grobot.core.limits import check as limit_hit
from grobot.core.models import Bot, LLMCall, UsageDaily, UserUsageDaily, utcnow
from grobot.core.services import app_settings
from grobot.core.services.budgets import alerts_of
from grobot.core.services.usage_accounting import utc_day

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class UsageRow:
    bot_id: int | None
    bot_name: str
    calls: int
    tokens_in: int
    tokens_out: int
    errors: int
    avg_latency_ms: float
    cost: float = 0.0  # estimated, in the admin's currency (calls without a known price count 0)
    priced_calls: int = 0  # calls with a known price

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "cost": round(self.cost, 6)}


def call_totals() -> tuple[Any, ...]:
    """Calls, tokens in, tokens out, errors, mean latency and cost of a group of ``llm_call`` rows."""
    return (
        func.count(LLMCall.id),
        func.coalesce(func.sum(LLMCall.tokens_in), 0),
        func.coalesce(func.sum(LLMCall.tokens_out), 0),
        func.coalesce(func.sum(case((LLMCall.error != "", 1), else_=0)), 0),
        func.coalesce(func.avg(LLMCall.latency_ms), 0.0),
        func.coalesce(func.sum(LLMCall.cost), 0.0),
        func.count(LLMCall.cost),
    )


def totals_of(row: Any) -> dict[str, Any]:
    """The fields of :func:`call_totals` from the last seven columns of ``row``."""
    calls, tokens_in, tokens_out, errors, latency, cost, priced = row[-7:]
    return {"calls": int(calls), "tokens_in": int(tokens_in), "tokens_out": int(tokens_out), "errors": int(errors),
            "avg_latency_ms": round(float(latency), 1), "cost": float(cost), "priced_calls": int(priced)}


def usage_by_bot(*, session: Session, days: int = 7) -> list[UsageRow]:
    """Calls, tokens, errors and mean latency per bot over the last ``days`` days."""
    since = utcnow() - timedelta(days=days)
    stmt = (
        select(LLMCall.bot_id, func.coalesce(Bot.name, "(deleted or none)"), *call_totals())
        .join(Bot, Bot.id == LLMCall.bot_id, isouter=True)
        .where(LLMCall.created_at >= since)
        .group_by(LLMCall.bot_id, Bot.name)
        .order_by(func.count(LLMCall.id).desc())
        .limit(500)
    )
    return [UsageRow(bot_id=r[0], bot_name=r[1], **totals_of(r)) for r in session.exec(stmt).all()]


@dataclass(frozen=True)
class RoleUsageRow:
    agent_role: str
    calls: int
    tokens_in: int
    tokens_out: int
    errors: int
    avg_latency_ms: float
    cost: float = 0.0
    priced_calls: int = 0


def usage_by_role(*, session: Session, days: int = 7) -> list[RoleUsageRow]:
    """Calls, tokens, errors and mean latency per agent role (whole fleet) over the last ``days`` days."""
    since = utcnow() - timedelta(days=days)
    stmt = (
        select(LLMCall.agent_role, *call_totals())
        .where(LLMCall.created_at >= since)
        .group_by(LLMCall.agent_role)
        .order_by(func.count(LLMCall.id).desc())
        .limit(100)
    )
    return [RoleUsageRow(agent_role=r[0], **totals_of(r)) for r in session.exec(stmt).all()]


# --------------------------------------------------------------------------- usage vs limits


@dataclass(frozen=True)
class BotDayUsage:
    """One bot's usage on one UTC day, with its effective daily limits (0: unlimited)."""

    bot_id: int
    bot_name: str
    day: str
    calls: int
    tokens_in: int
    tokens_out: int
    errors: int
    token_limit: int
    call_limit: int
    user_message_limit: int
    users_at_limit: int = 0
    cost: float = 0.0
    # This UTC month and the bot's budgets beside the daily limits (0: none); only today's row has them.
    month: str = ""
    month_calls: int = 0
    month_tokens: int = 0
    month_cost: float = 0.0
    cost_limit: float = 0.0
    month_token_limit: int = 0
    month_call_limit: int = 0
    month_cost_limit: float = 0.0

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def limit_state(self) -> LimitState:
        return LimitState(bot_id=self.bot_id, bot_name=self.bot_name, day=self.day, tokens=self.tokens,
                          calls=self.calls, user_messages=0, token_limit=self.token_limit, call_limit=self.call_limit,
                          user_message_limit=0, cost=self.cost, month=self.month, month_tokens=self.month_tokens,
                          month_calls=self.month_calls, month_cost=self.month_cost, cost_limit=self.cost_limit,
                          month_token_limit=self.month_token_limit, month_call_limit=self.month_call_limit,
                          month_cost_limit=self.month_cost_limit)

    @property
    def over_limit(self) -> bool:
        """True when one of the bot's own budgets (daily or monthly) is used up."""
        return limit_hit(self.limit_state()) is not None

    @property
    def alerts(self) -> list[dict[str, Any]]:
        """The budgets at 80 % or more (each with ``reached`` at 100 %)."""
        return alerts_of(self.limit_state())

    def as_dict(self) -> dict[str, Any]:
        alerts = self.alerts
        return {**asdict(self), "cost": round(self.cost, 6), "month_cost": round(self.month_cost, 6),
                "tokens": self.tokens, "over_limit": self.over_limit, "budget_alert": bool(alerts), "alerts": alerts}


@dataclass(frozen=True)
class BotUsage:
    """One bot: today against its limits, the last days, and today's busiest Discord users."""

    today: BotDayUsage
    days: list[BotDayUsage]
    top_users: list[tuple[str, int]]

    def as_dict(self) -> dict[str, Any]:
        return {"today": self.today.as_dict(), "days": [d.as_dict() for d in self.days],
                "top_users": [{"discord_user_id": u, "messages": n} for u, n in self.top_users]}


def _defaults(session: Session) -> dict[str, Any]:
    return app_settings.get_values(app_settings.DAILY_LIMIT_KEYS + app_settings.BUDGET_KEYS, session=session)


def _own(value: int | None, default: int) -> int:
    return max(0, int(default if value is None else value))


def _own_cost(value: float | None, default: float) -> float:
    return max(0.0, float(default if value is None else value))


def _budgets(bot: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """The bot's budgets beside the daily limits (its own, or the global defaults)."""
    return {"cost_limit": _own_cost(bot.daily_cost_limit, defaults["daily_cost_limit"]),
            "month_token_limit": _own(bot.monthly_token_limit, defaults["monthly_token_limit"]),
            "month_call_limit": _own(bot.monthly_call_limit, defaults["monthly_call_limit"]),
            "month_cost_limit": _own_cost(bot.monthly_cost_limit, defaults["monthly_cost_limit"])}


def _month_totals(day: str) -> Any:
    """Calls, tokens and cost per bot from the 1st of ``day``'s month to ``day`` (a subquery)."""
    return (select(col(UsageDaily.bot_id).label("bot_id"), func.sum(UsageDaily.calls).label("calls"),
                   func.sum(UsageDaily.tokens_in + UsageDaily.tokens_out).label("tokens"),
                   func.sum(UsageDaily.cost).label("cost"))
            .where(UsageDaily.day >= day[:8] + "01", UsageDaily.day <= day)
            .group_by(UsageDaily.bot_id).subquery())


def fleet_usage(*, session: Session, now: datetime | None = None, limit: int = 500) -> list[BotDayUsage]:
    """Every bot's usage today (UTC) against its limits, busiest first: one aggregate query."""
    day = utc_day(now)
    defaults = _defaults(session)
    at_limit = (
        select(func.count())
        .where(UserUsageDaily.bot_id == Bot.id, UserUsageDaily.day == day,
               UserUsageDaily.messages >= func.coalesce(Bot.user_daily_message_limit,
                                                        defaults["user_daily_message_limit"]),
               func.coalesce(Bot.user_daily_message_limit, defaults["user_daily_message_limit"]) > 0)
        .scalar_subquery()
    )
    month = _month_totals(day)
    columns = [Bot.id, Bot.name, Bot.daily_token_limit, Bot.daily_call_limit, Bot.user_daily_message_limit,
               func.coalesce(UsageDaily.calls, 0), func.coalesce(UsageDaily.tokens_in, 0),
               func.coalesce(UsageDaily.tokens_out, 0), func.coalesce(UsageDaily.errors, 0), at_limit,
               func.coalesce(UsageDaily.cost, 0.0), func.coalesce(month.c.calls, 0), func.coalesce(month.c.tokens, 0),
               func.coalesce(month.c.cost, 0.0), Bot.daily_cost_limit, Bot.monthly_token_limit,
               Bot.monthly_call_limit, Bot.monthly_cost_limit]
    stmt = (
        sa.select(*columns)
        .join(UsageDaily, (UsageDaily.bot_id == Bot.id) & (UsageDaily.day == day), isouter=True)
        .join(month, month.c.bot_id == Bot.id, isouter=True)
        .order_by((func.coalesce(UsageDaily.tokens_in, 0) + func.coalesce(UsageDaily.tokens_out, 0)).desc(), Bot.name)
        .limit(max(1, limit))
    )
    return [
        BotDayUsage(bot_id=r[0], bot_name=r[1], day=day, calls=int(r[5]), tokens_in=int(r[6]), tokens_out=int(r[7]),
                    errors=int(r[8]), token_limit=_own(r[2], defaults["daily_token_limit"]),
                    call_limit=_own(r[3], defaults["daily_call_limit"]),
                    user_message_limit=_own(r[4], defaults["user_daily_message_limit"]), users_at_limit=int(r[9]),
                    cost=float(r[10]), month=day[:7], month_calls=int(r[11]), month_tokens=int(r[12]),
                    month_cost=float(r[13]),
                    **_budgets(SimpleNamespace(daily_cost_limit=r[14], monthly_token_limit=r[15],
                                               monthly_call_limit=r[16], monthly_cost_limit=r[17]), defaults))
        for r in session.exec(stmt).all()
    ]


def bot_usage(bot_id: int, *, session: Session, days: int = 14, now: datetime | None = None,
              top_users: int = 10) -> BotUsage:
    """One bot: today against its limits, the last ``days`` UTC days (newest first, days without
    calls left out) and today's ``top_users`` Discord users by messages."""
    bot = session.get(Bot, bot_id)
    if bot is None:
        raise NotFoundError(f"no bot numbered {bot_id}")
    now = now or utcnow()
    today = utc_day(now)
    first = utc_day(now - timedelta(days=max(1, min(days, 366)) - 1))
    defaults = _defaults(session)
    limits = {"token_limit": _own(bot.daily_token_limit, defaults["daily_token_limit"]),
              "call_limit": _own(bot.daily_call_limit, defaults["daily_call_limit"]),
              "user_message_limit": _own(bot.user_daily_message_limit, defaults["user_daily_message_limit"])}
    rows = session.exec(
        select(UsageDaily).where(UsageDaily.bot_id == bot_id, UsageDaily.day >= first, UsageDaily.day <= today)
        .order_by(col(UsageDaily.day).desc()).limit(366)
    ).all()
    history = [BotDayUsage(bot_id=bot_id, bot_name=bot.name, day=r.day, calls=r.calls, tokens_in=r.tokens_in,
                           tokens_out=r.tokens_out, errors=r.errors, cost=float(r.cost or 0.0), **limits) for r in rows]
    users = session.exec(
        select(UserUsageDaily.discord_user_id, UserUsageDaily.messages)
        .where(UserUsageDaily.bot_id == bot_id, UserUsageDaily.day == today)
        .order_by(UserUsageDaily.messages.desc(), UserUsageDaily.discord_user_id)  # type: ignore[attr-defined]
        .limit(max(0, top_users))
    ).all() if top_users > 0 else []
    cap = limits["user_message_limit"]
    at_limit = 0
    if cap:
        at_limit = int(session.exec(select(func.count()).where(
            UserUsageDaily.bot_id == bot_id, UserUsageDaily.day == today, UserUsageDaily.messages >= cap)).one())
    current = next((h for h in history if h.day == today), None)
    month = _month_totals(today)
    month_row = session.exec(select(month.c.calls, month.c.tokens, month.c.cost).where(month.c.bot_id == bot_id)).first()
    month_calls, month_tokens, month_cost = month_row if month_row is not None else (0, 0, 0.0)
    today_usage = BotDayUsage(bot_id=bot_id, bot_name=bot.name, day=today, calls=current.calls if current else 0,
                              tokens_in=current.tokens_in if current else 0,
                              tokens_out=current.tokens_out if current else 0,
                              errors=current.errors if current else 0, users_at_limit=at_limit,
                              cost=current.cost if current else 0.0, month=today[:7],
                              month_calls=int(month_calls or 0), month_tokens=int(month_tokens or 0),
                              month_cost=float(month_cost or 0.0), **limits, **_budgets(bot, defaults))
    return BotUsage(today=today_usage, days=history, top_users=[(u, int(n)) for u, n in users])
