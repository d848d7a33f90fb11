"""Housekeeping jobs: retention and usage roll-ups."""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import AgentEvent, Conversation, LLMCall, LogEntry, Message, UsageDaily, utcnow
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


def test_usage_rollup_counts_calls_tokens_and_errors_per_day(any_db_env):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="busy").id
        for i in range(3):
            session.add(LLMCall(bot_id=bot_id, agent_role="synthesizer", provider="ollama", model="m",
                                tokens_in=10, tokens_out=5, error="" if i else "timeout"))
    for _ in range(2):  # idempotent
        with session_scope() as session:
            maintenance.rollup_usage(session=session)
    with session_scope(readonly=True) as session:
        rows = session.exec(select(UsageDaily)).all()
    assert [(r.bot_id, r.calls, r.tokens_in, r.tokens_out, r.errors) for r in rows] == [(bot_id, 3, 30, 15, 1)]
    assert rows[0].day == utcnow().date().isoformat()
