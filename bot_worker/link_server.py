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

import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Protocol

import orjson
from aiohttp import web

from bot_worker.bot_link import TOKEN_ENV, URL_ENV, Answer, Report, StoreError
from bot_worker.link_ops import dispatch
from bot_worker.local_http import LocalServer, bearer_token
from bot_worker.local_store import LocalBotStore
from grobot.core.agents.deps import ChainDeps
from grobot.core.models import utcnow
from grobot.core.services import fleet
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)


StoreHandler = Callable[[int, str, dict[str, Any]], Awaitable[Any]]


class BotLinkServer(LocalServer):
    """The supervisor's end: ``on_report`` answers each bot's heartbeat (called on the event loop);
    ``store`` serves the data operations, ``(bot id, op, payload) -> result``."""

    name = "Bot link"

    def __init__(self, on_report: Callable[[Report], Answer], *, store: StoreHandler | None = None,
                 host: str = "127.0.0.1") -> None:
        super().__init__(host)
        self._on_report = on_report
        self._store = store
        self._secret = secrets.token_bytes(32)

    async def start(self) -> str:
        """Listen on an ephemeral port; returns the base URL."""
        app = web.Application(client_max_size=32 * 1024 * 1024)  # a run's events, a batch of log records
        app.add_routes([web.post("/v1/bots/{bot_id:\\d+}/heartbeat", self._heartbeat),
                        web.post("/v1/bots/{bot_id:\\d+}/store/{op}", self._store_op)])
        return await self.serve(app)

    def token(self, bot_id: int) -> str:
        """The bearer token of bot ``bot_id`` (valid for its own paths only)."""
        return hmac.new(self._secret, f"bot:{bot_id}".encode(), hashlib.sha256).hexdigest()

    def env(self, bot_id: int) -> dict[str, str]:
        """What bot ``bot_id``'s process needs to reach this server (blank when it did not start)."""
        return {URL_ENV: self.url, TOKEN_ENV: self.token(bot_id) if self.url else ""}

    def _bot_id(self, request: web.Request) -> int | None:
        """The bot of the path, when the request carries its token."""
        bot_id = int(request.match_info["bot_id"])
        return bot_id if hmac.compare_digest(bearer_token(request), self.token(bot_id)) else None

    async def _store_op(self, request: web.Request) -> web.Response:
        bot_id = self._bot_id(request)
        if bot_id is None:
            return web.json_response({"error": "missing or wrong bearer token"}, status=401)
        if self._store is None:
            return web.json_response({"error": "this supervisor serves no data"}, status=404)
        op = request.match_info["op"]
        try:
            payload = await request.json(loads=orjson.loads)
        except ValueError as exc:
            return web.json_response({"error": f"bad request: {exc}", "kind": "bad_request"}, status=400)
        try:
            result = await self._store(bot_id, op, payload if isinstance(payload, dict) else {})
        except StoreError as exc:
            return web.json_response({"error": str(exc), "kind": exc.kind}, status=exc.status)
        except Exception as exc:  # the bot reports it (and tries again later); the supervisor keeps the traceback
            logger.exception("Bot %s: the store operation %r failed", bot_id, op, extra={"bot_id": bot_id})
            message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".strip(": ")
            return web.json_response({"error": message[:500], "kind": "error"}, status=500)
        return web.Response(body=orjson.dumps({"result": result}, default=str), content_type="application/json")

    async def _heartbeat(self, request: web.Request) -> web.Response:
        if self._bot_id(request) is None:
            return web.json_response({"error": "missing or wrong bearer token"}, status=401)
        try:
            data = await request.json()
            report = Report(bot_id=int(request.match_info["bot_id"]), pid=int(data["pid"]),
                            guild_count=int(data.get("guild_count") or 0), online=bool(data.get("online")))
        except (ValueError, TypeError, KeyError) as exc:
            return web.json_response({"error": f"bad heartbeat: {exc}"}, status=400)
        return web.json_response(self._on_report(report).as_dict())


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
