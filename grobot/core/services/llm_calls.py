"""Accounting: one ``llm_call`` row per LLM call (role, model, tokens, timings, error)."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session

from grobot.core.models import LLMCall, utcnow

logger = logging.getLogger(__name__)

_TABLE = LLMCall.__table__  # type: ignore[attr-defined]


def insert_calls(*, session: Session, bot_id: int | None, run_id: int | None, records: list[Any]) -> None:
    """Store call records (objects with role, provider, model, tokens_in/out, ttft_ms, latency_ms, error) in one INSERT."""
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
