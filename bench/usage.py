"""What the usage limits cost per message: the limit read and the two counter upserts.

    .venv/bin/python bench/usage.py [--runs N] [--postgres-url URL]

Prints, as the best of 5 interleaved rounds of N, in CPU time of this process (robust on a loaded
machine; SQLite runs in-process, a PostgreSQL server's time is not counted): the run preload
(``load_for_run``: bot, LLM settings, history, user knowledge, and the limits) with and without
the limit read, and the run's write transactions (``llm_call`` rows, user message) with and
without the counter upserts.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

logger = logging.getLogger(__name__)


def best_ms(fn: Callable[[], Any], runs: int, rounds: int = 5) -> float:
    """The best mean of ``rounds`` rounds of ``runs`` calls, in CPU ms per call (this process's CPU time:
    robust when other processes load the machine; SQLite work is in-process, so it is counted)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(runs):
            fn()
        best = min(best, (time.process_time() - start) / runs)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--postgres-url", default=None)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="grobot-bench-usage-"))
    os.environ["GROBOT_DATA_DIR"] = str(tmp)
    os.environ["DATABASE_URL"] = args.postgres_url or f"sqlite:///{tmp}/bench.db"

    from grobot.core import migrations
    from grobot.core.agents import chain
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.db import session_scope
    from grobot.core.models import Conversation, Message
    from grobot.core.services import bots, conversations, llm_calls, usage_accounting, usage_limits

    migrations.upgrade()
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="bench", daily_token_limit=10**9).id
        conv = Conversation(bot_id=bot_id, key="guild:1")
        session.add(conv)
        session.flush()
        for i in range(20):
            session.add(Message(conversation_id=conv.id, role="user" if i % 2 == 0 else "assistant", content=f"m{i}"))
    msg = IncomingMessage(bot_id=bot_id, conversation_key="guild:1", content="hi", author_id="42", author_name="a",
                          platform="discord", mentions_bot=True)
    record = SimpleNamespace(role="synthesizer", provider="ollama", model="m", tokens_in=100, tokens_out=20,
                             ttft_ms=1.0, latency_ms=5.0, error="")

    def preload() -> None:
        with session_scope(readonly=True) as session:
            chain.load_for_run(msg, session=session)

    def calls_write() -> None:
        with session_scope() as session:
            llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None, records=[record, record])

    def user_message_write() -> None:
        with session_scope() as session:
            conversations.insert_user_message(session=session, conversation_id=conv.id, content="x", author_id="42",
                                              author_name="a", discord_message_id=None, attachments=None)
            usage_accounting.count_user_message(session=session, bot_id=bot_id, discord_user_id="42")

    steps = {"run preload": preload, "llm_call write (2 calls)": calls_write, "user message write": user_message_write}
    real = (usage_limits.read_state, llm_calls.add_llm_usage, usage_accounting.count_user_message)

    def limits_off() -> None:  # the same code without the usage limits: no limit read, no counters
        usage_limits.read_state = lambda **kw: None  # type: ignore[assignment,misc]
        llm_calls.add_llm_usage = lambda **kw: None  # type: ignore[assignment]
        usage_accounting.count_user_message = lambda **kw: None  # type: ignore[assignment]

    def limits_on() -> None:
        usage_limits.read_state, llm_calls.add_llm_usage, usage_accounting.count_user_message = real

    with_limits = {k: float("inf") for k in steps}
    without = dict(with_limits)
    for _ in range(5):  # interleaved rounds: a loaded machine slows both alike
        for name, fn in steps.items():
            limits_on()
            with_limits[name] = min(with_limits[name], best_ms(fn, args.runs, rounds=1))
            limits_off()
            without[name] = min(without[name], best_ms(fn, args.runs, rounds=1))
    limits_on()
    backend = "PostgreSQL" if args.postgres_url else "SQLite"
    print(f"usage limits cost per message ({backend}, CPU ms per step, best of 5 x {args.runs})")
    print(f"{'step':28} {'without':>9} {'with':>9} {'added':>9}")
    for key in with_limits:
        print(f"{key:28} {without[key]:9.3f} {with_limits[key]:9.3f} {with_limits[key] - without[key]:9.3f}")


if __name__ == "__main__":
    main()
