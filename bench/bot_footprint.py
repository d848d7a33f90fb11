"""What a bot process costs before it does anything: the floor under the fleet's RSS figures.

    .venv/bin/python bench/bot_footprint.py

Prints the RSS of fresh interpreters that import, in turn, nothing, discord.py, discord.py
with SQLAlchemy/SQLModel and the models, and the whole bot code (what the fork server
preloads); then RSS, unique and proportional memory of a child forked from such a
preloaded process, at rest; then the CPU time one memory-service request costs a bot with
aiohttp (what ``RemoteMemory`` uses) and with httpx.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

IMPORT_SETS = [
    ("python alone", []),
    ("+ discord.py", ["discord"]),
    ("+ SQLAlchemy, SQLModel, the models", ["discord", "grobot.core.models", "grobot.core.db"]),
    ("the bot code (fork server preload)", ["bot_worker.bot_process", "grobot.core.agents.chain"]),
]


def _memory(pid: int) -> dict[str, float]:
    """RSS, unique (private) and proportional memory in MiB."""
    values = {"rss": 0.0, "unique": 0.0, "pss": 0.0}
    with open(f"/proc/{pid}/smaps_rollup") as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            kib = float(rest.split()[0]) / 1024 if rest.strip() else 0.0
            if key == "Rss":
                values["rss"] = kib
            elif key == "Pss":
                values["pss"] = kib
            elif key in ("Private_Clean", "Private_Dirty"):
                values["unique"] += kib
    return values


def _rss_after_imports(modules: list[str]) -> float:
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return int(out.stdout.strip()) / 1024


def _forked_child_at_rest() -> dict[str, float]:
    """A child of a process that preloaded (and froze) the bot code, measured after a second at rest."""
    from bot_worker.spawn import PRELOAD

    for module in PRELOAD[:-1]:
        importlib.import_module(module)
    gc.collect()
    gc.freeze()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child does nothing, like a bot before its first event
        os.close(read)
        os.write(write, b"1")
        time.sleep(30)
        os._exit(0)
    os.close(write)
    os.read(read, 1)
    time.sleep(1.0)
    try:
        return _memory(pid)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


async def _client_cpu(requests: int = 500) -> dict[str, float]:
    """CPU ms per request of each client against one local aiohttp server (server time included)."""
    import aiohttp
    import httpx
    from aiohttp import web

    async def answer(request: web.Request) -> web.Response:
        await request.json()
        return web.json_response({"memories": []})

    app = web.Application()
    app.router.add_post("/search", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/search"  # type: ignore[union-attr]
    results = {}
    async with aiohttp.ClientSession() as session, httpx.AsyncClient(trust_env=False) as client:
        async def with_aiohttp() -> None:
            async with session.post(url, json={"query": "hello"}) as response:
                await response.json()

        async def with_httpx() -> None:
            (await client.post(url, json={"query": "hello"})).json()

        for name, call in (("aiohttp", with_aiohttp), ("httpx", with_httpx)):
            for _ in range(50):
                await call()
            started = time.process_time()
            for _ in range(requests):
                await call()
            results[name] = (time.process_time() - started) * 1000 / requests
    await runner.cleanup()
    return results


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("GROBOT_DATA_DIR", tmp)
        os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench.db")
        print("RSS of a fresh interpreter after its imports:")
        for label, modules in IMPORT_SETS:
            print(f"  {label:40} {_rss_after_imports(modules):6.1f} MiB")
        child = _forked_child_at_rest()
        print(f"child forked from a preloaded bot process, at rest: RSS {child['rss']:5.1f} MiB, "
              f"unique {child['unique']:5.1f} MiB, proportional {child['pss']:5.1f} MiB")
        cpu = asyncio.run(_client_cpu())
        print(f"memory-service request, CPU per request (client + local server): aiohttp {cpu['aiohttp']:.2f} ms, "
              f"httpx {cpu['httpx']:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
