"""How many messages cost the Archivist's LLM call, and whether the ones worth keeping still do.

    .venv/bin/python bench/archivist_gate.py [--model N]

After each answer the Archivist may make one more LLM call, on the model that answers the next
message, to keep notes and memories (:mod:`grobot.core.agents.archivist`). The rule in front of it
(:func:`grobot.core.agents.worth_keeping.worth_a_look`) decides whether that call is made. This
bench runs the rule, and the rule it replaced (``_before`` below, kept verbatim), on four splits of
Discord messages marked "worth keeping" or not (``bench/archivist_gate_suite``): the tuning split
the rule was written on, a held-out split written with it and never tuned on, a fresh split written
by someone who never saw the rule (whose misses then taught the rule the states of the moment: a
tuning split since), and a second fresh split written blind after that, never looked at. Per split
it prints the calls per 100 messages, how many of the messages worth keeping are still looked at,
and how many calls go to messages that hold nothing to keep. A bot with a memory is assumed (every
bot the worker runs has one).

``--model N``: also runs the Archivist's real call on the demo model (SmolLM2-135M in llama.cpp)
for up to N messages of the held-out and fresh2 splits the new rule no longer looks at, and for up
to N it still looks at and should: how long a call keeps the model busy, and what it would have
stored (after the Archivist's own support check) from the messages it no longer sees.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.archivist_gate_suite.fresh import FRESH
from bench.archivist_gate_suite.fresh2 import FRESH2
from bench.archivist_gate_suite.messages import HELD_OUT, TUNING
from grobot.core.agents.worth_keeping import SELF_STATEMENT, worth_a_look

SPLITS = {"tuning": TUNING, "held-out": HELD_OUT, "fresh": FRESH, "fresh2 (blind)": FRESH2}

_SMALL_TALK_BEFORE = re.compile(r"^\W*(hi|hello|hey|thanks|thank you|ok|okay|yes|no|lol|bye|good (morning|night))\b",
                                re.IGNORECASE)


def _before(user_text: str, *, with_memory: bool) -> bool:
    """The rule before (until commit 10d4556): any statement of four words or more that is not a question
    or small talk."""
    if SELF_STATEMENT.search(user_text):
        return True
    text = user_text.strip()
    return (with_memory and len(text.split()) >= 4 and not text.endswith("?")
            and not _SMALL_TALK_BEFORE.match(text))


def counts(split: list[tuple[str, bool]], rule: Any) -> tuple[int, int, int]:
    """(calls, messages worth keeping looked at, calls on messages with nothing to keep)."""
    looks = [(rule(text, with_memory=True), keep) for text, keep in split]
    return (sum(look for look, _ in looks), sum(look and keep for look, keep in looks),
            sum(look and not keep for look, keep in looks))


def print_rules() -> None:
    print(f"{'split':15} {'messages':>8} {'worth keeping':>13}   {'calls per 100 (before -> now)':>30}   "
          f"{'worth keeping looked at':>24}   {'calls on nothing to keep':>24}")
    for name, split in SPLITS.items():
        keep = sum(k for _, k in split)
        old, new = counts(split, _before), counts(split, worth_a_look)
        per100 = [100 * c[0] / len(split) for c in (old, new)]
        print(f"{name:15} {len(split):8} {keep:13}   {per100[0]:14.0f} -> {per100[1]:<13.0f}   "
              f"{old[1]:>9}/{keep} -> {new[1]}/{keep:<8}   {old[2]:>11} -> {new[2]:<10}")


async def model_calls(limit: int) -> None:
    """The Archivist's real call on the demo model for messages the rule skips and for messages it keeps."""
    from grobot.core.agents import archivist
    from grobot.core.llm import embedded
    from grobot.core.llm.effective import EffectiveLLM
    from grobot.core.llm.embedded_servers import EmbeddedServers
    from grobot.core.llm.registry import close_all

    unseen = [pair for pairs in itertools.zip_longest(HELD_OUT, FRESH2) for pair in pairs if pair]  # both splits in turn
    skipped = [t for t, k in unseen if not k and _before(t, with_memory=True) and not worth_a_look(t, with_memory=True)]
    kept = [t for t, k in unseen if k and worth_a_look(t, with_memory=True)]
    servers = EmbeddedServers(parallel=1)
    embedded.set_local_directory(servers)
    info = await servers.ensure(embedded.DEMO_MODEL, embedded.DEMO_CONTEXT)
    if info.status != "running":
        raise SystemExit(f"the embedded model cannot run: {info.error}")
    llm = EffectiveLLM(category="decision", provider=embedded.PROVIDER, base_url=info.url, model=embedded.DEMO_MODEL,
                       context_window=embedded.DEMO_CONTEXT, temperature=0.0, api_key=None, fallback_model=None,
                       supports_images=False, source="builtin")

    class Store:
        def __init__(self) -> None:
            self.notes: list[str] = []

        async def save_calls(self, bot_id: int, run_id: int | None, records: list[Any], notes: list[Any]) -> None:
            self.notes.extend(text for _, text, _ in notes)

    class Memory:  # any memory but the no-op one: the Archivist then asks for memories too
        pass

    try:
        for label, texts in (("no longer looked at (nothing to keep)", skipped[:limit]),
                             ("still looked at (worth keeping)", kept[:limit])):
            seconds, stored = [], 0
            examples: list[str] = []
            for text in texts:
                store = Store()
                exchange = archivist.Exchange(bot_id=1, bot_name="bench", run_id=None, author_id="1",
                                              author_name="alice", conversation_key="bench", user_text=text)
                began = time.perf_counter()
                memories = await archivist._review(exchange, store, llm, [], with_memory=True)
                seconds.append(time.perf_counter() - began)
                found = list(dict.fromkeys([m for m, _ in memories] + store.notes))  # as stored: no repeats
                stored += len(found)
                examples += [f"{text!r} -> {m!r}" for m in found]
            print(f"\nthe Archivist's call on the demo model, {len(texts)} messages {label}:")
            print(f"  model time per call: p50 {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s; "
                  f"notes and memories it kept: {stored}")
            for example in examples[:8]:
                print(f"    {example[:160]}")
    finally:
        await close_all()
        await servers.stop_all()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=int, default=0, metavar="N",
                        help="also run the Archivist's call on the demo model for N messages of each kind")
    args = parser.parse_args()
    print_rules()
    if args.model:
        with tempfile.TemporaryDirectory(prefix="grobot-archivist-") as tmp:
            os.environ.setdefault("GROBOT_DATA_DIR", tmp)  # the llama.cpp server's logs
            asyncio.run(model_calls(args.model))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
