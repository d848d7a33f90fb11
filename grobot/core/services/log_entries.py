"""Reading a bot's log entries (newest first, filtered and limited in SQL)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from grobot.core.errors import ValidationError
from grobot.core.models import LogEntry

logger = logging.getLogger(__name__)

# The levels a filter may name, lowest first; a filter shows its level and the ones above.
LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MAX_LIMIT = 1000
MAX_SEARCH_CHARS = 200


@dataclass(frozen=True)
class LogLine:
    """One log entry as lists show it."""

    id: int
    created_at: datetime
    level: str
    logger: str
    message: str


def levels_from(min_level: str) -> tuple[str, ...]:
    """``min_level`` and the levels above it ("" or "ALL": every level)."""
    level = (min_level or "ALL").upper()
    if level == "ALL":
        return LEVELS
    if level not in LEVELS:
        raise ValidationError(f"unknown log level {min_level!r}; one of: ALL, {', '.join(LEVELS)}")
    return LEVELS[LEVELS.index(level):]


def recent_logs(
    *, session: Session, bot_id: int, min_level: str = "ALL", search: str = "", limit: int = 100,
    before_id: int | None = None,
) -> list[LogLine]:
    """The bot's newest ``limit`` entries at ``min_level`` or above whose message or logger
    contains ``search`` (case-insensitive), older than ``before_id`` when given."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be between 1 and {MAX_LIMIT}")
    search = (search or "").strip()
    if len(search) > MAX_SEARCH_CHARS:
        raise ValidationError(f"the search text is at most {MAX_SEARCH_CHARS} characters")
    stmt = select(LogEntry.id, LogEntry.created_at, LogEntry.level, LogEntry.logger, LogEntry.message).where(
        LogEntry.bot_id == bot_id
    )
    levels = levels_from(min_level)
    if levels != LEVELS:
        stmt = stmt.where(col(LogEntry.level).in_(levels))
    if search:
        pattern = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        stmt = stmt.where(col(LogEntry.message).ilike(pattern, escape="\\") | col(LogEntry.logger).ilike(pattern, escape="\\"))
    if before_id is not None:
        stmt = stmt.where(col(LogEntry.id) < before_id)
    stmt = stmt.order_by(col(LogEntry.id).desc()).limit(limit)
    return [LogLine(*row) for row in session.exec(stmt).all()]  # type: ignore[call-overload]
