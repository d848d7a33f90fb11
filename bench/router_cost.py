"""What the Tool Router costs per message, against the LLM call it saves; and one MiniLM embedding.

    .venv/bin/python bench/router_cost.py [--messages 200]

Prints wall time and CPU time (all threads of this process) per message of the supervisor's read of
a bot's message with its memories and the router's scores (``LocalBotStore.prepare_for_bot``, both
parts, SQLite, against the bot's built-in tools): chat whose words are all far from every tool (the
memory's word filter: not embedded), the same chat embedded (the filter off, as before it), and a
request near a tool (embedded). Then how much chat the word filter spares the embedding (the
phrases of bench/tool_use.py and more chat; it must pass every request that needs a tool), and
what the routing saves: the CPU of the answering process for a plain message with one LLM call (the
router found no tool) and with the Tool Identifier's call too (what it costs without the router),
on an instant fake LLM. Then the CPU of one embedding of a chat-sized message: with the weights' products on int8
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
from typing import Any

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
    from grobot.core.agents.deps import ChainDeps
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.embeddings import MiniLMEmbedder, get_embedder
    from grobot.core.memory import local
    from grobot.core.memory.local import LocalMemory
    from grobot.core.store.run_store_db import DatabaseStore

    memory = LocalMemory()
    await memory.warm()
    store = LocalBotStore(deps=ChainDeps(store=DatabaseStore(), memory=memory))

    async def read(text: str) -> None:
        msg = IncomingMessage(bot_id=bot_id, conversation_key="guild:1", content=text, author_id="1",
                              author_name="bench", platform="discord", channel_id="1", mentions_bot=True)
        _, rest = await store.prepare_for_bot(bot_id, msg)
        if rest is not None:
            await rest

    for index in range(20):  # warm-up (the tool texts' and the words' vectors are cached after the first)
        await read(f"question number {index}")
        await read(f"what time is it in zone {index}?")
    print(f"the supervisor's read of one message, with its memories and the router's scores ({messages} messages):")
    for label, text, near in (("chat, no word near a tool (not embedded)", "question number {}", local.WORD_NEAR),
                              ("the same chat, embedded (no word filter)", "question number {}", -1.0),
                              ("a request near a tool (embedded)", "what time is it in zone {}?", local.WORD_NEAR)):
        local.WORD_NEAR, kept = near, local.WORD_NEAR
        wall, cpu = time.perf_counter(), time.process_time()
        for index in range(messages):
            await read(text.format(10_000 + hash(label) % 1000 * 1000 + index))
        local.WORD_NEAR = kept
        print(f"  {label:44} wall {1000 * (time.perf_counter() - wall) / messages:5.2f} ms   "
              f"CPU {1000 * (time.process_time() - cpu) / messages:5.2f} ms")
    await _filter_rates(memory)
    await _saved_call(bot_id, memory, messages)
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


async def _filter_rates(memory: Any) -> None:
    """How many phrases the word filter lets through to the embedding: chat, and requests that need a tool."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tool_use", ROOT / "bench" / "tool_use.py")
    assert spec is not None and spec.loader is not None
    tool_use = sys.modules["tool_use"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool_use)
    TASKS = tool_use.TASKS

    from grobot.core.agents import tool_router
    from grobot.core.tools.base import ToolSpec
    from grobot.core.tools.builtins import builtin_tools

    placeholder = object()
    specs = [t.spec for t in builtin_tools(0, store=placeholder, discord=placeholder, memory=placeholder)]
    specs += [ToolSpec(name="time__get_current_time", description="Get the current time in a time zone.",
                       input_schema={}),
              ToolSpec(name="time__convert_time", description="Convert time between timezones.", input_schema={})]
    texts = [tool_router.tool_text(s) for s in specs]
    chat = [t.text for t in TASKS if t.kind == "plain"] + MORE_CHAT
    needs = [t.text for t in TASKS if t.kind in ("tool", "clarify", "fails")]
    for label, phrases in (("chat", chat), ("requests that need a tool", needs)):
        embedded = 0
        for text in phrases:
            await memory.similarities(text, texts)
            embedded += text in memory._messages
        print(f"  the word filter embeds {embedded} of {len(phrases)} {label}")


MORE_CHAT = ["question number 12", "how are you doing?", "lol that is so funny", "I think the movie was great",
             "can you help me with my homework?", "what's the best pizza topping?", "good night everyone",
             "tell me about the french revolution", "why is the sky blue?", "write me a poem about cats",
             "what do you think of python vs rust?", "my dog is sick, what should I do?", "recommend a book",
             "hahaha", "who are you?", "do you like music?"]


async def _saved_call(bot_id: int, memory: Any, messages: int) -> None:
    """CPU of the answering process (its event loop's thread) per plain message on an instant fake LLM: one
    LLM call (the router found no tool), and two (the Tool Identifier asked too, as without the router)."""
    from grobot.core.agents import tool_router
    from grobot.core.agents.deps import ChainDeps
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.store.local import run_chain
    from grobot.core.store.run_store_db import DatabaseStore
    from tests.fakes.llm import FakeLLM, use_fake_llm

    fake = FakeLLM().start()
    use_fake_llm(fake, bot_id=bot_id)
    deps = ChainDeps(store=DatabaseStore(), memory=memory)
    catalog = await deps.catalog(bot_id)
    results = {}
    try:
        for label, candidate in (("router: no tool, 1 LLM call", tool_router.CANDIDATE_SIMILARITY),
                                 ("Tool Identifier asked too, 2 calls", -1.0)):
            tool_router.CANDIDATE_SIMILARITY, kept = candidate, tool_router.CANDIDATE_SIMILARITY
            count = max(20, messages // 4)
            cpu, wall = time.thread_time(), time.perf_counter()
            for index in range(count):
                msg = IncomingMessage(bot_id=bot_id, conversation_key=f"guild:{index}", content=f"question number {index}",
                                      author_id="1", author_name="bench", platform="discord", channel_id="1")
                result = await run_chain(msg, deps, tools=catalog)
                assert result.error is None, result.error
            results[label] = (1000 * (time.thread_time() - cpu) / count, 1000 * (time.perf_counter() - wall) / count)
            tool_router.CANDIDATE_SIMILARITY = kept
        print("what the routing saves, per plain message on an instant fake LLM (the answering process's thread):")
        for label, (cpu_ms, wall_ms) in results.items():
            print(f"  {label:44} wall {wall_ms:5.2f} ms   CPU {cpu_ms:5.2f} ms")
    finally:
        fake.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(_bench(_setup(), args.messages))


if __name__ == "__main__":
    main()
