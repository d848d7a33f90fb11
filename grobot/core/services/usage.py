"""LLM usage per bot, aggregated in SQL from ``llm_call``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import case, func
from sqlmodel import Session, select

from grobot.core.models import Bot, LLMCall, utcnow


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
