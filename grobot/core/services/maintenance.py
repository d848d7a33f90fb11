"""Scheduled housekeeping: log and event retention, usage roll-ups.

The supervisor runs these on a schedule; each is one short transaction of set-based SQL.
"""

from __future__ import annotations

import logging
from datetime import datetime, time, timedelta, timezone

from sqlalchemy import case, func
from sqlmodel import Session, delete, select

from grobot.core.models import AgentEvent, LLMCall, LogEntry, UsageDaily, utcnow
from grobot.core.services import app_settings

logger = logging.getLogger(__name__)


def _purge(model: type[LogEntry] | type[AgentEvent], setting: str, days: int | None, *, session: Session) -> int:
    days = days if days is not None else int(app_settings.get_value(setting, session=session))
    cutoff = utcnow() - timedelta(days=days)
    deleted = session.exec(delete(model).where(model.created_at < cutoff)).rowcount or 0
    if deleted:
        logger.info("Retention: %s %s rows older than %s days deleted", deleted, model.__tablename__, days)
    return deleted


def purge_old_logs(*, session: Session, days: int | None = None) -> int:
    """Delete log entries older than the retention (setting ``log_retention_days``)."""
    return _purge(LogEntry, "log_retention_days", days, session=session)


def purge_old_events(*, session: Session, days: int | None = None) -> int:
    """Delete agent events older than ``event_retention_days`` (the messages stay)."""
    return _purge(AgentEvent, "event_retention_days", days, session=session)


def rollup_usage(*, session: Session, days: int = 2) -> int:
    """Recompute ``usage_daily`` for the last ``days`` UTC days from ``llm_call``; returns rows written."""
    today = utcnow().date()
    written = 0
    for offset in range(days):
        day = today - timedelta(days=offset)
        start = datetime.combine(day, time.min, tzinfo=timezone.utc)
        end = start + timedelta(days=1)
        rows = session.exec(
            select(
                LLMCall.bot_id,
                func.count(LLMCall.id),
                func.coalesce(func.sum(LLMCall.tokens_in), 0),
                func.coalesce(func.sum(LLMCall.tokens_out), 0),
                func.coalesce(func.sum(case((LLMCall.error != "", 1), else_=0)), 0),
            )
            .where(LLMCall.created_at >= start, LLMCall.created_at < end, LLMCall.bot_id.is_not(None))  # type: ignore[union-attr]
            .group_by(LLMCall.bot_id)
        ).all()
        key = day.isoformat()
        existing = {
            u.bot_id: u for u in session.exec(select(UsageDaily).where(UsageDaily.day == key)).all()
        }
        for bot_id, calls, tokens_in, tokens_out, errors in rows:
            usage = existing.get(bot_id) or UsageDaily(bot_id=bot_id, day=key)
            usage.calls, usage.tokens_in, usage.tokens_out, usage.errors = int(calls), int(tokens_in), int(tokens_out), int(errors)
            session.add(usage)
            written += 1
    session.flush()
    return written
