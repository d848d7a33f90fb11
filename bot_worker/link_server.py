"""The supervisor's end of the bot link: its bots' heartbeats in, their data served.

:class:`SupervisorLink` runs the :class:`bot_worker.bot_link.BotLinkServer` of a
supervisor. It keeps the heartbeats its bot processes report until the next reconcile
writes them (:meth:`SupervisorLink.take_heartbeats`), answers each with what the bot needs
to fence itself, and serves the bots' reads and writes (:func:`bot_worker.link_ops.dispatch`
on a :class:`bot_worker.local_store.LocalBotStore` with threads of its own). What it
knows of the fleet (which processes run, which leases are held) it reads from the
reconcile loop (:class:`FleetState`).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Protocol

from bot_worker import link_wire
from bot_worker.bot_link import TOKEN_ENV, URL_ENV, Answer, InParts, Report, StoreError
from bot_worker.link_ops import dispatch
from bot_worker.local_store import LocalBotStore
from bot_worker.timings import timings_logger
from grobot.core.agents.deps import ChainDeps
from grobot.core.models import utcnow
from grobot.core.services import fleet
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)


StoreHandler = Callable[[int, str, dict[str, Any]], Awaitable[Any]]


class BotLinkServer:
    """The supervisor's end: ``on_report`` answers each bot's heartbeat (called on the event loop);
    ``store`` serves the data operations, ``(bot id, op, payload) -> result``.

    Each connection's requests run as they come, side by side; each answer goes back as its
    request finishes (:mod:`bot_worker.link_wire`).
    """

    name = "Bot link"

    def __init__(self, on_report: Callable[[Report], Answer], *, store: StoreHandler | None = None,
                 host: str = "127.0.0.1") -> None:
        self.host = host
        self.url = ""
        self._on_report = on_report
        self._store = store
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
        """The token of bot ``bot_id`` (valid for its own paths only)."""
        return hmac.new(self._secret, f"bot:{bot_id}".encode(), hashlib.sha256).hexdigest()

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
            while True:
                frame = await link_wire.read_frame(reader)
                request = asyncio.create_task(self._answer(frame, token, writer))
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

    async def _answer(self, frame: dict[str, Any], token: str, writer: asyncio.StreamWriter) -> None:
        status, body = await self._handle(frame, token)
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

    @staticmethod
    def _write(writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
        try:
            data = link_wire.encode(answer)
        except link_wire.FrameError as exc:
            data = link_wire.encode({**answer, "status": 500, "body": {"error": str(exc), "kind": "error"}})
        if not writer.is_closing():
            writer.write(data)

    async def _handle(self, frame: dict[str, Any], token: str) -> tuple[int, dict[str, Any]]:
        """``(status, body)`` of one request ``{"bot", "path", "body"}`` sent with ``token``."""
        try:
            bot_id = int(frame.get("bot"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return 400, {"error": "bad request: no bot", "kind": "bad_request"}
        if not hmac.compare_digest(token, self.token(bot_id)):
            return 401, {"error": "missing or wrong token"}
        path, payload = str(frame.get("path") or ""), frame.get("body")
        payload = payload if isinstance(payload, dict) else {}
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

    def _heartbeat(self, bot_id: int, data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        try:
            report = Report(bot_id=bot_id, pid=int(data["pid"]), guild_count=int(data.get("guild_count") or 0),
                            online=bool(data.get("online")))
        except (ValueError, TypeError, KeyError) as exc:
            return 400, {"error": f"bad heartbeat: {exc}"}
        return 200, self._on_report(report).as_dict()


class FleetState(Protocol):
    """What the link reads of its supervisor's reconcile loop."""

    supervisor_id: str
    held: set[int]  # the bots whose leases it holds
    lease_expires: datetime | None  # of the leases as last written
    config_versions: dict[int, str]  # bot id -> version of its settings, as of the last poll
    last_renewal: float  # monotonic time of the last poll that reached the database

    def runs(self, bot_id: int, pid: int) -> bool:
        """Is process ``pid`` the one it runs for bot ``bot_id``?"""


class SupervisorLink:
    """The bot link of one supervisor (``state``: its reconcile loop); ``poll_seconds``: its period."""

    def __init__(self, state: FleetState, *, poll_seconds: float, deps: ChainDeps | None = None) -> None:
        self.state = state
        self.poll_seconds = poll_seconds
        self.heartbeats: dict[int, fleet.Heartbeat] = {}  # reported, written at the next reconcile
        # The bots' data in threads of its own (as many as the database pool's base size,
        # which leaves the overflow to the supervisor's own work).
        self.store = LocalBotStore(ThreadPoolExecutor(max_workers=get_settings().db_pool_size,
                                                      thread_name_prefix="grobot-bot-store"), deps=deps)
        self.server = BotLinkServer(self.on_report, store=self.serve)

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

