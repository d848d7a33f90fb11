"""Web search on the demo model: how long a question that needs the web takes to be answered.

Run: ``.venv/bin/python bench/web_search.py`` (``--rounds N``, ``--verbose``). A bot with its web
tools on answers questions that ask to search the web, through the product's whole path
(``run_chain`` on a database, the Tool Router with the worker's embedder, the built-in
``web_search`` through the ddgs library with the user's words as its query, the Synthesizer) on the embedded
demo model (SmolLM2-135M in llama.cpp). The web is a fake on 127.0.0.1 (``tests/fakes/web.py``):
DuckDuckGo's HTML endpoint behind an HTTPS proxy, as the library reaches it; nothing leaves the
machine.

Printed: per question, the seconds from the message to the answer, whether web_search was called
and its results reached the model; then the p50 and p95 of the time to the answer (the target:
p50 <= 10 s on this 2-core machine) and the share of questions that searched.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUESTIONS = [
    ("Search the web for the GroBot 2.0 release date.", "https://news.example/grobot-2"),
    ("Search the web for the weather in Paris today.", "https://news.example/paris-weather"),
    ("Search the web: who won the 2026 chess olympiad?", "https://news.example/chess-olympiad"),
    ("Can you search the web for the price of a Raspberry Pi 5?", "https://news.example/raspberry-pi-5"),
    ("Please search the web for the latest Python release.", "https://news.example/python-release"),
]
TARGET_P50_SECONDS = 10.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _setup(tmp: Path, web: Any) -> None:
    os.environ["GROBOT_DATA_DIR"] = str(tmp)
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'grobot.db'}"
    os.environ.setdefault("GROBOT_SECRET_KEY", "bench-secret-key")
    os.environ.pop("OLLAMA_HOST", None)
    os.environ["GROBOT_WEB_PROXY"] = web.proxy_url
    os.environ["GROBOT_WEB_CA_FILE"] = str(web.ca_file)
    from grobot.core import migrations
    from grobot.core.settings import get_settings

    get_settings.cache_clear()
    migrations.upgrade(os.environ["DATABASE_URL"])


async def _run(args: argparse.Namespace, web: Any) -> list[tuple[float, bool, bool]]:
    from sqlmodel import select

    from grobot.core.agents.chain import wait_for_background
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.db import session_scope
    from grobot.core.llm import embedded
    from grobot.core.llm.embedded_servers import EmbeddedServers
    from grobot.core.llm.registry import close_all
    from grobot.core.memory.local import LocalMemory
    from grobot.core.models import LLMCall
    from grobot.core.services import bots
    from grobot.core.store.local import local_deps, run_chain
    from tests.fakes.web import Hit

    hits = [Hit(f"Result {i} about the question", url, f"The answer to the question, from source {i}.")
            for i, (_, url) in enumerate(QUESTIONS)]
    servers = EmbeddedServers(parallel=1)
    embedded.set_local_directory(servers)
    info = await servers.ensure(embedded.DEMO_MODEL, 4096)
    if info.status != "running":
        raise SystemExit(f"the embedded model cannot run: {info.error}")
    memory = LocalMemory()
    await memory.warm()
    deps = local_deps(memory)
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Searcher", personality="You are a helpful assistant.",
                                 web_search=True).id or 0
    outcomes: list[tuple[float, bool, bool]] = []
    try:
        for round_no in range(args.rounds):
            for index, (question, url) in enumerate(QUESTIONS):
                web.hits = [hits[index]] + hits[:index] + hits[index + 1:]  # the page that answers ranks first
                events: list[Any] = []

                async def sink(event: Any) -> None:
                    events.append(event)

                msg = IncomingMessage(bot_id=bot_id, conversation_key=f"bench:web:{round_no}:{index}", content=question,
                                      author_id="42", author_name="ada", platform="test_chat")
                started = time.perf_counter()
                result = await run_chain(msg, deps, sink=sink)
                seconds = time.perf_counter() - started
                await wait_for_background(timeout=120)
                searched = any(e.kind.value == "tool_call" and e.data.get("name") == "web_search" for e in events)
                found = any(e.kind.value == "tool_result" and url in str(e.data.get("content")) for e in events)
                outcomes.append((seconds, searched, found))
                if args.verbose:
                    with session_scope(readonly=True) as session:
                        calls = session.exec(select(LLMCall).where(LLMCall.run_id == result.run_id)
                                             .order_by(LLMCall.id)).all() if result.run_id else []
                    took = {e.data.get("name"): e.data.get("duration_ms") for e in events
                            if e.kind.value == "tool_result"}
                    stages = ", ".join([f"{c.agent_role} {c.latency_ms / 1000:.2f} s ({c.tokens_in}/{c.tokens_out} tok)"
                                        for c in calls if c.agent_role != "archivist"]
                                       + [f"{name} {float(ms or 0) / 1000:.2f} s" for name, ms in took.items()])
                    print(f"{seconds:6.2f} s  searched={searched!s:5} results={found!s:5}  {question}\n"
                          f"         {stages}\n         -> {(result.text or result.error or '')[:80]!r}", flush=True)
    finally:
        await deps.aclose()
        await close_all()
        memory.close()
        await servers.stop_all()
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="times each question is asked")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    from tests.fakes.web import FakeWeb

    with FakeWeb() as web, tempfile.TemporaryDirectory(prefix="grobot-bench-web-") as tmp:
        _setup(Path(tmp), web)
        outcomes = asyncio.run(_run(args, web))
    seconds = [s for s, _, _ in outcomes]
    searched = sum(1 for _, s, _ in outcomes if s)
    found = sum(1 for _, _, f in outcomes if f)
    print(f"Web search on the demo model (fake web on 127.0.0.1), {len(outcomes)} questions: "
          f"answer p50 {_pct(seconds, 0.5):.2f} s, p95 {_pct(seconds, 0.95):.2f} s, mean {statistics.mean(seconds):.2f} s "
          f"(target p50 <= {TARGET_P50_SECONDS:g} s); web_search called {searched}/{len(outcomes)}, "
          f"its results reached the model {found}/{len(outcomes)}; {len(web.searches)} searches reached the fake")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
