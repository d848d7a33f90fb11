"""LLM usage per bot, aggregated in SQL: history from ``llm_call``, today vs limits from ``usage_daily``."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, func
from sqlmodel import Session, select

from grobot.core.errors import NotFoundError
from grobot.core.models import Bot, LLMCall, UsageDaily, UserUsageDaily, utcnow
from grobot.core.services import app_settings
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _call_totals() -> tuple[Any, ...]:
    """Calls, tokens in, tokens out, errors and mean latency of a group of ``llm_call`` rows."""
    return (
        func.count(LLMCall.id),
        func.coalesce(func.sum(LLMCall.tokens_in), 0),
        func.coalesce(func.sum(LLMCall.tokens_out), 0),
        func.coalesce(func.sum(case((LLMCall.error != "", 1), else_=0)), 0),
        func.coalesce(func.avg(LLMCall.latency_ms), 0.0),
    )


def _totals(row: Any) -> dict[str, Any]:
    """The fields of :func:`_call_totals` from the last five columns of ``row``."""
    calls, tokens_in, tokens_out, errors, latency = row[-5:]
    return {"calls": int(calls), "tokens_in": int(tokens_in), "tokens_out": int(tokens_out), "errors": int(errors),
            "avg_latency_ms": round(float(latency), 1)}


def usage_by_bot(*, session: Session, days: int = 7) -> list[UsageRow]:
    """Calls, tokens, errors and mean latency per bot over the last ``days`` days."""
    since = utcnow() - timedelta(days=days)
    stmt = (
        select(LLMCall.bot_id, func.coalesce(Bot.name, "(deleted or none)"), *_call_totals())
        .join(Bot, Bot.id == LLMCall.bot_id, isouter=True)
        .where(LLMCall.created_at >= since)
        .group_by(LLMCall.bot_id, Bot.name)
        .order_by(func.count(LLMCall.id).desc())
        .limit(500)
    )
    return [UsageRow(bot_id=r[0], bot_name=r[1], **_totals(r)) for r in session.exec(stmt).all()]


@dataclass(frozen=True)
class RoleUsageRow:
    agent_role: str
    calls: int
    tokens_in: int
    tokens_out: int
    errors: int
    avg_latency_ms: float


def usage_by_role(*, session: Session, days: int = 7) -> list[RoleUsageRow]:
    """Calls, tokens, errors and mean latency per agent role (whole fleet) over the last ``days`` days."""
    since = utcnow() - timedelta(days=days)
    stmt = (
        select(LLMCall.agent_role, *_call_totals())
        .where(LLMCall.created_at >= since)
        .group_by(LLMCall.agent_role)
        .order_by(func.count(LLMCall.id).desc())
        .limit(100)
    )
    return [RoleUsageRow(agent_role=r[0], **_totals(r)) for r in session.exec(stmt).all()]


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

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    @property
    def over_limit(self) -> bool:
        """True when the bot's own budget (tokens or calls) is used up for the day."""
        return bool((self.token_limit and self.tokens >= self.token_limit)
                    or (self.call_limit and self.calls >= self.call_limit))

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tokens": self.tokens, "over_limit": self.over_limit}


@dataclass(frozen=True)
class BotUsage:
    """One bot: today against its limits, the last days, and today's busiest Discord users."""

    today: BotDayUsage
    days: list[BotDayUsage]
    top_users: list[tuple[str, int]]

    def as_dict(self) -> dict[str, Any]:
        return {"today": self.today.as_dict(), "days": [d.as_dict() for d in self.days],
                "top_users": [{"discord_user_id": u, "messages": n} for u, n in self.top_users]}


def _defaults(session: Session) -> dict[str, int]:
    return {k: int(v) for k, v in app_settings.get_values(app_settings.LIMIT_KEYS, session=session).items()}


def _own(value: int | None, default: int) -> int:
    return max(0, int(default if value is None else value))


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
    stmt = (
        select(Bot.id, Bot.name, Bot.daily_token_limit, Bot.daily_call_limit, Bot.user_daily_message_limit,
               func.coalesce(UsageDaily.calls, 0), func.coalesce(UsageDaily.tokens_in, 0),
               func.coalesce(UsageDaily.tokens_out, 0), func.coalesce(UsageDaily.errors, 0), at_limit)
        .join(UsageDaily, (UsageDaily.bot_id == Bot.id) & (UsageDaily.day == day), isouter=True)
        .order_by((func.coalesce(UsageDaily.tokens_in, 0) + func.coalesce(UsageDaily.tokens_out, 0)).desc(), Bot.name)
        .limit(max(1, limit))
    )
    return [
        BotDayUsage(bot_id=r[0], bot_name=r[1], day=day, calls=int(r[5]), tokens_in=int(r[6]), tokens_out=int(r[7]),
                    errors=int(r[8]), token_limit=_own(r[2], defaults["daily_token_limit"]),
                    call_limit=_own(r[3], defaults["daily_call_limit"]),
                    user_message_limit=_own(r[4], defaults["user_daily_message_limit"]), users_at_limit=int(r[9]))
        for r in session.exec(stmt).all()  # type: ignore[call-overload]
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
        .order_by(UsageDaily.day.desc()).limit(366)  # type: ignore[union-attr]
    ).all()
    history = [BotDayUsage(bot_id=bot_id, bot_name=bot.name, day=r.day, calls=r.calls, tokens_in=r.tokens_in,
                           tokens_out=r.tokens_out, errors=r.errors, **limits) for r in rows]
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
    today_usage = BotDayUsage(bot_id=bot_id, bot_name=bot.name, day=today, calls=current.calls if current else 0,
                              tokens_in=current.tokens_in if current else 0,
                              tokens_out=current.tokens_out if current else 0,
                              errors=current.errors if current else 0, users_at_limit=at_limit, **limits)
    return BotUsage(today=today_usage, days=history, top_users=[(u, int(n)) for u, n in users])
