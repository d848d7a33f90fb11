"""Benchmark of one bot link round trip between two processes, against HTTP (aiohttp) for the same data.

    .venv/bin/python bench/link.py [--calls 60] [--pause-ms 250]

Every message a bot answers waits for one round trip of its link (the supervisor's read for the
message) before its model starts. The supervisor's end runs in a child process, as in the fleet;
each call comes after a pause (``--pause-ms``, as between a bot's messages), with a request and an
answer of the sizes of that read (about 0.5 KB and 6 KB). Prints p50/p90 of: the bot link
(:mod:`grobot.core.link_wire`), and an aiohttp client and server doing the same (what the link was
before), in alternating rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ANSWER = {"settings": {"name": "bench", "prompt": "You are a helpful bot. " * 40}, "history": ["x" * 300] * 12}
REQUEST = {"msg": {"content": "question number 7", "author_name": "alice", "channel_id": "1" * 18}}


async def serve() -> None:
    """The supervisor's end: a bot link and an aiohttp server; prints their addresses."""
    import orjson
    from aiohttp import web

    from bot_worker.bot_link import Answer
    from bot_worker.link_server import BotLinkServer

    async def store(bot_id: int, op: str, payload: dict) -> object:
        return ANSWER

    link = BotLinkServer(lambda report: Answer(ok=True), store=store)
    await link.start()

    async def handler(request: web.Request) -> web.Response:
        await request.json(loads=orjson.loads)
        return web.Response(body=orjson.dumps({"result": ANSWER}), content_type="application/json")

    app = web.Application()
    app.add_routes([web.post("/v1/bots/{bot_id}/store/{op}", handler)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(link.url, link.token(1), f"http://127.0.0.1:{port}", flush=True)
    await asyncio.Event().wait()


async def measure(link_url: str, token: str, http_url: str, calls: int, pause: float) -> dict[str, list[float]]:
    import aiohttp
    import orjson

    from bot_worker.bot_link import BotLinkClient

    client = BotLinkClient(link_url, token)
    session = aiohttp.ClientSession(json_serialize=lambda v: orjson.dumps(v).decode())
    times: dict[str, list[float]] = {"bot link": [], "aiohttp": []}

    async def link_call() -> None:
        status, _ = await client.call(1, "store/message", REQUEST, timeout=10)
        assert status == 200

    async def http_call() -> None:
        async with session.post(f"{http_url}/v1/bots/1/store/message", json=REQUEST,
                                headers={"Authorization": f"Bearer {token}"}) as response:
            await response.json(loads=orjson.loads)

    try:
        for round_ in range(calls + 3):
            for name, call in (("bot link", link_call), ("aiohttp", http_call)):
                await asyncio.sleep(pause)
                started = time.perf_counter()
                await call()
                if round_ >= 3:  # the first calls open the connections
                    times[name].append(time.perf_counter() - started)
    finally:
        await client.close()
        await session.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--pause-ms", type=float, default=250)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve())
        return 0
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert server.stdout is not None
        link_url, token, http_url = server.stdout.readline().split()
        times = asyncio.run(measure(link_url, token, http_url, args.calls, args.pause_ms / 1000))
    finally:
        server.kill()
        server.wait()
    for name, values in times.items():
        values.sort()
        print(f"{name:9s} round trip: p50 {1000 * statistics.median(values):5.2f} ms   "
              f"p90 {1000 * values[int(0.9 * (len(values) - 1))]:5.2f} ms   (n={len(values)}, "
              f"{args.pause_ms:.0f} ms pause before each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
