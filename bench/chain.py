"""Benchmark of the agent chain with an instant fake LLM: LLM calls and platform time per message.

Run: ``.venv/bin/python bench/chain.py [--runs N] [--postgres | --postgres-url URL]``

For each scenario (plain message without tools, plain message with tools, one tool, one
tool whose arguments need the Parameter Extractor, three parallel tools, clarification) it
prints the LLM calls per message and times per message. The fake LLM runs in its own
process and answers at once, so:

- "LLM ms/call": the LLM's own time as the chain measures it (HTTP round trip to the fake);
- "platform ms/call": everything else GroBot spends on the message (database reads and
  writes, prompts, parsing, events), tools excluded, divided by the LLM calls;
- "all-in ms/call": both together.

Targets: 1 call for a plain message, with or without tools (the Tool Router decides "no tool"
without an LLM call); <= 4 for one tool; platform <= 10 ms per LLM call.

``--delay 0.3`` makes the fake wait 300 ms before every answer and prints, per scenario, the
first visible reply (first token) against one LLM call (target for a plain message: <= 1.15 x).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

logger = logging.getLogger(__name__)


def _setup_env(tmp: Path, database_url: str | None) -> None:
    os.environ["GROBOT_DATA_DIR"] = str(tmp)
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{tmp / 'grobot.db'}"
    os.environ.setdefault("GROBOT_SECRET_KEY", "bench-secret-key")
    from grobot.core import migrations
    from grobot.core.settings import get_settings

    get_settings.cache_clear()
    migrations.upgrade(os.environ["DATABASE_URL"])


SCENARIOS = [
    # (name, catalog, model = the fake's script, message)
    ("plain message, bot without tools", "none", "plain", "ping"),
    ("plain message, bot with tools", "one", "plain", "ping"),
    ("one tool", "one", "one-tool", "What's the weather like in Paris?"),
    ("one tool, arguments extracted", "one", "extract", "What's the weather like in Paris?"),
    ("three parallel tools", "three", "three-tools", "What's the weather like in three places?"),
    ("clarification", "one", "clarify", "What's the weather like?"),
]


def _scripted_reply(body: dict):  # type: ignore[no-untyped-def]
    """The fake LLM's answer for a request: chosen by the model name (the scenario) and the request."""
    from tests.fakes.llm import Reply

    scenario = body.get("model", "")
    schema = body.get("format") or ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    last = str((body.get("messages") or [{}])[-1].get("content", ""))
    if "tool" in props:  # the Tool Identifier
        if "Tool results so far" in last or scenario == "plain":
            return Reply(json={"tool": "none"}, chunks=1)
        choice = {
            "one-tool": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            "extract": [{"name": "get_weather"}],
            "clarify": [{"name": "get_weather", "arguments": {}}],
            "three-tools": [{"name": f"weather_{n}", "arguments": {}} for n in "abc"],
        }[scenario]
        return Reply(json={"reason": "needed", "tools": choice}, chunks=1)
    if "arguments" in props:  # the Parameter Extractor
        if scenario == "clarify":
            return Reply(json={"arguments": {}, "missing": ["city"], "question": "Which city?"}, chunks=1)
        return Reply(json={"arguments": {"city": "Paris"}}, chunks=1)
    return Reply(text="It is sunny in Paris today, with a light breeze.", chunks=3)


def _serve(conn, delay: float) -> None:  # type: ignore[no-untyped-def]
    """Child process: a fake LLM answering by script (so it does not share our CPU time slice)."""
    from tests.fakes.llm import FakeLLM

    class ScenarioLLM(FakeLLM):
        def _next_reply(self, body):  # type: ignore[no-untyped-def]
            reply = _scripted_reply(body)
            reply.delay = delay
            return reply

    fake = ScenarioLLM().start()
    conn.send(fake.url)
    conn.recv()  # until the parent says stop
    fake.stop()


async def _bench(runs: int, url: str) -> list[tuple[str, float, float, float, float, float, float]]:
    from grobot.core.agents.chain import wait_for_background
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.db import session_scope
    from grobot.core.services import bots, llm_settings
    from grobot.core.store.local import run_chain
    from tests.fakes.llm import FakeToolCatalog

    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

    async def weather(city: str) -> str:
        return f"sunny in {city}"

    async def instant() -> str:
        return "ok"

    catalogs = {"none": FakeToolCatalog(), "one": FakeToolCatalog().add("get_weather", weather, schema=city, read_only=True),
                "three": FakeToolCatalog()}
    for name in ("a", "b", "c"):
        catalogs["three"].add(f"weather_{name}", instant, read_only=True)
    results = []
    for index, (name, catalog_name, scenario, text) in enumerate(SCENARIOS):
        with session_scope() as session:
            bot_id = bots.create_bot(session=session, name=f"Bench{index}", personality="You are a benchmark bot.").id
            for category in ("decision", "tools", "output"):
                llm_settings.set_llm(session=session, category=category, bot_id=bot_id, provider="ollama", base_url=url,
                                     model=scenario)
        totals, calls, per_call, outside, llm, first = [], [], [], [], [], []
        for i in range(runs + 3):  # three warm-up runs
            msg = IncomingMessage(bot_id=bot_id, conversation_key=f"guild:{index}", content=text,
                                  author_id="1", author_name="bench", platform="discord", channel_id=str(index),
                                  mentions_bot=True)
            started = time.perf_counter()
            result = await run_chain(msg, tools=catalogs[catalog_name])
            total = (time.perf_counter() - started) * 1000
            assert result.error is None, result.error
            if i < 3:
                continue
            tools_ms = result.timings.get("tools_ms", 0.0)
            totals.append(total)
            calls.append(result.llm_calls)
            per_call.append((total - tools_ms - result.timings["llm_ms"]) / max(1, result.llm_calls))
            outside.append((total - tools_ms) / max(1, result.llm_calls))
            llm.append(result.timings["llm_ms"] / max(1, result.llm_calls))
            first.append(result.timings.get("first_token_ms", total))
        await wait_for_background()
        results.append((name, statistics.mean(calls), statistics.median(totals), statistics.median(per_call),
                        statistics.quantiles(per_call, n=10)[-1], statistics.median(outside), statistics.median(llm),
                        statistics.median(first)))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--postgres-url", default=None, help="bench on this (empty) PostgreSQL database instead of SQLite")
    parser.add_argument("--postgres", action="store_true", help="start a throwaway PostgreSQL server and bench on it")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds the fake LLM waits before every answer")
    args = parser.parse_args()
    cluster = None
    if args.postgres and not args.postgres_url:
        from tests.pg import PgCluster

        cluster = PgCluster().start()
        args.postgres_url = cluster.create_database()
    logging.basicConfig(level=logging.WARNING)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    server = ctx.Process(target=_serve, args=(child, args.delay), daemon=True)
    server.start()
    try:
        url = parent.recv()
        with tempfile.TemporaryDirectory() as tmp:
            _setup_env(Path(tmp), args.postgres_url)
            results = asyncio.run(_bench(args.runs, url))
            from grobot.core.db import dispose_engines

            dispose_engines()
    finally:
        parent.send("stop")
        server.join(timeout=10)
        if cluster is not None:
            cluster.stop()
    backend = "PostgreSQL" if args.postgres_url else "SQLite"
    kind = f"a fake LLM that waits {args.delay * 1000:.0f} ms before every answer" if args.delay else "an instant fake LLM"
    print(f"Agent chain with {kind} ({backend}, {args.runs} messages per scenario, medians)")
    print(f"{'scenario':34} {'LLM calls':>9} {'ms/message':>11} {'LLM ms/call':>12} {'platform ms/call':>17} {'p90':>6} "
          f"{'all-in ms/call':>15} {'first reply ms':>15} {'x one call':>10}")
    for name, calls, total, per_call, p90, all_in, llm, first in results:
        print(f"{name:34} {calls:9.1f} {total:11.1f} {llm:12.2f} {per_call:17.2f} {p90:6.2f} {all_in:15.2f} "
              f"{first:15.1f} {first / llm if llm else 0:10.2f}")
    worst = max(r[3] for r in results)
    print(f"targets: plain 1 call with or without tools (first reply <= 1.15 x one call); one tool <= 4; "
          f"platform <= 10 ms per LLM call "
          f"(worst scenario here: {worst:.2f} ms per call)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
