"""What the Tool Router costs the supervisor per message: its read for a message with and without the
message's scores against the bot's tools, and one MiniLM embedding on its own.

    .venv/bin/python bench/router_cost.py [--messages 200]

Prints wall time and CPU time (all threads of this process) per message for the supervisor's
``LocalBotStore.for_message`` (SQLite, the bot's built-in tools as the texts), with and without
routing, and the CPU of one embedding of a chat-sized message: with the weights' products on int8
(as GroBot runs the model) and on float32 (as the model file has them), with the lowest cosine
between the two vectors of a message; and one embedding of a message that comes after a pause of
0.25 s, as chat does (slower than back to back on this class of machine), alone and while another
thread runs Python (the supervisor's database read beside it): the whole embedding, and the model's
run alone (which runs without the GIL).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAUSE, PAUSED = 0.25, 20
sys.path.insert(0, str(ROOT))


def _setup() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="grobot-router-bench-"))
    os.environ["GROBOT_DATA_DIR"] = str(tmp)
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'grobot.db'}"
    os.environ.setdefault("GROBOT_SECRET_KEY", "bench-secret-key")
    from grobot.core import migrations
    from grobot.core.db import session_scope
    from grobot.core.services import bots
    from grobot.core.settings import get_settings

    get_settings.cache_clear()
    migrations.upgrade(os.environ["DATABASE_URL"])
    with session_scope() as session:
        return bots.create_bot(session=session, name="Router", personality="p").id or 0


async def _bench(bot_id: int, messages: int) -> None:
    from bot_worker.local_store import LocalBotStore
    from grobot.core.agents import tool_router
    from grobot.core.agents.deps import ChainDeps
    from grobot.core.agents.run_store_db import DatabaseStore
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.memory.embeddings import MiniLMEmbedder, get_embedder
    from grobot.core.memory.local import LocalMemory
    from grobot.core.tools.builtins import builtin_tools

    texts = [tool_router.tool_text(t.spec) for t in builtin_tools(bot_id, store=DatabaseStore())]
    memory = LocalMemory()
    await memory.warm()
    store = LocalBotStore(deps=ChainDeps(store=DatabaseStore(), memory=memory))

    async def read(index: int, route: bool) -> None:
        msg = IncomingMessage(bot_id=bot_id, conversation_key="guild:1", content=f"ping number {index}", author_id="1",
                              author_name="bench", platform="discord", channel_id="1", mentions_bot=True)
        await store.for_message(bot_id, msg, route_texts=texts if route else [])

    for index in range(20):  # warm-up (the tool texts' vectors are cached after the first)
        await read(index, True)
    print(f"the supervisor's read of one message ({messages} messages, {len(texts)} tool texts):")
    for route in (False, True):
        wall, cpu = time.perf_counter(), time.process_time()
        for index in range(messages):
            await read(10_000 * (2 if route else 1) + index, route)
        print(f"  {'with' if route else 'without'} the router's scores: "
              f"wall {1000 * (time.perf_counter() - wall) / messages:5.2f} ms   "
              f"CPU {1000 * (time.process_time() - cpu) / messages:5.2f} ms")
    print("one MiniLM embedding of a 6-token message (CPU) and its agreement with the float32 products:")
    float_embedder = MiniLMEmbedder(integer=False)
    floating = float_embedder.embed([f"ping number {index}" for index in range(messages)])
    for name, embedder in (("int8 products (GroBot)", get_embedder()), ("float32 products", float_embedder)):
        cpu = time.process_time()
        vectors = [embedder.embed([f"ping number {index}"])[0] for index in range(messages)]
        cosine = min(sum(a * b for a, b in zip(v, f)) for v, f in zip(vectors, floating))
        print(f"  {name:24} CPU {1000 * (time.process_time() - cpu) / messages:5.2f} ms   lowest cosine {cosine:.4f}")
    embedder, took = get_embedder(), []
    for index in range(PAUSED):  # as chat arrives, not back to back
        await asyncio.sleep(PAUSE)
        started = time.perf_counter()
        embedder.embed([f"pong number {index}"])
        took.append(time.perf_counter() - started)
    print(f"  int8, one message every {PAUSE} s: p50 {1000 * statistics.median(took):5.2f} ms   "
          f"(n={PAUSED}, wall)")
    for what, work in (("embed(): tokens, model and pooling", lambda text: embedder.embed([text])),
                       ("the model's run alone (no GIL)", lambda text: embedder.run_model(*embedder.inputs([text])))):
        alone, beside = _beside_python(work)
        print(f"  int8, one message every {PAUSE} s, {what}: p50 {alone:5.2f} ms alone, {beside:5.2f} ms while "
              f"another thread runs Python (as the supervisor reads the database) (n={PAUSED}, wall)")
    memory.close()


def _beside_python(work: Callable[[str], object]) -> tuple[float, float]:
    """p50 ms of ``work`` on a message (on its own thread, after a pause) alone, and while this thread runs
    Python for 10 ms (the GIL handed over every 0.2 ms). For the model's run alone, which holds no GIL, a
    slower time beside Python is the machine's: its two vCPUs do not run both at full speed."""
    import threading

    results: dict[bool, list[float]] = {False: [], True: []}
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    for index in range(2 * PAUSED):
        busy = bool(index % 2)
        time.sleep(PAUSE)
        span: list[float] = []

        def one(text: str = f"pong number {index}") -> None:
            span.append(time.perf_counter())
            work(text)
            span.append(time.perf_counter())

        thread = threading.Thread(target=one)
        thread.start()
        if busy:
            end = time.perf_counter() + 0.010
            while time.perf_counter() < end:  # Python work, like a database read's
                pass
        thread.join()
        results[busy].append(1000 * (span[1] - span[0]))
    sys.setswitchinterval(interval)
    return statistics.median(results[False]), statistics.median(results[True])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(_bench(_setup(), args.messages))


if __name__ == "__main__":
    main()
