"""Many processes bump the same usage counters at once: not one call, token or message is lost."""

from __future__ import annotations

import multiprocessing
from types import SimpleNamespace
from typing import Any

from sqlmodel import func, select

from grobot.core.db import dispose_engines, session_scope
from grobot.core.models import LLMCall, UsageDaily, UserUsageDaily
from grobot.core.services import bots, llm_calls, usage_accounting

PROCESSES = 6
ROUNDS = 20


def _writer(bot_id: int, rounds: int, start: Any) -> None:
    """What a run's last transaction does: its llm_call rows (+ the bot's counters) and a user's message count."""
    record = SimpleNamespace(role="synthesizer", provider="ollama", model="m", tokens_in=10, tokens_out=3,
                             ttft_ms=None, latency_ms=1.0, error="")
    failed = SimpleNamespace(**{**vars(record), "error": "timeout"})
    start.wait(30)  # every process starts writing at the same moment
    for i in range(rounds):
        with session_scope() as session:
            llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None, records=[record, failed])
            usage_accounting.count_user_message(session=session, bot_id=bot_id, discord_user_id=str(i % 2))


def test_counters_are_exact_with_concurrent_writers(any_db_env):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="popular").id
    dispose_engines()  # forked children open their own connections
    ctx = multiprocessing.get_context("fork")  # no re-import per process: the test stays fast
    start = ctx.Barrier(PROCESSES)
    procs = [ctx.Process(target=_writer, args=(bot_id, ROUNDS, start)) for _ in range(PROCESSES)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    with session_scope(readonly=True) as session:
        usage = session.exec(select(UsageDaily).where(UsageDaily.bot_id == bot_id)).one()
        rows = session.exec(select(func.count()).select_from(LLMCall).where(LLMCall.bot_id == bot_id)).one()
        users = dict(session.exec(select(UserUsageDaily.discord_user_id, UserUsageDaily.messages)).all())
    runs = PROCESSES * ROUNDS
    assert rows == 2 * runs
    assert (usage.calls, usage.tokens_in, usage.tokens_out, usage.errors) == (2 * runs, 20 * runs, 6 * runs, runs)
    assert users == {"0": runs // 2, "1": runs // 2}
