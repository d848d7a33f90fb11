"""The supervisor's end of its link: its bots' heartbeats in, their data and the memory served.

:class:`SupervisorLink` runs the :class:`BotLinkServer` of a supervisor, one port for its
bot processes, the web app and the CLI, each request in an operation group
(:mod:`grobot.core.link_scope`, which also says which token may use which):

- ``bot``: it keeps the heartbeats its bot processes report until the next reconcile writes
  them (:meth:`SupervisorLink.take_heartbeats`), answers each with what the bot needs to fence
  itself, and serves the bots' reads and writes (:func:`bot_worker.link_ops.dispatch` on a
  :class:`bot_worker.local_store.LocalBotStore` with threads of its own);
- ``memory``: the bots' long-term memory and documents (:func:`grobot.core.memory.link_ops.serve`
  on the supervisor's store, when it holds one);
- ``tester_chat``: the web app's Test Chat (:func:`bot_worker.tester_chat_runner.serve`: wake, a
  run's events as a stream, cancel).

What it knows of the fleet (which processes run, which leases are held) it reads from the
reconcile loop (:class:`FleetState`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from bot_worker.bot_link import TOKEN_ENV, URL_ENV, Answer, InParts, Report, StoreError, Stream
from bot_worker.link_ops import dispatch
from bot_worker.local_store import LocalBotStore
from bot_worker.tester_chat_runner import ChatRunner
from bot_worker.tester_chat_runner import serve as serve_tester_chat
from bot_worker.timings import timings_logger
from grobot.core import link_scope, link_wire
from grobot.core.agents.deps import ChainDeps
from grobot.core.errors import MemoryUnavailable, NotFoundError, ValidationError
from grobot.core.models import utcnow
from grobot.core.services import fleet
from grobot.core.settings import get_settings

if TYPE_CHECKING:
    from grobot.core.memory.local import LocalMemory

logger = logging.getLogger(__name__)


StoreHandler = Callable[[int, str, dict[str, Any]], Awaitable[Any]]
GroupHandler = Callable[[int | None, str, dict[str, Any]], Awaitable[Any]]  # (bot id, operation, payload)


class BotLinkServer:
    """The supervisor's end: ``on_report`` answers each bot's heartbeat (called on the event loop);
    ``store`` serves the data operations, ``(bot id, op, payload) -> result``.

    Each connection's requests run as they come, side by side; each answer goes back as its
    request finishes (:mod:`grobot.core.link_wire`).
    """

    name = "Bot link"

    def __init__(self, on_report: Callable[[Report], Answer], *, store: StoreHandler | None = None,
                 groups: dict[str, GroupHandler] | None = None, host: str = "127.0.0.1") -> None:
        self.host = host
        self.url = ""
        self._on_report = on_report
        self._store = store
        self._groups = dict(groups or {})  # the groups besides ``bot``
        self._secret = secrets.token_bytes(32)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Listen on an ephemeral port; returns the link's address."""
        self._server = await asyncio.start_server(self._serve_connection, self.host, 0, limit=link_wire.MAX_FRAME,
                                                  reuse_address=True)
        self.url = link_wire.url_of(self.host, self._server.sockets[0].getsockname()[1])
        logger.info("%s listening on %s", self.name, self.url)
        return self.url

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    def token(self, bot_id: int) -> str:
        """The token of bot ``bot_id`` (valid for its own bot's operations only)."""
        return link_scope.bot_token(self._secret, bot_id)

    def env(self, bot_id: int) -> dict[str, str]:
        """What bot ``bot_id``'s process needs to reach this server (blank when it did not start)."""
        return {URL_ENV: self.url, TOKEN_ENV: self.token(bot_id) if self.url else ""}

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        requests: set[asyncio.Task[None]] = set()
        try:
            token = str((await link_wire.read_frame(reader)).get("token") or "")
            caller = _Caller(link_scope.scope_of(token, self._secret), writer.get_extra_info("peername"))
            while True:
                frame = await link_wire.read_frame(reader)
                request = asyncio.create_task(self._answer(frame, caller, writer))
                requests.add(request)
                request.add_done_callback(requests.discard)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the bot process closed its end (it stopped, or gave up on an answer)
        except link_wire.FrameError as exc:
            logger.warning("A bot link connection sent %s: closed", exc)
        finally:
            for request in requests:
                request.cancel()
            self._connections.discard(task)
            writer.close()

    async def _answer(self, frame: dict[str, Any], caller: _Caller, writer: asyncio.StreamWriter) -> None:
        status, body = await self._handle(frame, caller)
        if isinstance(body.get("result"), Stream):
            await self._stream(frame.get("id"), body["result"], writer)
            return
        rest = None
        if isinstance(body.get("result"), InParts):  # the first part now, the rest when it is ready
            parts: InParts = body["result"]
            body, rest = {"result": parts.first}, parts.rest
        self._write(writer, {"id": frame.get("id"), "status": status, "body": body, **({"more": True} if rest else {})})
        if rest is not None:
            try:
                status, body = 200, {"result": await rest}
            except Exception as exc:
                logger.exception("The second part of a bot link answer failed")
                status, body = 500, {"error": f"{type(exc).__name__}"[:500], "kind": "error"}
            self._write(writer, {"id": frame.get("id"), "status": status, "body": body, "part": 2})

    async def _stream(self, request_id: Any, stream: Stream, writer: asyncio.StreamWriter) -> None:
        """Each item of ``stream`` in a frame of its own as it comes, then the end (the request's task is
        cancelled when the client closes its end)."""
        status, body = 200, {}
        try:
            async for item in stream.items:
                self._write(writer, {"id": request_id, "status": 200, "body": {"item": item}, "stream": True})
                await writer.drain()
        except ConnectionError:
            return  # the client left (the page closed): nothing to end
        except Exception:
            logger.exception("A streamed answer of the supervisor link failed")
            status, body = 500, {"error": "the stream failed", "kind": "error"}
        self._write(writer, {"id": request_id, "status": status, "body": body, "end": True})

    @staticmethod
    def _write(writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
        try:
            data = link_wire.encode(answer)
        except link_wire.FrameError as exc:
            data = link_wire.encode({**answer, "status": 500, "body": {"error": str(exc), "kind": "error"}})
        if not writer.is_closing():
            writer.write(data)

    async def _handle(self, frame: dict[str, Any], caller: _Caller) -> tuple[int, dict[str, Any]]:
        """``(status, body)`` of one request ``{"bot", "group", "path", "body"}`` of ``caller``."""
        group, path = str(frame.get("group") or link_scope.BOT), str(frame.get("path") or "")
        try:
            bot_id = int(frame["bot"]) if frame.get("bot") is not None else None
        except (TypeError, ValueError):
            return 400, {"error": "bad request: not a bot id", "kind": "bad_request"}
        if caller.scope is None:
            return caller.refuse(401, "missing or wrong token", group, path, bot_id)
        why = link_scope.refusal(caller.scope, group, path.removeprefix("store/"), bot_id)
        if why is not None:
            return caller.refuse(403, why, group, path, bot_id)
        payload = frame.get("body")
        payload = payload if isinstance(payload, dict) else {}
        if group != link_scope.BOT:
            return await self._group(group, bot_id, path, payload)
        if bot_id is None:
            return 400, {"error": "bad request: no bot", "kind": "bad_request"}
        if path == "heartbeat":
            return self._heartbeat(bot_id, payload)
        if not path.startswith("store/"):
            return 404, {"error": f"no such path: {path!r}", "kind": "bad_request"}
        if self._store is None:
            return 404, {"error": "this supervisor serves no data"}
        op = path.removeprefix("store/")
        if timings_logger.isEnabledFor(logging.DEBUG):  # bench/fleet.py --stages counts them per message
            timings_logger.debug("bot %s: link request %s", bot_id, op)
        try:
            return 200, {"result": await self._store(bot_id, op, payload)}
        except StoreError as exc:
            return exc.status, {"error": str(exc), "kind": exc.kind}
        except Exception as exc:  # the bot reports it (and tries again later); the supervisor keeps the traceback
            logger.exception("Bot %s: the store operation %r failed", bot_id, op, extra={"bot_id": bot_id})
            message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".strip(": ")
            return 500, {"error": message[:500], "kind": "error"}

    async def _group(self, group: str, bot_id: int | None, op: str, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Operation ``op`` of a group besides ``bot`` (domain errors in their words, others logged)."""
        handler = self._groups.get(group)
        if handler is None:
            return 404, {"error": f"this supervisor serves no {group} operations", "kind": "not_found"}
        try:
            return 200, {"result": await handler(bot_id, op, payload)}
        except NotFoundError as exc:
            return 404, {"error": str(exc), "kind": "not_found"}
        except (ValidationError, ValueError, TypeError, KeyError) as exc:
            return 400, {"error": str(exc) or type(exc).__name__, "kind": "validation"}
        except MemoryUnavailable as exc:
            return 503, {"error": str(exc), "kind": "unavailable"}
        except Exception as exc:
            logger.exception("The %s operation %r failed", group, op)
            from grobot.core.memory.link_ops import failure

            return 500, {"error": failure(exc), "kind": "error"}

    def _heartbeat(self, bot_id: int, data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        try:
            report = Report(bot_id=bot_id, pid=int(data["pid"]), guild_count=int(data.get("guild_count") or 0),
                            online=bool(data.get("online")))
        except (ValueError, TypeError, KeyError) as exc:
            return 400, {"error": f"bad heartbeat: {exc}"}
        return 200, self._on_report(report).as_dict()


class _Caller:
    """One connection's caller: the scope its token proves (None: none), and where it connects from."""

    def __init__(self, scope: link_scope.Scope | None, peer: Any) -> None:
        self.scope, self.peer = scope, peer
        self._said: set[str] = set()

    def refuse(self, status: int, why: str, group: str, path: str, bot_id: int | None) -> tuple[int, dict[str, Any]]:
        """Refuse a request, and log it (once per connection and reason: a client that retries does not flood)."""
        if why not in self._said:
            self._said.add(why)
            who = self.scope.name if self.scope is not None else "a client without a valid token"
            logger.warning("Supervisor link refused %s (from %s) %s %r for bot %s: %s", who, self.peer, group, path,
                           bot_id, why)
        return status, {"error": why, "kind": "refused"}


class FleetState(Protocol):
    """What the link reads of its supervisor's reconcile loop."""

    supervisor_id: str
    held: set[int]  # the bots whose leases it holds
    lease_expires: datetime | None  # of the leases as last written
    config_versions: dict[int, str]  # bot id -> version of its settings, as of the last poll
    last_renewal: float  # monotonic time of the last poll that reached the database

    def runs(self, bot_id: int, pid: int) -> bool:
        """Is process ``pid`` the one it runs for bot ``bot_id``?"""


class MemoryHost(Protocol):
    """Where the link finds the supervisor's memory (:class:`bot_worker.supervisor_jobs.SupervisorJobs`)."""

    memory: LocalMemory | None  # None: this supervisor holds no store (another one holds the embedded one)

    async def sync_documents(self) -> None:
        """Bring the bots' document index up to date now."""


class SupervisorLink:
    """The bot link of one supervisor (``state``: its reconcile loop); ``poll_seconds``: its period."""

    def __init__(self, state: FleetState, *, poll_seconds: float, deps: ChainDeps | None = None,
                 memory: MemoryHost | None = None, tester_chat: ChatRunner | None = None) -> None:
        self.state = state
        self.poll_seconds = poll_seconds
        self.memory = memory
        self.heartbeats: dict[int, fleet.Heartbeat] = {}  # reported, written at the next reconcile
        # The bots' data in threads of its own (as many as the database pool's base size,
        # which leaves the overflow to the supervisor's own work).
        self.store = LocalBotStore(ThreadPoolExecutor(max_workers=get_settings().db_pool_size,
                                                      thread_name_prefix="grobot-bot-store"), deps=deps)
        groups: dict[str, GroupHandler] = {link_scope.MEMORY: self.serve_memory}
        if tester_chat is not None:
            runner = tester_chat
            groups[link_scope.TESTER_CHAT] = lambda bot_id, op, payload: serve_tester_chat(runner, op, payload)
        self.server = BotLinkServer(self.on_report, store=self.serve, groups=groups)

    async def start(self) -> str:
        """Listen (raises OSError when it cannot); returns the base URL."""
        return await self.server.start()

    async def stop(self) -> None:
        await self.server.stop()
        if self.store.executor is not None:
            self.store.executor.shutdown(wait=False, cancel_futures=True)

    def env(self, bot_id: int) -> dict[str, str]:
        """What bot ``bot_id``'s process needs to reach the link (blank when it did not start)."""
        return self.server.env(bot_id)

    async def serve(self, bot_id: int, op: str, payload: dict[str, Any]) -> Any:
        """A bot's read or write, over the bot link (bots import no database layer)."""
        return await dispatch(self.store, bot_id, op, payload)

    async def serve_memory(self, bot_id: int | None, op: str, payload: dict[str, Any]) -> Any:
        """A memory operation (a bot's, the web app's, the CLI's) on this supervisor's store."""
        store = self.memory.memory if self.memory is not None else None
        if store is None:
            raise MemoryUnavailable("this bot worker holds no memory store (another worker holds the embedded one)")
        from grobot.core.memory.link_ops import serve

        return await serve(store, op, bot_id, payload, sync_documents=self.memory.sync_documents if self.memory else None)

    def on_report(self, report: Report) -> Answer:
        """A bot process's heartbeat: kept for the next reconcile; the answer lets the bot fence itself."""
        state = self.state
        if not state.runs(report.bot_id, report.pid):
            return Answer(ok=False)  # not (or no longer) the process this supervisor runs for the bot
        self.heartbeats[report.bot_id] = fleet.Heartbeat(report.bot_id, report.pid, utcnow(), report.guild_count,
                                                         report.online)
        # The settings version is as of the last poll: not vouched for once polls fail.
        fresh = time.monotonic() - state.last_renewal < 3 * self.poll_seconds + 1
        config = state.config_versions.get(report.bot_id, "") if fresh else ""
        if report.bot_id not in state.held:
            return Answer(ok=True, config=config)
        return Answer(ok=True, holder=state.supervisor_id, expires=state.lease_expires, config=config)

    def take_heartbeats(self) -> dict[int, fleet.Heartbeat]:
        """The heartbeats to write now, of processes still running (a late write must not show
        an exited one online)."""
        beats, self.heartbeats = self.heartbeats, {}
        return {bot_id: beat for bot_id, beat in beats.items() if self.state.runs(bot_id, beat.pid)}

    def put_back(self, beats: dict[int, fleet.Heartbeat]) -> None:
        """Heartbeats a reconcile could not write: written next time (the newer ones win)."""
        self.heartbeats = {**beats, **self.heartbeats}

