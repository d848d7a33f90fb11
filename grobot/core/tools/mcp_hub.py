"""The MCP client hub: one per process, one long-lived session per MCP server.

Each session is opened and closed by its own *owner task* (anyio cancel scopes must be
entered and left in the same task); other tasks send requests over the open session,
which the SDK's dispatcher correlates, so concurrent calls on one session are safe.

Sessions connect lazily, cache ``initialize`` + ``tools/list``, reconnect within a
bounded budget when they break, and are all closed by :meth:`McpHub.aclose`. Every
failure becomes one line that names the server (see :mod:`grobot.core.tools.mcp_errors`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp import types as mcp_types
from mcp.client.sse import sse_client
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from grobot.core.errors import first_line
from grobot.core.tools.base import SERVER_FAILED, ToolError, ToolResult
from grobot.core.tools.mcp_config import McpServerConfig
from grobot.core.tools.mcp_errors import (
    HttpProbe,
    StderrCapture,
    describe_bad_message,
    describe_failure,
    server_error,
)
from grobot.core.tools.mcp_presets import path_with_node_first, resolve_command
from grobot.core.tools.mcp_results import tool_result

logger = logging.getLogger(__name__)

CONNECTION_CLOSED = -32000  # mcp.types CONNECTION_CLOSED


@dataclass
class HubLimits:
    """Time limits and retry budget of a hub."""

    connect_timeout: float = 20.0  # spawn/handshake + first tools/list
    retry_after: float = 10.0  # after a failed connect, calls fail fast for this long
    max_reconnects: int = 3  # reconnects allowed ...
    reconnect_window: float = 60.0  # ... within this many seconds
    list_timeout: float = 20.0


@dataclass
class TestReport:
    """The outcome of ``mcp test``: the server's identity and tools, or the error."""

    name: str
    ok: bool
    error: str = ""
    server_name: str = ""
    server_version: str = ""
    protocol_version: str = ""
    tools: list[mcp_types.Tool] = field(default_factory=list)
    connect_ms: float = 0.0


class _SessionGone(Exception):
    """The server answered that our session does not exist (any more)."""


class _Connection:
    """One MCP session and the owner task that holds it open."""

    def __init__(self, config: McpServerConfig, limits: HubLimits) -> None:
        self.config = config
        self.fingerprint = config.fingerprint()
        self.limits = limits
        self.session: ClientSession | None = None
        self.tools: list[mcp_types.Tool] | None = None
        self.init_result: mcp_types.InitializeResult | None = None
        self.error: str | None = None  # the last connect failure, as one line
        self.failed_at: float = 0.0
        self.protocol_error: str | None = None
        self._owner: asyncio.Task[None] | None = None
        self._wake: anyio.Event | None = None
        self._dead = True
        self._lock = asyncio.Lock()
        self._reconnects: deque[float] = deque()
        self._stderr: StderrCapture | None = None
        self._probe = HttpProbe()
        self._reported = False
        self.connects = 0

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def alive(self) -> bool:
        return self.session is not None and not self._dead

    # ------------------------------------------------------------------ owner task

    def _transport(self) -> Any:
        cfg = self.config
        if cfg.transport == "stdio":
            self._stderr = StderrCapture(cfg.name)
            env = dict(cfg.env)
            if "PATH" not in env:  # the server's own tools (``node``) resolve as ours do, recent Node first
                env["PATH"] = path_with_node_first(get_default_environment().get("PATH", ""))
            # A preset stored as ``uvx PACKAGE`` / ``npx -y PACKAGE`` runs its installed program once there is one.
            command, args = resolve_command(cfg.command or "", cfg.args)
            params = StdioServerParameters(command=command, args=list(args), env=env, cwd=cfg.cwd or None)
            return stdio_client(params, errlog=self._stderr.file)
        if cfg.transport == "streamable_http":
            return self._streamable_http(cfg)
        if cfg.transport == "sse":

            def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> httpx2.AsyncClient:
                return httpx2.AsyncClient(
                    headers=headers, timeout=timeout, auth=auth, event_hooks={"response": [self._probe.hook]}
                )

            return sse_client(cfg.url or "", headers=dict(cfg.headers) or None, httpx_client_factory=factory)
        raise ToolError(server_error(cfg.name, f"has an unknown transport {cfg.transport!r}"))

    @asynccontextmanager
    async def _streamable_http(self, cfg: McpServerConfig) -> AsyncIterator[Any]:
        # The SDK leaves a client it was given open: this one is closed here.
        async with httpx2.AsyncClient(
            headers=dict(cfg.headers) or None,
            timeout=httpx2.Timeout(30.0, read=300.0),
            event_hooks={"response": [self._probe.hook]},
        ) as client:
            async with streamable_http_client(cfg.url or "", http_client=client) as streams:
                yield streams

    async def _forward(self, source: Any, sink: Any) -> None:
        """Pass the transport's messages to the session, noticing protocol errors and the end."""
        try:
            async with sink:
                async for item in source:
                    if isinstance(item, Exception):
                        self.protocol_error = describe_bad_message(item)
                        logger.warning("MCP server %r sent an invalid message: %s", self.name, self.protocol_error)
                    await sink.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            self._mark_dead()

    def _mark_dead(self) -> None:
        self._dead = True
        if self._wake is not None:
            self._wake.set()

    async def _own(self, ready: asyncio.Future[None]) -> None:
        """Open the session, keep it open until told to stop or it breaks, then close it."""
        self._wake = anyio.Event()
        self._reported = False
        self.protocol_error = None
        self._probe.reset()
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                if self._stderr is not None:
                    self._stderr.spawned()
                send, receive = anyio.create_memory_object_stream[Any](0)
                group = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(group.cancel_scope.cancel)
                self._dead = False
                group.start_soon(self._forward, read, send)
                session = await stack.enter_async_context(ClientSession(receive, write))
                try:
                    with anyio.fail_after(self.limits.connect_timeout):
                        self.init_result = await session.initialize()
                        self.tools = await _list_all(session)
                except Exception as exc:
                    # Report now: closing a stuck server below may take a few seconds.
                    await self._fail(ready, exc)
                    raise
                self.session = session
                self.connects += 1
                if not ready.done():
                    ready.set_result(None)
                logger.info("MCP server %r connected (%d tools)", self.name, len(self.tools))
                await self._wake.wait()
                self.session = None
                if not self._dead:
                    logger.info("MCP server %r: closing the session", self.name)
                else:
                    logger.warning("MCP server %r: the session ended (%s)", self.name, await self._end_reason())
        except BaseException as exc:
            self.session = None
            if isinstance(exc, asyncio.CancelledError) and ready.done():
                raise
            if not ready.done():
                await self._fail(ready, exc)
            elif not self._reported:
                logger.warning("MCP server %r: session error: %s", self.name, first_line(_leaf(exc)))
        finally:
            self._dead = True
            self.session = None
            if self._stderr is not None:
                self._stderr.close()

    async def _fail(self, ready: asyncio.Future[None], exc: BaseException) -> None:
        if ready.done():
            return
        message = await describe_failure(
            self.config, exc, stderr=self._stderr, probe=self._probe, protocol_error=self.protocol_error,
            timeout=self.limits.connect_timeout,
        )
        self._reported = True
        if not ready.done():
            ready.set_exception(ToolError(message, transient=True))

    async def _end_reason(self) -> str:
        if self._stderr is not None:
            tail = await self._stderr.tail_after_exit()
            if tail:
                return f"last stderr: {tail}"
        return self.protocol_error or "connection closed"

    # ------------------------------------------------------------------ used by the hub

    async def ensure(self, *, force: bool = False) -> ClientSession:
        """The open session, connecting when needed (bounded by the reconnect budget)."""
        if self.alive:
            assert self.session is not None
            return self.session
        async with self._lock:
            if self.alive:
                assert self.session is not None
                return self.session
            now = time.monotonic()
            if not force and self.error and now - self.failed_at < self.limits.retry_after:
                raise ToolError(self.error, transient=True)
            if self.connects:  # this is a reconnect: keep within the budget
                while self._reconnects and now - self._reconnects[0] > self.limits.reconnect_window:
                    self._reconnects.popleft()
                if len(self._reconnects) >= self.limits.max_reconnects and not force:
                    raise ToolError(
                        server_error(
                            self.name,
                            f"keeps failing ({len(self._reconnects)} reconnects in "
                            f"{self.limits.reconnect_window:g} s); not retrying for now",
                        ),
                        transient=True,
                    )
                self._reconnects.append(now)
                logger.info("MCP server %r: reconnecting", self.name)
            await self._stop_owner()
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[None] = loop.create_future()
            ready.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._owner = loop.create_task(self._own(ready), name=f"mcp-owner-{self.name}")
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.limits.connect_timeout + 10)
            except TimeoutError:
                await self._stop_owner()
                self.error = server_error(
                    self.name, f"did not finish starting within {self.limits.connect_timeout:g} s"
                )
                self.failed_at = time.monotonic()
                raise ToolError(self.error, transient=True) from None
            except ToolError as exc:
                # The owner task is winding down on its own (bounded); it is awaited on the next
                # connect or on close, so the caller gets the error without waiting for that.
                self.error = str(exc)
                self.failed_at = time.monotonic()
                raise
            self.error = None
            assert self.session is not None
            return self.session

    async def list_tools(self, *, refresh: bool = False) -> list[mcp_types.Tool]:
        session = await self.ensure(force=refresh)
        if refresh or self.tools is None:
            try:
                with anyio.fail_after(self.limits.list_timeout):
                    self.tools = await _list_all(session)
            except TimeoutError:
                raise ToolError(
                    server_error(self.name, f"did not list its tools within {self.limits.list_timeout:g} s"),
                    transient=True,
                ) from None
            except MCPError as exc:
                raise ToolError(server_error(self.name, f"failed to list its tools: {exc}"), transient=True) from None
        return list(self.tools or [])

    async def call_tool(self, tool: str, arguments: dict[str, Any], *, timeout: float) -> mcp_types.CallToolResult:
        try:
            return await self._call_once(tool, arguments, timeout=timeout)
        except _SessionGone:
            # The server no longer knows our session (it restarted): the call never ran, so
            # reconnecting and sending it again is safe. This counts against the budget.
            logger.info("MCP server %r: its session ended on the server side, reconnecting", self.name)
            return await self._call_once(tool, arguments, timeout=timeout, retry=False)

    async def _call_once(
        self, tool: str, arguments: dict[str, Any], *, timeout: float, retry: bool = True
    ) -> mcp_types.CallToolResult:
        session = await self.ensure()
        self.protocol_error = None
        self._probe.last_error_status = None
        try:
            with anyio.fail_after(timeout):
                return await session.call_tool(tool, arguments)
        except TimeoutError:
            detail = f"did not answer tool {tool!r} within {timeout:g} s"
            if self.protocol_error:
                detail = f"sent something that is not MCP JSON-RPC ({self.protocol_error}); {detail}"
            raise ToolError(server_error(self.name, detail), may_have_run=True) from None
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED or self._dead:
                self._mark_dead()
                reason = await self._end_reason()
                raise ToolError(
                    server_error(self.name, f"lost the connection during tool {tool!r} ({reason})"), may_have_run=True
                ) from None
            if exc.error.message == "Session terminated" or (
                self.config.transport != "stdio" and self._probe.last_error_status in (400, 404)
            ):
                # HTTP 404 (the spec) or 400 (some servers): our session id is unknown there.
                self._mark_dead()
                if retry:
                    raise _SessionGone() from None
                raise ToolError(server_error(self.name, "ended the session again at once"), transient=True) from None
            raise ToolError(server_error(self.name, f"refused tool {tool!r}: {exc.error.message}")) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._mark_dead()
            raise ToolError(server_error(self.name, "lost the connection"), transient=True) from None

    async def _stop_owner(self) -> None:
        owner, self._owner = self._owner, None
        if owner is None or owner.done():
            return
        if self._wake is not None:
            self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(owner), 10.0)
        except (TimeoutError, Exception):
            owner.cancel()
            try:
                await owner
            except BaseException:
                pass

    async def aclose(self) -> None:
        """Close the session and end the server (stdio: the process is stopped)."""
        async with self._lock:
            await self._stop_owner()


async def _list_all(session: ClientSession) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(100):  # pages
        result = await session.list_tools(params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(result.tools)
        cursor = result.next_cursor
        if not cursor:
            break
    return tools


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class McpHub:
    """Every MCP session of this process, by server name."""

    def __init__(self, limits: HubLimits | None = None) -> None:
        self.limits = limits or HubLimits()
        self._connections: dict[str, _Connection] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    def _connection(self, config: McpServerConfig) -> _Connection:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        conn = self._connections.get(config.key)
        if conn is not None and conn.fingerprint != config.fingerprint():
            logger.info("MCP server %r: settings changed, reconnecting", config.key)
            task = asyncio.get_running_loop().create_task(conn.aclose())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
            conn = None
        if conn is None:
            conn = self._connections[config.key] = _Connection(config, self.limits)
        return conn

    def status(self, name: str) -> dict[str, Any]:
        """What the hub knows about a server now (for health pages)."""
        conn = next((c for c in self._connections.values() if c.name == name), None)
        if conn is None:
            return {"connected": False, "error": None, "tools": None}
        return {"connected": conn.alive, "error": conn.error, "tools": len(conn.tools or []) if conn.tools else None}

    async def list_tools(self, config: McpServerConfig, *, refresh: bool = False) -> list[mcp_types.Tool]:
        """The server's tools (cached after the first connect; ``refresh`` asks again)."""
        return await self._connection(config).list_tools(refresh=refresh)

    async def call_tool(
        self, config: McpServerConfig, tool: str, arguments: dict[str, Any], *, timeout: float
    ) -> ToolResult:
        """Call ``tool`` (its own MCP name) on the server; raises :class:`ToolError` with one line,
        which tells the model only :data:`SERVER_FAILED` (the line is for the admins)."""
        try:
            result = await self.call_tool_raw(config, tool, arguments, timeout=timeout)
        except ToolError as exc:
            exc.told = exc.told or SERVER_FAILED
            raise
        return tool_result(result)

    async def call_tool_raw(
        self, config: McpServerConfig, tool: str, arguments: dict[str, Any], *, timeout: float
    ) -> mcp_types.CallToolResult:
        conn = self._connection(config)
        if conn.connects and not conn.alive and conn._owner is not None:
            logger.info("MCP server %r: the session broke, reconnecting", config.name)
        return await conn.call_tool(tool, arguments, timeout=timeout)

    async def test(self, config: McpServerConfig, *, timeout: float | None = None) -> TestReport:
        """Connect afresh (outside the shared sessions), list the tools, close: for ``mcp test``."""
        limits = HubLimits(connect_timeout=timeout or self.limits.connect_timeout, retry_after=0, max_reconnects=0)
        conn = _Connection(config, limits)
        started = time.perf_counter()
        try:
            await conn.ensure(force=True)
            init = conn.init_result
            return TestReport(
                name=config.name,
                ok=True,
                server_name=init.server_info.name if init else "",
                server_version=init.server_info.version if init else "",
                protocol_version=str(init.protocol_version) if init else "",
                tools=list(conn.tools or []),
                connect_ms=(time.perf_counter() - started) * 1000,
            )
        except ToolError as exc:
            return TestReport(name=config.name, ok=False, error=str(exc))
        finally:
            await conn.aclose()

    async def prune(self, keep: set[str]) -> None:
        """Close the sessions of servers not in ``keep`` (deleted or disabled)."""
        for key in [k for k, c in self._connections.items() if c.name not in keep]:
            conn = self._connections.pop(key)
            await conn.aclose()

    async def close_server(self, name: str) -> None:
        """Close every session of server ``name`` (one per bot for a per-bot server)."""
        for key in [k for k, c in self._connections.items() if c.name == name]:
            await self._connections.pop(key).aclose()

    async def aclose(self) -> None:
        """Close every session (call on shutdown)."""
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(conn.aclose() for conn in connections), return_exceptions=True)
        if self._closing:
            await asyncio.gather(*list(self._closing), return_exceptions=True)
        logger.info("MCP hub closed (%d sessions)", len(connections))

