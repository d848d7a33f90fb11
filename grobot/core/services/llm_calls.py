"""Accounting: one ``llm_call`` row per LLM call (role, model, tokens, timings, error, estimated cost).

The bot's ``usage_daily`` counters are bumped in the same transaction (the usage limits read them).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session

from grobot.core.models import LLMCall, utcnow
from grobot.core.services.costs import estimate
from grobot.core.services.usage_accounting import add_llm_usage

logger = logging.getLogger(__name__)

_TABLE = LLMCall.__table__  # type: ignore[attr-defined]


def insert_calls(*, session: Session, bot_id: int | None, run_id: int | None, records: list[Any],
                 now: datetime | None = None) -> None:
    """Store call records (objects with role, provider, model, tokens_in/out, ttft_ms, latency_ms, error) in one
    INSERT, each with its estimated cost, and add them to the bot's daily usage (one upsert) in the same transaction."""
    if not records:
        return
    now = now or utcnow()
    rows = [_values(bot_id, run_id, r, now) for r in records]
    estimate(rows, session=session)
    session.connection().execute(insert(_TABLE), rows)
    if bot_id is not None:
        add_llm_usage(session=session, bot_id=bot_id, calls=len(rows), tokens_in=sum(r["tokens_in"] for r in rows),
                      tokens_out=sum(r["tokens_out"] for r in rows), errors=sum(1 for r in rows if r["error"]),
                      cost=sum(r["cost"] or 0.0 for r in rows), now=now)


def _values(bot_id: int | None, run_id: int | None, r: Any, now: datetime) -> dict[str, Any]:
    return {
        "bot_id": bot_id,
        "run_id": run_id,
        "agent_role": str(r.role)[:32],
        "provider": str(r.provider)[:32],
        "model": str(r.model)[:200],
        "tokens_in": int(r.tokens_in or 0),
        "tokens_out": int(r.tokens_out or 0),
        "ttft_ms": None if r.ttft_ms is None else round(float(r.ttft_ms), 2),
        "latency_ms": round(float(r.latency_ms or 0.0), 2),
        "error": (r.error or "")[:2000],
        "created_at": now,
    }
