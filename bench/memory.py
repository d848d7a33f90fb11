"""Benchmark of long-term memory through the supervisor's link (its ``memory`` group).

Run: ``.venv/bin/python bench/memory.py [--memories 10000] [--queries 200]``

It starts a real supervisor (``python -m bot_worker``, no bots) in a temporary data dir
and prints:

- supervisor RSS before the first memory call (embedder not loaded) and after it;
- embed+add latency of one memory through the blocking admin client (the web app's, the CLI's:
  one connection per call) (p50/p95), and the bulk fill rate;
- query latency (embed + Chroma + link) p50/p95 with ``--memories`` stored, through a bot's
  client (one link connection, ``BotLinkClient.memory()``; here with the admin token);
- the retrieval overhead the chain pays per message (fake LLM answering at once):
  run with the supervisor's memory vs with no memory, mean and p95 difference;
- the RSS of a bot-like process (bot code imported, one retrieval through
  ``RemoteMemory`` over its link) against the same process without memory: the client adds no model.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

logger = logging.getLogger(__name__)

SUBJECTS = ["Alice", "Bob", "Carol", "Dan", "Erin", "Finn", "Gus", "Hana", "Ivo", "Jade"]
TOPICS = ["green tea", "the Friday deploy", "jazz records", "the cello", "night shifts", "a red boat",
          "the launch plan", "rock climbing", "the office wifi", "pancake recipes", "the Lyon trip", "chess openings"]
VERBS = ["loves", "decided to drop", "asked about", "prefers", "is worried about", "wants to plan", "keeps mentioning"]


def sentence(rng: random.Random, index: int) -> str:
    return (f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(TOPICS)} "
            f"(note {index}, day {rng.randint(1, 28)}, priority {rng.randint(1, 5)})")


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def ms(values: list[float]) -> str:
    return f"p50 {1000 * pct(values, 0.5):7.2f} ms   p95 {1000 * pct(values, 0.95):7.2f} ms"


def setup(tmp: Path) -> None:
    os.environ["GROBOT_DATA_DIR"] = str(tmp)
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'grobot.db'}"
    os.environ.setdefault("GROBOT_SECRET_KEY", "bench-secret-key")
    os.environ["GROBOT_LOG_LEVEL"] = "WARNING"
    from grobot.core import migrations
    from grobot.core.settings import get_settings

    get_settings.cache_clear()
    migrations.upgrade(os.environ["DATABASE_URL"])


def wait_url(proc: subprocess.Popen[bytes], timeout: float = 60.0) -> str:
    from grobot.core.db import session_scope
    from grobot.core.link_client import find_url

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the supervisor exited")
        with session_scope(readonly=True) as session:
            url = find_url(session=session)
        if url:
            return url
        time.sleep(0.1)
    raise SystemExit("the supervisor link did not start")


def bot_like_rss(url: str | None) -> float:
    """RSS of a process with the bot code imported and (with ``url``) one retrieval through RemoteMemory."""
    code = (
        "import asyncio, os, sys\n"
        "import bot_worker.bot_process, grobot.core.agents.chain, grobot.core.tools.catalog\n"
        "from bot_worker.bot_link import BotLinkClient\n"
        "from grobot.core.memory import NoopMemory\n"
        "link = BotLinkClient.from_env()\n"
        "memory = link.memory() if link else NoopMemory()\n"
        "print(asyncio.run(memory.search(1, 'who likes tea?')) is not None, file=sys.stderr)\n"
        "print(open('/proc/self/status').read().split('VmRSS:')[1].split()[0])\n"
    )
    from grobot.core.link_scope import admin_token

    env = {k: v for k, v in os.environ.items() if k not in ("GROBOT_SUPERVISOR_URL", "GROBOT_SUPERVISOR_TOKEN")}
    if url:
        env.update(GROBOT_SUPERVISOR_URL=url, GROBOT_SUPERVISOR_TOKEN=admin_token())
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


async def chain_overhead(url: str, bot_id: int, runs: int) -> tuple[list[float], list[float]]:
    from bot_worker.bot_link import BotLinkClient
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.link_scope import admin_token
    from grobot.core.memory import NoopMemory
    from grobot.core.store.local import local_deps, run_chain
    from tests.fakes.llm import FakeToolCatalog

    link = BotLinkClient(url, admin_token())
    remote = link.memory()
    rng = random.Random(7)
    timings: dict[str, list[float]] = {"none": [], "service": []}
    for index in range(runs):
        for name, memory in (("none", NoopMemory()), ("service", remote)):
            msg = IncomingMessage(bot_id=bot_id, conversation_key=f"bench:{name}:{index}", content=
                                  f"what does {rng.choice(SUBJECTS)} think about {rng.choice(TOPICS)}?",
                                  author_id="1", author_name="bench", platform="test_chat")
            started = time.perf_counter()
            result = await run_chain(msg, local_deps(memory), tools=FakeToolCatalog())
            timings[name].append(time.perf_counter() - started)
            assert result.error is None, result.error
    await link.close()
    return timings["none"], timings["service"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--chain-runs", type=int, default=50)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="grobot-bench-memory-") as tmp_name:
        tmp = Path(tmp_name)
        setup(tmp)
        from grobot.core.db import session_scope
        from grobot.core.link_client import AdminLink
        from grobot.core.memory.remote import MemoryAdmin
        from grobot.core.services import bots
        from tests.fakes.llm import FakeLLM, use_fake_llm

        with session_scope() as session:
            bot_id = bots.create_bot(session=session, name="bench").id
        log = open(tmp / "supervisor.log", "wb")
        proc = subprocess.Popen([sys.executable, "-m", "bot_worker"], cwd=ROOT, env=dict(os.environ),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        fake = FakeLLM().start()
        try:
            url = wait_url(proc)
            time.sleep(1.0)  # let the fork server and the first reconcile settle before measuring
            idle = rss_mib(proc.pid)
            client = MemoryAdmin(AdminLink(url, timeout=120))
            rng = random.Random(1)

            first = time.perf_counter()
            client.add(bot_id, [sentence(rng, 0)], {"user_id": "1"})
            first_add = time.perf_counter() - first
            loaded = rss_mib(proc.pid)

            single = []
            for index in range(1, 101):
                started = time.perf_counter()
                client.add(bot_id, [sentence(rng, index)], {"user_id": str(index % 10)})
                single.append(time.perf_counter() - started)

            started = time.perf_counter()
            done = 101
            while done < args.memories:
                batch = [sentence(rng, done + i) for i in range(min(100, args.memories - done))]
                client.add(bot_id, batch, {"user_id": str(done % 10)})
                done += len(batch)
            fill = time.perf_counter() - started
            filled = rss_mib(proc.pid)

            async def queries() -> list[float]:
                from bot_worker.bot_link import BotLinkClient
                from grobot.core.link_scope import admin_token

                link = BotLinkClient(url, admin_token())
                remote = link.memory()
                out = []
                for _ in range(args.queries):
                    text = f"what about {rng.choice(SUBJECTS)} and {rng.choice(TOPICS)}?"
                    began = time.perf_counter()
                    await remote.query(bot_id, text, 5, max_distance=0.6)
                    out.append(time.perf_counter() - began)
                await link.close()
                return out

            query_times = asyncio.run(queries())
            use_fake_llm(fake, bot_id=bot_id)
            none, service = asyncio.run(chain_overhead(url, bot_id, args.chain_runs))
            bot_without = bot_like_rss(None)
            bot_with = bot_like_rss(url)

            print(f"supervisor RSS, embedder not loaded:  {idle:7.1f} MiB")
            print(f"supervisor RSS, embedder loaded:      {loaded:7.1f} MiB  (+{loaded - idle:.1f} MiB; "
                  f"first add {1000 * first_add:.0f} ms incl. loading)")
            print(f"supervisor RSS, {args.memories} memories:      {filled:7.1f} MiB")
            print(f"embed+add of one memory (admin):      {ms(single)}")
            print(f"bulk fill to {args.memories} (batches of 100): {fill:6.1f} s  "
                  f"({(args.memories - 101) / fill:.0f} memories/s)")
            print(f"query at {args.memories} memories (link, k=5): {ms(query_times)}")
            extra = [s - n for s, n in zip(service, none)]
            print(f"chain run, no memory:                 mean {1000 * statistics.mean(none):7.2f} ms")
            print(f"chain run, supervisor's memory:       mean {1000 * statistics.mean(service):7.2f} ms")
            print(f"retrieval overhead per chain run:     mean {1000 * statistics.mean(extra):7.2f} ms   "
                  f"p95 {1000 * pct(extra, 0.95):7.2f} ms")
            print(f"bot-like process RSS, no memory:      {bot_without:7.1f} MiB")
            print(f"bot-like process RSS, RemoteMemory:   {bot_with:7.1f} MiB  ({bot_with - bot_without:+.1f} MiB)")
        finally:
            fake.stop()
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(5)
            log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
