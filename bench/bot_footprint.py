"""What a bot process costs before it does anything: the floor under the fleet's RSS figures.

    .venv/bin/python bench/bot_footprint.py

Prints the RSS of fresh interpreters that import, in turn, nothing, asyncio and ssl,
aiohttp, discord.py; discord.py with SQLAlchemy, and with pydantic/SQLModel and the models
(the database layer bots no longer import: they reach the database through their
supervisor); the whole bot code (what the fork server preloads); then RSS, unique and
proportional memory of a child forked from a process that preloaded it, at rest; then
the CPU time one memory-service request costs a bot with aiohttp (what ``RemoteMemory``
uses) and with httpx; then the client CPU of one streamed LLM chat call (a 40-message
history, 3 chunks; the fake LLM runs in its own process): GroBot's Ollama provider
(aiohttp) against the official ``ollama`` client (httpx); then the time to encode that
request body as JSON with the standard library and with orjson (what the providers use).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

IMPORT_SETS = [
    ("python alone", []),
    ("+ asyncio, ssl", ["asyncio", "ssl"]),
    ("+ aiohttp", ["asyncio", "ssl", "aiohttp"]),
    ("+ discord.py", ["discord"]),
    # What bots no longer import (they reach the database through their supervisor), for scale:
    ("discord.py + SQLAlchemy", ["discord", "sqlalchemy.orm", "sqlalchemy.dialects.sqlite"]),
    ("discord.py + pydantic, SQLModel, the models", ["discord", "grobot.core.models", "grobot.core.db"]),
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


def _forked_child_at_rest(modules: list[str]) -> dict[str, float]:
    """A child of a process that preloaded (and froze) ``modules``, measured after a second at rest.

    The preloading runs in a process of its own, so that the measures do not add up.
    """
    code = ("import gc, importlib, os, sys, time\n"
            f"sys.path.insert(0, {str(ROOT)!r})\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "gc.collect(); gc.freeze()\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    time.sleep(30); os._exit(0)\n"
            "print(pid, flush=True); time.sleep(30)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    time.sleep(1.0)
    try:
        return _memory(pid)
    finally:
        os.kill(pid, 9)
        parent.kill()
        parent.wait()


async def _cpu_ms_per_call(call: Any, count: int, *, warm: int) -> float:
    """CPU ms of this process per ``await call()``, after ``warm`` calls to warm pools and caches."""
    for _ in range(warm):
        await call()
    started = time.process_time()
    for _ in range(count):
        await call()
    return (time.process_time() - started) * 1000 / count


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
            results[name] = await _cpu_ms_per_call(call, requests, warm=50)
    await runner.cleanup()
    return results


HISTORY = [{"role": "system", "content": "You are a helpful bot. " * 40}] + [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"alice: message number {i} " * 5} for i in range(40)]


async def _llm_client_cpu(url: str, calls: int = 300) -> dict[str, float]:
    """Client CPU ms per streamed chat call against the fake LLM at ``url`` (another process)."""
    import ollama

    from grobot.core.llm.base import ChatRequest
    from grobot.core.llm.ollama import OllamaProvider

    provider = OllamaProvider(url)
    official = ollama.AsyncClient(host=url)
    request = ChatRequest(model="fake-model", messages=HISTORY, temperature=0.7, context_window=8192)

    async def grobot() -> None:
        async for _ in provider.stream(request):
            pass

    async def official_client() -> None:
        async for _ in await official.chat(model="fake-model", messages=HISTORY, stream=True,
                                           options={"temperature": 0.7, "num_ctx": 8192}):
            pass

    results = {name: await _cpu_ms_per_call(call, calls, warm=30)
               for name, call in (("grobot", grobot), ("ollama", official_client))}
    await provider.aclose()
    await official.close()
    return results


def _json_encode_ms(rounds: int = 2000) -> dict[str, float]:
    import json
    import timeit

    from grobot.core.llm.base import ChatRequest
    from grobot.core.llm.http_client import dumps
    from grobot.core.llm.ollama import OllamaProvider

    body = OllamaProvider("http://127.0.0.1:9")._body(ChatRequest(model="fake-model", messages=HISTORY, temperature=0.7,
                                                                  context_window=8192))
    return {"json": timeit.timeit(lambda: json.dumps(body), number=rounds) * 1000 / rounds,
            "orjson": timeit.timeit(lambda: dumps(body), number=rounds) * 1000 / rounds}


def _fake_llm() -> tuple[subprocess.Popen[str], str]:
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); from tests.fakes.llm import FakeLLM; "
            "fake = FakeLLM().start(); print(fake.url, flush=True); sys.stdin.read()")
    process = subprocess.Popen([sys.executable, "-c", code, str(ROOT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("GROBOT_DATA_DIR", tmp)
        os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench.db")
        print("RSS of a fresh interpreter after its imports:")
        for label, modules in IMPORT_SETS:
            print(f"  {label:46} {_rss_after_imports(modules):6.1f} MiB")
        from bot_worker.spawn import PRELOAD

        print(f"  {'the bot code (fork server preload)':46} {_rss_after_imports(PRELOAD[:-1]):6.1f} MiB")
        for label, modules in (("the bot code", PRELOAD[:-1]),):
            child = _forked_child_at_rest(modules)
            print(f"child forked from a process that preloaded {label}, at rest: RSS {child['rss']:5.1f} MiB, "
                  f"unique {child['unique']:5.1f} MiB, proportional {child['pss']:5.1f} MiB")
        cpu = asyncio.run(_client_cpu())
        print(f"memory-service request, CPU per request (client + local server): aiohttp {cpu['aiohttp']:.2f} ms, "
              f"httpx {cpu['httpx']:.2f} ms")
        fake, url = _fake_llm()
        try:
            llm = asyncio.run(_llm_client_cpu(url))
        finally:
            fake.kill()
            fake.wait()
        print(f"streamed LLM chat call, client CPU per call: GroBot's provider (aiohttp) {llm['grobot']:.2f} ms, "
              f"official ollama client (httpx) {llm['ollama']:.2f} ms")
        encode = _json_encode_ms()
        print(f"JSON of that request body: json {encode['json']:.3f} ms, orjson {encode['orjson']:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
