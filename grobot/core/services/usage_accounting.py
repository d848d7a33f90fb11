"""Incremental usage counters: ``usage_daily`` per bot and ``user_usage_daily`` per Discord user.

Each counter is bumped by one ``INSERT .. ON CONFLICT DO UPDATE SET n = n + excluded.n`` in the
transaction that writes what it counts (the ``llm_call`` rows, the stored user message), so the
counters are exact, never read-modify-write, and correct with many writers (SQLite serialises
writers; PostgreSQL locks the conflicting row until the other transaction ends).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from grobot.core.models import UsageDaily, UserUsageDaily, utcnow

logger = logging.getLogger(__name__)

_USAGE: Table = UsageDaily.__table__  # type: ignore[attr-defined]
_USER_USAGE: Table = UserUsageDaily.__table__  # type: ignore[attr-defined]
_INSERTS: dict[str, Callable[[Table], postgresql.Insert | sqlite.Insert]] = {
    "postgresql": postgresql.insert, "sqlite": sqlite.insert}


def utc_day(now: datetime | None = None) -> str:
    """The UTC day of ``now`` (default: now) as ``YYYY-MM-DD``, the key of the daily counters."""
    return (now or utcnow()).date().isoformat()


@functools.lru_cache(maxsize=16)
def _statement(dialect: str, table: Table, keys: tuple[str, ...], counters: tuple[str, ...], add: bool) -> Any:
    """``INSERT .. ON CONFLICT (keys) DO UPDATE`` of ``table``, built once (building it costs more than running it)."""
    insert = _INSERTS.get(dialect)
    if insert is None:  # pragma: no cover - only SQLite and PostgreSQL are supported
        raise RuntimeError(f"usage counters need SQLite or PostgreSQL, not {dialect}")
    stmt = insert(table)
    return stmt.on_conflict_do_update(
        index_elements=list(keys),
        set_={c: (table.c[c] + stmt.excluded[c]) if add else stmt.excluded[c] for c in counters})


def _upsert(session: Session, table: Table, keys: tuple[str, ...], values: dict[str, Any], counters: tuple[str, ...],
            *, add: bool = True) -> None:
    """Insert ``values``, or on a clash of ``keys`` add (``add``) or set the ``counters``."""
    connection = session.connection()
    connection.execute(_statement(connection.dialect.name, table, keys, counters, add), values)


def add_llm_usage(*, session: Session, bot_id: int, calls: int, tokens_in: int, tokens_out: int, errors: int,
                  cost: float = 0.0, now: datetime | None = None) -> None:
    """Add LLM calls of ``bot_id`` (and their estimated cost) to its counters of the UTC day of ``now``."""
    _upsert(session, _USAGE, ("bot_id", "day"),
            {"bot_id": bot_id, "day": utc_day(now), "calls": calls, "tokens_in": tokens_in,
             "tokens_out": tokens_out, "errors": errors, "cost": float(cost)},
            ("calls", "tokens_in", "tokens_out", "errors", "cost"))


def count_user_message(*, session: Session, bot_id: int, discord_user_id: str, now: datetime | None = None) -> None:
    """Count one message of a Discord user answered by ``bot_id`` on the UTC day of ``now``."""
    _upsert(session, _USER_USAGE, ("bot_id", "day", "discord_user_id"),
            {"bot_id": bot_id, "day": utc_day(now), "discord_user_id": str(discord_user_id)[:32], "messages": 1},
            ("messages",))


def set_usage(*, session: Session, bot_id: int, day: str, calls: int, tokens_in: int, tokens_out: int,
              errors: int, cost: float = 0.0) -> None:
    """Overwrite the counters of ``bot_id`` on ``day`` (the repair of a closed day)."""
    _upsert(session, _USAGE, ("bot_id", "day"),
            {"bot_id": bot_id, "day": day, "calls": calls, "tokens_in": tokens_in, "tokens_out": tokens_out,
             "errors": errors, "cost": float(cost)}, ("calls", "tokens_in", "tokens_out", "errors", "cost"), add=False)
