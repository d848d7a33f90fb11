"""Benchmark of parallel MCP tool calls through the executor (issue 16).

    .venv/bin/python bench/mcp_parallel.py [--runs 3]

A real MCP server over stdio (``python -m tests.fakes.mcp_servers flaky``) whose tools
``lookup_a``, ``lookup_b``, ``lookup_c`` carry no annotations and take 1 s each, and ``wipe``
(``destructiveHint``) 1 s too. The executor runs the calls the model chose in one round, through
the bot's catalog and the process's MCP hub (session already open), as a bot does. Prints the
median wall time of:

- three unannotated tools: target < 1.5 s (before issue 16 they ran one after another: 3 s);
- the same three marked ``writes`` by the admin (``bot mcp ... --writes``): one after another;
- three unannotated tools and a destructive one: the three together, then the destructive one alone.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grobot.core.agents.events import RunRecorder  # noqa: E402
from grobot.core.agents.executor import PlannedCall, execute  # noqa: E402
from grobot.core.agents.run import Run  # noqa: E402
from grobot.core.agents.types import BotConfig, IncomingMessage  # noqa: E402
from grobot.core.store.run_store_db import DatabaseStore  # noqa: E402
from grobot.core.tools.catalog import Link, catalog_for_bot  # noqa: E402
from grobot.core.tools.mcp_hub import McpHub  # noqa: E402
from tests.fakes.mcp_servers import stdio_config  # noqa: E402

TARGET_SECONDS = 1.5


def _run() -> Run:
    msg = IncomingMessage(bot_id=1, conversation_key="test:bench", content="bench", author_id="1", author_name="bench",
                          platform="test_chat")
    bot = BotConfig(id=1, name="bench", personality="", agent_mode="native", max_tool_rounds=5)
    # No acknowledgement (it would ask an LLM): only the tools are measured.
    return Run(msg=msg, bot=bot, llms={}, recorder=RunRecorder(None, None),  # type: ignore[arg-type]
               acknowledge_after=3600.0)


async def _time(hub: McpHub, names: list[str], settings: dict[str, dict[str, str]], runs: int) -> tuple[float, list[str]]:
    """Median seconds to execute ``names`` in one round, and the calls' errors (none expected)."""
    link = Link(config=stdio_config("bench", "flaky"), name="bench", allowed_tools=None, timeout_seconds=30.0,
                tool_settings=settings)
    catalog = await catalog_for_bot(1, store=DatabaseStore(), hub=hub, links=[link])
    specs = {s.name: s for s in await catalog.list_tools()}
    times, errors = [], []
    for _ in range(runs):
        calls = [PlannedCall(id=f"c{i}", name=f"bench__{name}", arguments={"seconds": 1.0}) for i, name in enumerate(names)]
        started = time.perf_counter()
        results = await execute(_run(), calls, specs, catalog)
        times.append(time.perf_counter() - started)
        errors += [r.content for r in results if r.is_error]
    return statistics.median(times), errors


async def main(runs: int) -> int:
    hub = McpHub()
    try:
        await hub.list_tools(stdio_config("bench", "flaky"))  # the session is open before the first message
        three = ["lookup_a", "lookup_b", "lookup_c"]
        parallel, errors = await _time(hub, three, {}, runs)
        marked, more = await _time(hub, three, {name: {"access": "writes"} for name in three}, runs)
        mixed, rest = await _time(hub, three + ["wipe"], {}, runs)
    finally:
        await hub.aclose()
    errors += more + rest
    ok = parallel < TARGET_SECONDS and not errors
    print(f"== MCP tool calls through the executor (stdio server, 1 s per tool, median of {runs})")
    print(f"three unannotated tools:                      {parallel:5.2f} s   target < {TARGET_SECONDS:g} s "
          f"(one after another before: 3 s): {'PASS' if parallel < TARGET_SECONDS else 'FAIL'}")
    print(f"the same three marked writes by the admin:    {marked:5.2f} s   (one after another)")
    print(f"three unannotated + one destructive:          {mixed:5.2f} s   (the three together, then the destructive one)")
    for error in errors:
        print(f"error: {error}")
    print("\nall targets met" if ok else "\nSOME TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    logging.basicConfig(level=logging.WARNING)
    sys.exit(asyncio.run(main(parser.parse_args().runs)))
