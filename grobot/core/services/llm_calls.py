"""Accounting: one ``llm_call`` row per LLM call (role, model, tokens, timings, error)."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session, col, select

from grobot.core.models import LLMCall, utcnow

logger = logging.getLogger(__name__)

_TABLE = LLMCall.__table__  # type: ignore[attr-defined]


def record_calls(*, session: Session, bot_id: int | None, run_id: int | None, records: list[Any], flush: bool = True) -> list[LLMCall]:
    """Store call records (objects with role, provider, model, tokens_in/out, ttft_ms, latency_ms, error)."""
    rows = [LLMCall(**_values(bot_id, run_id, r)) for r in records]
    session.add_all(rows)
    if flush:
        session.flush()
    return rows


def insert_calls(*, session: Session, bot_id: int | None, run_id: int | None, records: list[Any]) -> None:
    """Like :func:`record_calls`, in one bulk INSERT without ORM objects (the chain's hot path)."""
    if records:
        session.connection().execute(insert(_TABLE), [_values(bot_id, run_id, r) for r in records])


def _values(bot_id: int | None, run_id: int | None, r: Any) -> dict[str, Any]:
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
        "created_at": utcnow(),
    }


def calls_of_run(*, session: Session, run_id: int) -> list[LLMCall]:
    return list(session.exec(select(LLMCall).where(LLMCall.run_id == run_id).order_by(col(LLMCall.id))).all())


def recent_calls(*, session: Session, bot_id: int | None = None, limit: int = 100) -> list[LLMCall]:
    stmt = select(LLMCall)
    if bot_id is not None:
        stmt = stmt.where(LLMCall.bot_id == bot_id)
    return list(session.exec(stmt.order_by(col(LLMCall.id).desc()).limit(limit)).all())
