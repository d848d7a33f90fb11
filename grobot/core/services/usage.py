"""LLM usage per bot, aggregated in SQL from ``llm_call``."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import case, func
from sqlmodel import Session, select

from grobot.core.models import Bot, LLMCall, utcnow

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


def usage_by_bot(*, session: Session, days: int = 7) -> list[UsageRow]:
    """Calls, tokens, errors and mean latency per bot over the last ``days`` days."""
    since = utcnow() - timedelta(days=days)
    stmt = (
        select(
            LLMCall.bot_id,
            func.coalesce(Bot.name, "(deleted or none)"),
            func.count(LLMCall.id),
            func.coalesce(func.sum(LLMCall.tokens_in), 0),
            func.coalesce(func.sum(LLMCall.tokens_out), 0),
            func.coalesce(func.sum(case((LLMCall.error != "", 1), else_=0)), 0),
            func.coalesce(func.avg(LLMCall.latency_ms), 0.0),
        )
        .join(Bot, Bot.id == LLMCall.bot_id, isouter=True)
        .where(LLMCall.created_at >= since)
        .group_by(LLMCall.bot_id, Bot.name)
        .order_by(func.count(LLMCall.id).desc())
        .limit(500)
    )
    return [
        UsageRow(bot_id=r[0], bot_name=r[1], calls=int(r[2]), tokens_in=int(r[3]), tokens_out=int(r[4]),
                 errors=int(r[5]), avg_latency_ms=round(float(r[6]), 1))
        for r in session.exec(stmt).all()
    ]


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
        select(
            LLMCall.agent_role,
            func.count(LLMCall.id),
            func.coalesce(func.sum(LLMCall.tokens_in), 0),
            func.coalesce(func.sum(LLMCall.tokens_out), 0),
            func.coalesce(func.sum(case((LLMCall.error != "", 1), else_=0)), 0),
            func.coalesce(func.avg(LLMCall.latency_ms), 0.0),
        )
        .where(LLMCall.created_at >= since)
        .group_by(LLMCall.agent_role)
        .order_by(func.count(LLMCall.id).desc())
        .limit(100)
    )
    return [
        RoleUsageRow(agent_role=r[0], calls=int(r[1]), tokens_in=int(r[2]), tokens_out=int(r[3]),
                     errors=int(r[4]), avg_latency_ms=round(float(r[5]), 1))
        for r in session.exec(stmt).all()
    ]
