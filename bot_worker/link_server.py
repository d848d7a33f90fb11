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

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Protocol

from bot_worker.bot_link import Answer, BotLinkServer, Report
from bot_worker.link_ops import dispatch
from bot_worker.local_store import LocalBotStore
from grobot.core.agents.deps import ChainDeps
from grobot.core.models import utcnow
from grobot.core.services import fleet
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)


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
