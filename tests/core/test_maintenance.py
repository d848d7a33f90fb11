"""Housekeeping jobs: retention and usage repair."""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import AgentEvent, BudgetAlert, Conversation, LLMCall, LogEntry, Message, UsageDaily, UserUsageDaily, utcnow
from grobot.core.services import bots, maintenance


def test_old_logs_are_purged_and_recent_ones_kept(any_db_env):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="old").id
        session.add(LogEntry(bot_id=bot_id, level="INFO", logger="x", message="ancient",
                             created_at=utcnow() - timedelta(days=30)))
        session.add(LogEntry(bot_id=bot_id, level="INFO", logger="x", message="fresh"))
    with session_scope() as session:
        assert maintenance.purge_old_logs(session=session) == 1
    with session_scope(readonly=True) as session:
        assert [e.message for e in session.exec(select(LogEntry)).all()] == ["fresh"]


def test_budget_alerts_of_past_periods_are_purged(any_db_env):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="thrifty").id
        session.add(BudgetAlert(bot_id=bot_id, budget="monthly_cost", period="2026-01", used=9, budget_limit=10,
                                created_at=utcnow() - timedelta(days=maintenance.BUDGET_ALERT_KEEP_DAYS + 1)))
        session.add(BudgetAlert(bot_id=bot_id, budget="monthly_cost", period="2026-11", used=8, budget_limit=10))
    with session_scope() as session:
        assert maintenance.purge_old_budget_alerts(session=session) == 1
    with session_scope(readonly=True) as session:
        assert [a.period for a in session.exec(select(BudgetAlert)).all()] == ["2026-11"]


def test_old_events_are_purged_and_the_messages_kept(grobot_env):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="chatty").id
        conv = Conversation(bot_id=bot_id, key="guild:1")
        session.add(conv)
        session.flush()
        msg = Message(conversation_id=conv.id, role="user", content="hi")
        session.add(msg)
        session.flush()
        session.add(AgentEvent(run_id=msg.id, seq=1, kind="done", created_at=utcnow() - timedelta(days=60)))
        session.add(AgentEvent(run_id=msg.id, seq=2, kind="thinking"))
    with session_scope() as session:
        assert maintenance.purge_old_events(session=session) == 1
    with session_scope(readonly=True) as session:
        assert [e.seq for e in session.exec(select(AgentEvent)).all()] == [2]
        assert len(session.exec(select(Message)).all()) == 1


def test_usage_repair_rewrites_closed_days_from_llm_calls_and_leaves_today(any_db_env):
    yesterday = utcnow() - timedelta(days=1)
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="busy").id
        for i in range(3):
            session.add(LLMCall(bot_id=bot_id, agent_role="synthesizer", provider="ollama", model="m", tokens_in=10,
                                tokens_out=5, error="" if i else "timeout", created_at=yesterday))
        # a drifted counter for yesterday, and today's counter (kept current by the inserts)
        session.add(UsageDaily(bot_id=bot_id, day=yesterday.date().isoformat(), calls=1, tokens_in=1))
        session.add(UsageDaily(bot_id=bot_id, day=utcnow().date().isoformat(), calls=7, tokens_in=70))
        session.add(UserUsageDaily(bot_id=bot_id, day=(utcnow() - timedelta(days=90)).date().isoformat(),
                                   discord_user_id="1", messages=3))
        session.add(UserUsageDaily(bot_id=bot_id, day=utcnow().date().isoformat(), discord_user_id="1", messages=2))
    for _ in range(2):  # idempotent
        with session_scope() as session:
            assert maintenance.repair_usage(session=session) == 1
    with session_scope(readonly=True) as session:
        rows = session.exec(select(UsageDaily).order_by(UsageDaily.day)).all()
        users = session.exec(select(UserUsageDaily)).all()
    assert [(r.day, r.calls, r.tokens_in, r.tokens_out, r.errors) for r in rows] == [
        (yesterday.date().isoformat(), 3, 30, 15, 1), (utcnow().date().isoformat(), 7, 70, 0, 0)]
    assert [(u.day, u.messages) for u in users] == [(utcnow().date().isoformat(), 2)]
