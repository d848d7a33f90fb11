"""Benchmark of ``/council`` on Discord: 5 advisors on a fake LLM that takes 1 s per answer.

    .venv/bin/python bench/council.py [--rounds 5] [--delay 1.0]

A real supervisor and bot process, the fake Discord and the fake LLM (every answer, the
synthesis's too, starts after ``--delay`` seconds). Prints, from the slash command's
INTERACTION_CREATE: the first advisor's section on Discord and the complete deliberation (the
synthesis's last message), p50 and max. Targets: first section <= 1.5 s, complete <= 2.5 s
(in parallel; one after the other it would take 6 s).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fleet import Bench, wait_until  # noqa: E402 - after the path is set

FIRST_SECTION_TARGET = 1.5
COMPLETE_TARGET = 2.5


def is_synthesis(body: dict) -> bool:
    return "You chair an advisory council" in str(body.get("messages", [{}])[0].get("content", ""))


def one_round(bench: Bench, uid: int, question: str) -> tuple[float, float]:
    """``(first section, complete)`` in seconds after the command reached the bot."""
    started = time.monotonic()
    interaction = bench.discord.invoke_command(uid, "council", {"question": question})
    token = interaction["token"]
    first = bench.discord.wait_call(lambda c: c.method == "POST" and "/webhooks/" in c.path and token in c.path, 30)
    last = bench.discord.wait_call(lambda c: c.method == "POST" and token in c.path
                                   and "**Synthesis**" in str((c.json or {}).get("content", "")), 30)
    return first.time - started, last.time - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--delay", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(Path(tmp))
        try:
            from grobot.core.db import session_scope
            from grobot.core.services import council
            from tests.fakes.llm import Reply

            [bot_id] = bench.add_bots(1)
            with session_scope() as session:
                council.set_council(bot_id, session=session, enabled=True)
                advisors = len(council.advisors(bot_id, session=session))
            bench.llm.script_for(is_synthesis, Reply(json={"consensus": "Yes.", "disagreements": [],
                                                           "recommendation": "Do it.", "confidence": 80},
                                                     delay=args.delay), persistent=True)
            bench.llm.script_for(lambda body: not is_synthesis(body),
                                 Reply(text="My view, in a few words.", delay=args.delay), persistent=True)
            bench.start_supervisor()
            wait_until(lambda: bench.all_online([bot_id]), 60, "the bot to come online")
            uid = bench.discord_ids[bot_id]
            one_round(bench, uid, "warm up")  # imports of the council in the bot process
            firsts, completes = [], []
            for i in range(args.rounds):
                first, complete = one_round(bench, uid, f"Should we do thing {i}?")
                firsts.append(first)
                completes.append(complete)
            print(f"council of {advisors} advisors, fake LLM {args.delay:.1f} s per answer, {args.rounds} rounds "
                  f"(sequential would be {(advisors + 1) * args.delay:.1f} s)")
            print(f"first advisor section on Discord: p50 {statistics.median(firsts):.3f} s, max {max(firsts):.3f} s "
                  f"(target <= {FIRST_SECTION_TARGET} s)")
            print(f"complete deliberation:            p50 {statistics.median(completes):.3f} s, "
                  f"max {max(completes):.3f} s (target <= {COMPLETE_TARGET} s)")
            ok = max(firsts) <= FIRST_SECTION_TARGET and max(completes) <= COMPLETE_TARGET
            print("targets met" if ok else "TARGETS MISSED")
        finally:
            bench.close()
    os._exit(0)


if __name__ == "__main__":
    main()
