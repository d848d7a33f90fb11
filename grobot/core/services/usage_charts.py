"""LLM usage over time and broken down (per day, month, model, bot, Discord user, source), aggregated in SQL.

Every query groups in the database and ``.limit()``s what it returns; costs are the estimated
costs stored with each call (:mod:`grobot.core.services.costs`), NULL (unknown) counting as 0.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, func
from sqlmodel import Session, select

from grobot.core.errors import ValidationError
from grobot.core.models import Bot, Conversation, LLMCall, Message, UsageDaily, UserProfile, utcnow
from grobot.core.services.usage import call_totals, totals_of

logger = logging.getLogger(__name__)

MAX_DAYS = 366
SOURCES = {"test": "Test Chat", "cli": "CLI"}
COUNCIL_ROLES = ("council_advisor", "council_synthesis")  # the advisory council's calls: a source of their own


@dataclass(frozen=True)
class Point:
    """One group of LLM calls: its ``key`` (a day, month, model, bot, user or source) and its totals."""

    key: str
    label: str
    calls: int
    tokens_in: int
    tokens_out: int
    errors: int
    avg_latency_ms: float
    cost: float
    priced_calls: int  # calls with a known price (a cost of 0 for the others is unknown, not free)

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tokens": self.tokens, "cost": round(self.cost, 6)}


def check_days(days: int) -> int:
    """``days`` when it is a period these totals cover (1 to :data:`MAX_DAYS`); else :class:`ValidationError`."""
    if not 1 <= days <= MAX_DAYS:
        raise ValidationError(f"days: must be between 1 and {MAX_DAYS}")
    return days


def _since(days: int, now: datetime | None) -> datetime:
    return (now or utcnow()) - timedelta(days=max(1, min(int(days), MAX_DAYS)))


def _point(key: Any, label: Any, row: Any) -> Point:
    return Point(key=str(key if key is not None else ""), label=str(label if label is not None else ""),
                 **totals_of(row))


def _day_of(column: Any, dialect: str) -> Any:
    """The UTC day of a timestamp column as ``YYYY-MM-DD`` text, on SQLite and PostgreSQL."""
    if dialect == "postgresql":
        return func.to_char(column, "YYYY-MM-DD")
    return func.substr(column, 1, 10)


def by_day(*, session: Session, days: int = 30, bot_id: int | None = None, now: datetime | None = None) -> list[Point]:
    """Calls, tokens, mean latency and cost per UTC day over the last ``days`` days, oldest first."""
    day = _day_of(LLMCall.created_at, session.get_bind().dialect.name).label("day")
    stmt = select(day, *call_totals()).where(LLMCall.created_at >= _since(days, now))
    if bot_id is not None:
        stmt = stmt.where(LLMCall.bot_id == bot_id)
    stmt = stmt.group_by(day).order_by(day).limit(MAX_DAYS)
    return [_point(r[0], r[0], r) for r in session.exec(stmt).all()]


def every_day(points: list[Point], *, days: int, now: datetime | None = None) -> list[Point]:
    """``points`` of :func:`by_day` with a zero point for each day of the period that had no call (a chart
    of the period has a mark for every day, not only for the days with calls)."""
    seen = {point.key: point for point in points}
    first, last = _since(days, now).date(), (now or utcnow()).date()
    out: list[Point] = []
    day = first
    while day <= last:
        key = day.isoformat()
        out.append(seen.get(key) or Point(key=key, label=key, calls=0, tokens_in=0, tokens_out=0, errors=0,
                                          avg_latency_ms=0.0, cost=0.0, priced_calls=0))
        day += timedelta(days=1)
    return out


def by_model(*, session: Session, days: int = 30, bot_id: int | None = None, now: datetime | None = None,
             limit: int = 20) -> list[Point]:
    """Totals per provider and model, the most used first."""
    stmt = select(LLMCall.provider, LLMCall.model, *call_totals()).where(LLMCall.created_at >= _since(days, now))
    if bot_id is not None:
        stmt = stmt.where(LLMCall.bot_id == bot_id)
    stmt = (stmt.group_by(LLMCall.provider, LLMCall.model).order_by(func.count(LLMCall.id).desc())
            .limit(max(1, limit)))
    return [_point(f"{r[0]}/{r[1]}", f"{r[1]} ({r[0]})", r) for r in session.exec(stmt).all()]


def by_bot(*, session: Session, days: int = 30, now: datetime | None = None, limit: int = 20) -> list[Point]:
    """Totals per bot, the most used first."""
    stmt = (
        select(LLMCall.bot_id, func.coalesce(Bot.name, "(deleted or none)"), *call_totals())
        .join(Bot, Bot.id == LLMCall.bot_id, isouter=True)
        .where(LLMCall.created_at >= _since(days, now))
        .group_by(LLMCall.bot_id, Bot.name)
        .order_by(func.count(LLMCall.id).desc())
        .limit(max(1, limit))
    )
    return [_point(r[0], r[1], r) for r in session.exec(stmt).all()]


def by_user(*, session: Session, days: int = 30, bot_id: int | None = None, now: datetime | None = None,
            limit: int = 10) -> list[Point]:
    """Totals per Discord user (by the name they wrote under, where known), the most used first.

    A call belongs to the user whose message its run answers; Test Chat and CLI runs are left out.
    """
    name = func.max(Message.author_name)
    stmt = (
        select(Message.author_id, name, *call_totals())
        .join(Message, Message.id == LLMCall.run_id)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(LLMCall.created_at >= _since(days, now), Conversation.kind.in_(("guild", "dm", "thread")),  # type: ignore[attr-defined]
               Message.author_id.is_not(None))  # type: ignore[union-attr]
    )
    if bot_id is not None:
        stmt = stmt.where(LLMCall.bot_id == bot_id)
    stmt = stmt.group_by(Message.author_id).order_by(func.count(LLMCall.id).desc()).limit(max(1, limit))
    rows = session.exec(stmt).all()
    missing = [r[0] for r in rows if not r[1]]
    known: dict[str, str] = {}
    if missing:  # a name from the Knowledge Base where the messages have none
        known = dict(session.exec(select(UserProfile.discord_user_id, func.max(UserProfile.display_name))
                                  .where(UserProfile.discord_user_id.in_(missing), UserProfile.display_name != "")  # type: ignore[attr-defined]
                                  .group_by(UserProfile.discord_user_id)).all())
    return [_point(r[0], r[1] or known.get(r[0]) or f"Discord user {r[0]}", r) for r in rows]


def by_source(*, session: Session, days: int = 30, bot_id: int | None = None,
              now: datetime | None = None) -> list[Point]:
    """Totals per source: the advisory council (wherever it was asked), Discord, Test Chat, CLI, or "Background"
    (calls outside a stored run)."""
    source = case((LLMCall.agent_role.in_(COUNCIL_ROLES), "council"),  # type: ignore[attr-defined]
                  (LLMCall.run_id.is_(None), "background"),  # type: ignore[union-attr]
                  (Conversation.kind.in_(tuple(SOURCES)), Conversation.kind),  # type: ignore[attr-defined]
                  else_="discord").label("source")
    stmt = (
        select(source, *call_totals())
        .join(Message, Message.id == LLMCall.run_id, isouter=True)
        .join(Conversation, Conversation.id == Message.conversation_id, isouter=True)
        .where(LLMCall.created_at >= _since(days, now))
    )
    if bot_id is not None:
        stmt = stmt.where(LLMCall.bot_id == bot_id)
    stmt = stmt.group_by(source).order_by(func.count(LLMCall.id).desc()).limit(10)
    labels = {**SOURCES, "discord": "Discord", "council": "Council", "background": "Background"}
    return [_point(r[0], labels.get(r[0], r[0]), r) for r in session.exec(stmt).all()]


@dataclass(frozen=True)
class MonthCost:
    """One UTC month of one bot (or the fleet: ``bot_name`` empty): calls, tokens and estimated cost."""

    month: str
    bot_name: str
    calls: int
    tokens: int
    cost: float

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "cost": round(self.cost, 6)}


def by_month(*, session: Session, months: int = 12, bot_id: int | None = None, per_bot: bool = False,
             now: datetime | None = None) -> list[MonthCost]:
    """Calls, tokens and cost per UTC month (from the daily counters), newest first; per bot when asked."""
    month = func.substr(UsageDaily.day, 1, 7).label("month")
    first = (now or utcnow()).date().replace(day=1)
    for _ in range(max(1, min(months, 120)) - 1):
        first = (first - timedelta(days=1)).replace(day=1)
    columns = [month, func.coalesce(Bot.name, "") if per_bot else func.min(""),
               func.sum(UsageDaily.calls), func.sum(UsageDaily.tokens_in + UsageDaily.tokens_out),
               func.coalesce(func.sum(UsageDaily.cost), 0.0)]
    stmt = select(*columns).where(UsageDaily.day >= first.isoformat())
    if per_bot:
        stmt = stmt.join(Bot, Bot.id == UsageDaily.bot_id).group_by(month, Bot.name)
    else:
        stmt = stmt.group_by(month)
    if bot_id is not None:
        stmt = stmt.where(UsageDaily.bot_id == bot_id)
    stmt = stmt.order_by(month.desc()).limit(500)
    return [MonthCost(month=str(r[0]), bot_name=str(r[1] or ""), calls=int(r[2] or 0), tokens=int(r[3] or 0),
                      cost=float(r[4] or 0.0)) for r in session.exec(stmt).all()]
