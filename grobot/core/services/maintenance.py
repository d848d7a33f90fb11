"""Scheduled housekeeping: log, event and budget-alert retention, usage repair.

The supervisor runs these on a schedule; each is one short transaction of set-based SQL.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, time, timedelta

from sqlalchemy import case, func
from sqlmodel import Session, delete, select

from grobot.core.models import AgentEvent, Bot, BudgetAlert, LLMCall, LogEntry, RunImage, UserUsageDaily, utcnow
from grobot.core.services import app_settings
from grobot.core.services.usage_accounting import set_usage

logger = logging.getLogger(__name__)

USER_USAGE_KEEP_DAYS = 35  # per-user daily message counts are kept this long
# A budget alert only stops a second alert in its own period (a day or a month): kept past the
# current and the previous month, then deleted.
BUDGET_ALERT_KEEP_DAYS = 62


def _purge(model: type[LogEntry] | type[AgentEvent] | type[RunImage], setting: str, days: int | None, *, session: Session) -> int:
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
    """Delete agent events older than ``event_retention_days`` (the messages stay), and the runs'
    images with them (the steps that showed them are gone)."""
    _purge(RunImage, "event_retention_days", days, session=session)
    return _purge(AgentEvent, "event_retention_days", days, session=session)


def purge_old_budget_alerts(*, session: Session, days: int = BUDGET_ALERT_KEEP_DAYS) -> int:
    """Delete the records of budget alerts older than ``days`` (their periods are over)."""
    cutoff = utcnow() - timedelta(days=days)
    deleted = session.exec(delete(BudgetAlert).where(BudgetAlert.created_at < cutoff)).rowcount or 0
    if deleted:
        logger.info("Retention: %s budget_alert rows older than %s days deleted", deleted, days)
    return deleted


def repair_usage(*, session: Session, days: int = 2, now: datetime | None = None) -> int:
    """Recompute ``usage_daily`` of the last ``days`` closed UTC days from ``llm_call``; returns rows written.

    The counters are kept current by every ``llm_call`` insert (:mod:`usage_accounting`); this
    repair job only rewrites closed days (no call is added to them any more, so it cannot race
    with the incremental counters), e.g. after an upgrade from a version that rolled usage up
    every few minutes. It also deletes per-user counters older than ``USER_USAGE_KEEP_DAYS``.
    """
    today = (now or utcnow()).date()
    written = 0
    for offset in range(1, days + 1):
        day = today - timedelta(days=offset)
        start = datetime.combine(day, time.min, tzinfo=UTC)
        end = start + timedelta(days=1)
        # From ``bot``: each bot's calls are an index range (bot_id, created_at).
        rows = session.exec(
            select(
                LLMCall.bot_id,
                func.count(LLMCall.id),
                func.coalesce(func.sum(LLMCall.tokens_in), 0),
                func.coalesce(func.sum(LLMCall.tokens_out), 0),
                func.coalesce(func.sum(case((LLMCall.error != "", 1), else_=0)), 0),
                func.coalesce(func.sum(LLMCall.cost), 0.0),
            )
            .select_from(Bot)
            .join(LLMCall, (LLMCall.bot_id == Bot.id) & (LLMCall.created_at >= start) & (LLMCall.created_at < end))
            .group_by(LLMCall.bot_id)
        ).all()
        for bot_id, calls, tokens_in, tokens_out, errors, cost in rows:
            set_usage(session=session, bot_id=bot_id, day=day.isoformat(), calls=int(calls), tokens_in=int(tokens_in),
                      tokens_out=int(tokens_out), errors=int(errors), cost=float(cost))
            written += 1
    cutoff = (today - timedelta(days=USER_USAGE_KEEP_DAYS)).isoformat()
    session.exec(delete(UserUsageDaily).where(UserUsageDaily.day < cutoff))
    if written:
        logger.debug("Usage repair: %d bot-days rewritten", written)
    return written
