"""Many processes bump the same usage counters at once: not one call, token or message is lost."""

from __future__ import annotations

import subprocess
import sys

from sqlmodel import func, select

from grobot.core.db import session_scope
from grobot.core.models import LLMCall, UsageDaily, UserUsageDaily
from grobot.core.services import bots

WRITER = r"""
import sys
from types import SimpleNamespace
from grobot.core.db import session_scope
from grobot.core.services import llm_calls, usage_accounting
worker, rounds, bot_id = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
record = SimpleNamespace(role="synthesizer", provider="ollama", model="m", tokens_in=10, tokens_out=3, ttft_ms=None,
                         latency_ms=1.0, error="")
failed = SimpleNamespace(**{**vars(record), "error": "timeout"})
for i in range(rounds):
    # What a run's last transaction does: its llm_call rows (+ the bot's counters) and the user's message count.
    with session_scope() as session:
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None, records=[record, failed])
        usage_accounting.count_user_message(session=session, bot_id=bot_id, discord_user_id=str(i % 2))
print("ok")
"""

PROCESSES = 5
ROUNDS = 20


def test_counters_are_exact_with_concurrent_writers(any_db_env):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="popular").id
    env = any_db_env.environ()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(w), str(ROUNDS), str(bot_id)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(PROCESSES)]
    results = [p.communicate(timeout=240) for p in procs]
    failures = [err for (out, err), p in zip(results, procs) if p.returncode != 0]
    assert not failures, failures[0]
    with session_scope(readonly=True) as session:
        usage = session.exec(select(UsageDaily).where(UsageDaily.bot_id == bot_id)).one()
        rows = session.exec(select(func.count()).select_from(LLMCall).where(LLMCall.bot_id == bot_id)).one()
        users = dict(session.exec(select(UserUsageDaily.discord_user_id, UserUsageDaily.messages)).all())
    runs = PROCESSES * ROUNDS
    assert rows == 2 * runs
    assert (usage.calls, usage.tokens_in, usage.tokens_out, usage.errors) == (2 * runs, 20 * runs, 6 * runs, runs)
    assert users == {"0": runs // 2, "1": runs // 2}
