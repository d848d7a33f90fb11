"""A bot process's heartbeats and lease: it reports to its supervisor and stops in time.

:class:`LeaseKeeper` sends a heartbeat every period, learns from each answer whether the
process may go on (still the registered process, its supervisor still the lease holder),
until when the lease runs (PostgreSQL fencing, see :class:`~bot_worker.bot_link.LeaseWatch`)
and which version of the bot's settings the supervisor last read. It knows the bot only
through :class:`LeasedClient` and the link only through :class:`HeartbeatLink`, so it is
tested without Discord.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any, Protocol

from bot_worker.bot_link import Answer, LeaseWatch, Report, seconds_until
from bot_worker.exit_codes import EXIT_REPLACED

logger = logging.getLogger(__name__)

LINK_TIMEOUT_SECONDS = 2.0  # the supervisor is on this host: an answer takes milliseconds
PARENT_CHECK_SECONDS = 1.0


class HeartbeatLink(Protocol):
    """Where the heartbeats go: the bot link to the supervisor (or the database, see :class:`DatabaseHeartbeats`)."""

    async def heartbeat(self, report: Report, *, timeout: float) -> Answer: ...


class LeasedClient(Protocol):
    """What the keeper needs of the bot's client."""

    def is_closed(self) -> bool: ...

    def gateway_state(self) -> tuple[int, bool]:
        """``(guild count, connected to the gateway)``, for the heartbeat report."""
        ...

    async def stop(self, exit_code: int | None = None) -> None:
        """Close the client; ``exit_code`` becomes the process's (None: keep the current one)."""
        ...


class DatabaseHeartbeats:
    """A bot started by hand (no supervisor link) writes its heartbeats to the database through its store."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def heartbeat(self, report: Report, *, timeout: float) -> Answer:
        ok, holder, expires = await self.store.heartbeat(report.bot_id, pid=report.pid, guild_count=report.guild_count,
                                                         online=report.online)
        return Answer(ok=ok, holder=holder, expires=expires)


class LeaseKeeper:
    """The heartbeats of one bot process, its lease fencing and the supervisor's word on its settings.

    ``fencing``: the supervisor ``supervisor_id`` holds a lease that may pass to another
    supervisor (PostgreSQL): the process stops before it can. ``config_version``: the
    settings version read at the start, vouched for until the first answer.
    """

    def __init__(self, client: LeasedClient, link: HeartbeatLink, *, bot_id: int, heartbeat_seconds: float,
                 supervisor_id: str | None = None, fencing: bool = False, config_version: str = "",
                 margin: float | None = None, link_timeout: float = LINK_TIMEOUT_SECONDS,
                 pid: int | None = None, parent_pid: Callable[[], int] = os.getppid) -> None:
        self.client = client
        self.link = link
        self.bot_id = bot_id
        self.pid = os.getpid() if pid is None else pid
        self.heartbeat_seconds = heartbeat_seconds
        self.supervisor_id = supervisor_id
        self.link_timeout = link_timeout
        self._parent_pid = parent_pid
        self._parent = parent_pid()  # the supervisor that started this process
        # The version of the bot's settings as the supervisor last read them, and when it said so (monotonic).
        self.config_version = config_version
        self.config_seen_at = time.monotonic()
        # PostgreSQL fencing: stop before the lease can pass to another supervisor.
        self.fence = LeaseWatch(margin=heartbeat_seconds + 2.0 if margin is None else margin,
                                on_lapse=self._lapsed) if supervisor_id and fencing else None
        self._confirming = False
        self._tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ lifecycle
    async def start(self, initial: datetime | None) -> None:
        """Arm the fence with the lease the process started with, then beat and watch the parent.

        A supervisor frozen from the start is fenced too; a bot that took long to start
        confirms its lease first (and may stop: then nothing starts).
        """
        if self.fence is not None and initial is not None:
            self.fence.expires = initial
            if seconds_until(initial) <= self.fence.margin:
                await self.confirm_or_stop()
                if self.client.is_closed():
                    return
            else:
                self.fence.renewed(initial)
        self._spawn(self.heartbeat_loop())
        self._spawn(self.watch_parent())

    def close(self) -> None:
        """The client closes: no lapse fires any more (the loops end by themselves)."""
        if self.fence is not None:
            self.fence.cancel()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ------------------------------------------------------------------ heartbeats
    async def beat(self) -> Answer:
        """Send one heartbeat report; the supervisor's answer."""
        guild_count, online = self.client.gateway_state()
        return await self.link.heartbeat(Report(self.bot_id, self.pid, guild_count, online),
                                         timeout=min(self.heartbeat_seconds, self.link_timeout))

    async def heartbeat_loop(self) -> None:
        """Beat every period until the client closes; a failing beat is retried (the fence stops
        the bot in time if that lasts), a refusal stops it."""
        failures = 0
        while not self.client.is_closed():
            await asyncio.sleep(self.heartbeat_seconds)
            if self.client.is_closed():
                return
            try:
                # Bounded: a call that hangs must count as a failure (fencing does not wait on it).
                answer = await asyncio.wait_for(self.beat(), timeout=self.heartbeat_seconds + 1)
                if failures:
                    logger.info("Heartbeat delivered again")
                failures = 0
            except Exception as exc:
                failures += 1
                if failures == 1:
                    logger.warning("Heartbeat failed (%s); retrying", exc if isinstance(exc, ConnectionError)
                                   else type(exc).__name__)
                continue
            if await self.ends_with(answer):
                return
            self.config_version, self.config_seen_at = answer.config, time.monotonic()
            if self.fence is not None and answer.expires is not None:
                self.fence.renewed(answer.expires)

    def refusal(self, answer: Answer) -> str:
        """Why an answer to a heartbeat means this process must stop ("": it may go on)."""
        if not answer.ok:
            return "another process is registered for this bot"
        if self.fence is not None and answer.holder != self.supervisor_id:
            return ("the bot's lease is held by another supervisor" if answer.holder
                    else "the supervisor no longer holds the bot's lease")
        return ""

    async def ends_with(self, answer: Answer) -> bool:
        """Whether this process ends after ``answer``: it is closing already, or the answer refuses
        it (then it stops, fenced)."""
        if self.client.is_closed():
            return True
        refusal = self.refusal(answer)
        if refusal:
            await self.stop_fenced(refusal)
        return bool(refusal)

    def vouches_for(self, version: str) -> bool:
        """Did the supervisor recently say the bot's settings are at ``version``? (A failing link
        or failing polls end the trust after two heartbeat periods.)"""
        recent = time.monotonic() - self.config_seen_at < 2 * self.heartbeat_seconds
        return bool(version) and version == self.config_version and recent

    async def stop_fenced(self, why: str) -> None:
        logger.error("Stopping: %s", why)
        await self.client.stop(EXIT_REPLACED)

    # ------------------------------------------------------------------ fencing
    def _lapsed(self) -> None:
        if not self._confirming:
            self._spawn(self.confirm_or_stop())

    async def confirm_or_stop(self) -> None:
        """The lease is about to run out: ask the supervisor until it is renewed, or stop in time.

        A supervisor that is only busy for a moment (a batch of starts, a slow poll) keeps
        its bots; one frozen, dead or unable to renew loses them a little before the lease
        can pass to another supervisor.
        """
        fence = self.fence
        assert fence is not None and fence.expires is not None
        # Seconds before the expiry: time to close the gateway connection, and room for the clocks
        # of two supervisor hosts to differ a little (leases are written with each host's clock).
        stop_before = min(fence.margin / 2, 3.0)
        self._confirming = True
        try:
            while not self.client.is_closed():
                left = seconds_until(fence.expires)
                if left > fence.margin:
                    return  # renewed meanwhile (by the heartbeats, which re-armed the watch)
                if left <= stop_before:
                    break
                try:
                    answer = await asyncio.wait_for(self.beat(), timeout=min(self.link_timeout, left - stop_before))
                except Exception:
                    await asyncio.sleep(confirm_pause(fence.expires, stop_before))
                    continue
                if await self.ends_with(answer):
                    return
                if answer.expires is not None and seconds_until(answer.expires) > fence.margin:
                    fence.renewed(answer.expires)
                    return
                await asyncio.sleep(confirm_pause(fence.expires, stop_before))  # not renewed yet
            if not self.client.is_closed():
                await self.stop_fenced("the supervisor stopped renewing the lease")
        finally:
            self._confirming = False

    # ------------------------------------------------------------------ parent
    async def watch_parent(self, interval: float = PARENT_CHECK_SECONDS) -> None:
        """Stop when the supervisor is gone (this process was re-parented)."""
        while not self.client.is_closed():
            await asyncio.sleep(interval)
            if self._parent_pid() != self._parent:
                logger.warning("The supervisor is gone: stopping")
                await self.client.stop()
                return


def confirm_pause(expires: datetime, stop_before: float) -> float:
    """Between two questions: a fraction of the time left, jittered (a fleet asks together)."""
    left = max(0.0, seconds_until(expires) - stop_before)
    return min(1.0, left / 4) * random.uniform(0.5, 1.0)
