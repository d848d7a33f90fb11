"""Turning MCP connection failures into one clear line that names the server."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from typing import Any

import httpx2
import pydantic
from mcp.shared.exceptions import MCPError

from grobot.core.errors import first_line
from grobot.core.tools.mcp_config import McpServerConfig
from grobot.core.tools.mcp_presets import install_hint

logger = logging.getLogger(__name__)

CONNECTION_CLOSED = -32000
TAIL_LINES = 3
TAIL_CHARS = 300


def server_error(name: str, text: str) -> str:
    """``MCP server 'name' <text>`` on one line."""
    line = " ".join(f"MCP server '{name}' {text}".split())
    return line


class StderrCapture:
    """The stderr of a stdio server: each line goes to the log; the last lines are kept.

    A pipe whose write end is handed to the child; a thread reads it until the child
    (and anything it spawned) has closed it.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        read_fd, write_fd = os.pipe()
        self.file = os.fdopen(write_fd, "w")
        self.lines: deque[str] = deque(maxlen=50)
        self._thread = threading.Thread(target=self._pump, args=(read_fd,), name=f"mcp-stderr-{name}", daemon=True)
        self._thread.start()

    def _pump(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "r", encoding="utf-8", errors="replace") as stream:
            for raw in stream:
                line = raw.rstrip()
                if line.strip():
                    self.lines.append(line.strip())
                    logger.info("MCP server %r stderr: %s", self.name, line[:500])

    def spawned(self) -> None:
        """The child holds its own copy of the write end now: drop ours so EOF can come."""
        self.close()

    def close(self) -> None:
        if not self.file.closed:
            try:
                self.file.close()
            except OSError:
                pass

    def tail(self) -> str:
        lines = list(self.lines)[-TAIL_LINES:]
        text = " | ".join(lines)
        return text if len(text) <= TAIL_CHARS else "..." + text[-TAIL_CHARS:]

    async def tail_after_exit(self, timeout: float = 1.0) -> str:
        """The last lines, after giving the reader a moment to drain a child that just exited."""
        await asyncio.to_thread(self._thread.join, timeout)
        return self.tail()


class HttpProbe:
    """Remembers the first HTTP answer that is not MCP (wrong content type or an error status)."""

    def __init__(self) -> None:
        self.bad: tuple[int, str] | None = None
        self.last_error_status: int | None = None  # the latest HTTP error status of a POST

    def reset(self) -> None:
        self.bad = None
        self.last_error_status = None

    async def hook(self, response: httpx2.Response) -> None:
        if response.status_code >= 400 and response.request.method == "POST":
            self.last_error_status = response.status_code
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        ok_type = ctype in ("application/json", "text/event-stream") or response.status_code in (202, 204)
        if self.bad is None and (response.status_code >= 400 or not ok_type) and response.request.method != "DELETE":
            self.bad = (response.status_code, ctype)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for inner in exc.exceptions:
            out.extend(_leaves(inner))
        return out
    return [exc]


def _first_line(exc: BaseException) -> str:
    return first_line(exc)[:TAIL_CHARS]


def _pick(leaves: list[BaseException]) -> BaseException:
    """The most telling of several exceptions (an ExceptionGroup's leaves)."""
    for kind in (TimeoutError, OSError, httpx2.HTTPError, MCPError):
        for leaf in leaves:
            if isinstance(leaf, kind):
                return leaf
    return leaves[0]


def describe_bad_message(exc: Exception) -> str:
    """A transport's complaint about one incoming message, short (the offending text quoted)."""
    if isinstance(exc, pydantic.ValidationError):
        errors = exc.errors()
        if errors:
            first = errors[0]
            text = str(first.get("input", ""))
            return f"{first.get('msg', 'invalid message')}: {text[:100]!r}"
    return _first_line(exc)


def describe_http_answer(status: int, ctype: str) -> str:
    if "html" in ctype:
        return f"returned an HTML page (HTTP {status}), not an MCP JSON-RPC response"
    if ctype not in ("application/json", "text/event-stream"):
        what = ctype or "a response without a content type"
        return f"returned {what} (HTTP {status}), not an MCP JSON-RPC response"
    return f"answered HTTP {status} to the MCP handshake"


def _how_to_install(config: McpServerConfig) -> str:
    """". <package> is not installed here ... Install it: <command>" for a uvx / npx command that is missing."""
    hint = install_hint(config.command or "", config.args)
    return f". {hint}" if hint else ""


async def describe_failure(
    config: McpServerConfig,
    exc: BaseException,
    *,
    stderr: Any = None,
    probe: HttpProbe | None = None,
    protocol_error: str | None = None,
    timeout: float = 0.0,
) -> str:
    """One line for a failed connect: what went wrong, with the evidence (stderr tail, HTTP answer)."""
    name = config.name
    leaf = _pick(_leaves(exc))
    if probe is not None and probe.bad is not None:
        status, ctype = probe.bad
        return server_error(name, f"at {config.url} {describe_http_answer(status, ctype)}")
    if isinstance(leaf, TimeoutError):
        if protocol_error:
            return server_error(name, f"sent something that is not MCP JSON-RPC ({protocol_error})")
        return server_error(name, f"did not answer the MCP handshake within {timeout:g} s")
    if isinstance(leaf, FileNotFoundError) and config.transport == "stdio" and config.cwd and not os.path.isdir(config.cwd):
        return server_error(name, f"could not be started: its working directory does not exist: {config.cwd}")
    if isinstance(leaf, FileNotFoundError) and config.transport == "stdio" and "/" not in (config.command or "/"):
        return server_error(name, f"could not be started: command not found: {config.command}{_how_to_install(config)}")
    if isinstance(leaf, (FileNotFoundError, PermissionError)) and config.transport == "stdio":
        return server_error(
            name, f"could not be started: {leaf.strerror or leaf}: {config.command!r}{_how_to_install(config)}")
    if isinstance(leaf, httpx2.ConnectError):
        return server_error(name, f"cannot be reached at {config.url}: {_first_line(leaf)}")
    if isinstance(leaf, httpx2.HTTPStatusError):
        ctype = leaf.response.headers.get("content-type", "").split(";")[0].strip().lower()
        return server_error(name, f"at {config.url} {describe_http_answer(leaf.response.status_code, ctype)}")
    if isinstance(leaf, httpx2.HTTPError):
        return server_error(name, f"at {config.url} failed: {type(leaf).__name__}: {_first_line(leaf)}")
    if isinstance(leaf, OSError):
        return server_error(name, f"could not be started: {_first_line(leaf)}")
    if isinstance(leaf, MCPError) and leaf.error.code == CONNECTION_CLOSED:
        if config.transport == "stdio":
            tail = await stderr.tail_after_exit() if stderr is not None else ""
            if protocol_error:
                return server_error(name, f"sent something that is not MCP JSON-RPC ({protocol_error}) and exited")
            return server_error(
                name, f"exited during start-up; its last output: {tail}" if tail else "exited during start-up (no output on stderr)"
            )
        return server_error(name, "closed the connection during the MCP handshake")
    if isinstance(leaf, MCPError):
        return server_error(name, f"refused the MCP handshake: {leaf.error.message}")
    return server_error(name, f"failed to connect: {type(leaf).__name__}: {_first_line(leaf)}")
