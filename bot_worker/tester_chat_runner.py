"""The supervisor's Test Chat runner: claims pending Test Chat messages, answers them through the
agent chain, and serves their events live to the web app (the ``tester_chat`` group of the
supervisor's link, :func:`serve`).

The web app stores a message ``pending``, then, instead of waiting for the runner's poll, follows
the run at once (``events`` with ``claim``: the runner claims the message and streams the run's
events as the chain emits them); ``wake`` claims without following, ``cancel`` stops a run. A poll
every ``GROBOT_TEST_CHAT_POLL_SECONDS`` still claims what nobody woke it for (a message sent while
no worker ran). A run takes the path of a Discord message (:mod:`grobot.core.answering`): the
same checks (limits, the user's cooldown, the bot's cap on runs at once; one :class:`FloodGate`
per bot), then the chain, with the supervisor's dependencies (its database, memory and MCP sessions).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot_worker.bot_link import Stream
from bot_worker.tester_chat_job import run_tester_chat_job
from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.types import FINAL_KINDS, Event, EventKind
from grobot.core.answering import FloodGate
from grobot.core.db import session_scope
from grobot.core.errors import NotFoundError, error_line
from grobot.core.models import MessageStatus
from grobot.core.services import tester_chat
from grobot.core.store.local import local_deps

logger = logging.getLogger(__name__)

CLAIM_WAIT_SECONDS = 10.0  # a follow of a message waiting to be claimed here waits this long for the claim
FEED_KEEP_SECONDS = 60.0  # an ended run's events stay to be read this long (a page that reloads)
END_WRITE_FIRST_WAIT = 0.5  # the end of a run is written again after this (doubling) while the database refuses it
END_WRITE_MAX_WAIT = 10.0
SHUTDOWN_REASON = "the bot worker stopped; please send the message again"
STOP_REASON = "stopped in the Test Chat"


@dataclass(frozen=True)
class Job:
    """A claimed Test Chat message."""

    message_id: int
    bot_id: int
    key: str
    content: str
    author_id: str
    author_name: str
    claimed_at: datetime | None = None  # the claim's time: the end of this try is written for this claim only


class RunFeed:
    """The events of one run, kept for the pages that follow it (each may start from any index)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.ended_at: float | None = None
        self._changed = asyncio.Event()

    def add(self, kind: str, data: dict[str, Any]) -> None:
        if self.ended_at is not None:
            return
        self.events.append({"i": len(self.events), "kind": kind, "data": data, "t": time.time()})
        if kind in {k.value for k in FINAL_KINDS}:
            self.ended_at = time.monotonic()
        self._changed.set()
        self._changed = asyncio.Event()

    def end(self, message: str, *, cancelled: bool = False) -> None:
        """End a run that had no terminal event (its checks refused it, or it crashed)."""
        self.add(EventKind.ERROR.value, {"message": message, **({"cancelled": True} if cancelled else {})})

    async def sink(self, event: Event) -> None:
        self.add(event.kind.value, event.data)

    async def read(self, after: int) -> Any:
        """The events after index ``after`` as they come, until the run ends."""
        index = after + 1
        while True:
            while index < len(self.events):
                yield self.events[index]
                index += 1
            if self.ended_at is not None:
                return
            await self._changed.wait()


@dataclass
class ChatRunner:
    """Claims and answers Test Chat messages for one supervisor, a few at a time."""


    supervisor_id: str
    concurrency: int = 4
    jobs: dict[int, asyncio.Task[Any]] = field(default_factory=dict)
    feeds: dict[int, RunFeed] = field(default_factory=dict)
    deps: ChainDeps = field(default_factory=local_deps)
    answer: Callable[..., Awaitable[str | None]] = run_tester_chat_job

    def __post_init__(self) -> None:
        # Its own threads for the claims and the ends of runs: the supervisor's default pool may be
        # busy (housekeeping, the memory store loading), and a tester waits on these.
        self.executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="grobot-test-chat")
        self.gates: dict[int, FloodGate] = {}  # per bot, like a bot process's
        self._claiming = asyncio.Lock()
        self._changed = asyncio.Event()  # set (and replaced) when a run starts or ends here
        self.stopping = False

    async def poll(self) -> list[int]:
        """Claim pending messages (as many as there are free slots) and start answering them."""
        async with self._claiming:
            free = self.concurrency - len(self.jobs)
            if free <= 0 or self.stopping:
                return []
            try:
                claimed = await asyncio.get_running_loop().run_in_executor(self.executor, _claim,
                                                                           self.supervisor_id, free)
            except Exception as exc:
                logger.debug("Test Chat claim failed: %s", type(exc).__name__)
                return []
            for job in claimed:
                self.start(job)
            self._forget_old_feeds()
            return [job.message_id for job in claimed]

    def start(self, job: Job) -> None:
        feed = self.feeds[job.message_id] = RunFeed()
        task = asyncio.get_running_loop().create_task(self._run(job, feed))
        self.jobs[job.message_id] = task
        task.add_done_callback(functools.partial(self._forget_job, job.message_id))
        self._signal()

    def _forget_job(self, message_id: int, _task: asyncio.Task[Any]) -> None:
        self.jobs.pop(message_id, None)
        self._signal()

    def _signal(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def claimed_feed(self, run_id: int, wait: float = CLAIM_WAIT_SECONDS) -> RunFeed | None:
        """The feed of run ``run_id`` once this runner claims it (None: it does not, within ``wait`` s).

        Claims pending messages first. While the message still waits to be claimed here (every slot
        busy, the database away for a moment) it claims again as runs end; a feed kept from an earlier
        try of the message (sent again after a failure) is not this try's."""
        earlier = self.feeds.get(run_id)
        give_up = time.monotonic() + wait
        while True:
            changed = self._changed
            await self.poll()
            feed = self.feeds.get(run_id)
            if feed is not None and feed is not earlier:
                return feed
            left = give_up - time.monotonic()
            if left <= 0 or self.stopping or not await self._may_claim(run_id):
                return None
            try:
                await asyncio.wait_for(changed.wait(), min(left, 1.0))  # a run ended (a free slot), or a second try
            except TimeoutError:
                pass

    async def _may_claim(self, run_id: int) -> bool:
        """Whether message ``run_id`` waits to be claimed (or is being claimed here right now)."""
        try:
            status, holder = await asyncio.get_running_loop().run_in_executor(self.executor, _holder, run_id)
        except Exception as exc:
            logger.debug("Test Chat run %s: could not read who holds it: %s", run_id, type(exc).__name__)
            return True  # the database is away for a moment: the deadline decides
        return status == MessageStatus.PENDING.value or (status == MessageStatus.RUNNING.value
                                                         and holder == self.supervisor_id)

    def cancel(self, run_id: int, reason: str = STOP_REASON) -> bool:
        """Stop run ``run_id`` if it runs here: its chain ends with one event saying it was cancelled."""
        task = self.jobs.get(run_id)
        if task is None or task.done():
            return False
        logger.info("Test Chat run %s: cancelled (%s)", run_id, reason)
        task.cancel(reason)
        return True

    async def shutdown(self) -> None:
        self.stopping = True
        for run_id in list(self.jobs):
            self.cancel(run_id, SHUTDOWN_REASON)
        if self.jobs:
            await asyncio.gather(*self.jobs.values(), return_exceptions=True)
        self.executor.shutdown(wait=False)

    def _forget_old_feeds(self) -> None:
        now = time.monotonic()
        for run_id, feed in list(self.feeds.items()):
            if feed.ended_at is not None and now - feed.ended_at > FEED_KEEP_SECONDS:
                del self.feeds[run_id]

    async def _run(self, job: Job, feed: RunFeed) -> None:
        try:
            error = await self.answer(job.message_id, job.bot_id, job.key, job.content, job.author_id,
                                      job.author_name, deps=self.deps,
                                      gate=self.gates.setdefault(job.bot_id, FloodGate()), sink=feed.sink)
        except asyncio.CancelledError as exc:
            reason = exc.args[0] if exc.args and isinstance(exc.args[0], str) else SHUTDOWN_REASON
            feed.end(f"the run was cancelled ({reason})", cancelled=True)  # unless the chain ended it already
            await asyncio.shield(self._write_end(tester_chat.cancel, job, f"the run was cancelled ({reason})"))
            return  # the run is over; the task ends normally (a shutdown gathers it)
        except Exception as exc:
            logger.exception("Test Chat job %s failed", job.message_id, extra={"bot_id": job.bot_id})
            error = f"{type(exc).__name__}: {str(exc)[:300]}"
        # Shielded: a Stop that comes while the end is written (again) must not leave the run "running".
        if error:
            feed.end(error)
            await asyncio.shield(self._write_end(tester_chat.fail, job, error))
        else:
            await asyncio.shield(self._write_end(tester_chat.finish, job))

    async def _write_end(self, fn: Any, job: Job, *args: Any) -> None:
        """Store the end of ``job``'s run, trying again while the database refuses it (locked, away):
        a run must not stay "running". Once the runner stops, one try (the next supervisor ends the
        run as abandoned). Written for the job's claim only: a message sent again meanwhile (Retry)
        is not ended by its earlier try."""
        message_id = job.message_id
        wait = END_WRITE_FIRST_WAIT
        failures = 0
        while True:
            try:
                await asyncio.to_thread(_write, fn, message_id, *args, claimed_at=job.claimed_at)
            except Exception as exc:
                failures += 1
                if failures == 1:
                    logger.warning("Could not write the end of Test Chat run %s (%s); trying again until it is "
                                   "stored", message_id, error_line(exc, 200))
                if self.stopping:
                    return
                await asyncio.sleep(wait)
                wait = min(wait * 2, END_WRITE_MAX_WAIT)
                continue
            if failures:
                logger.info("The end of Test Chat run %s is stored (after %d failed tries)", message_id, failures)
            return


def _claim(supervisor_id: str, limit: int) -> list[Job]:
    from grobot.core.models import Conversation

    with session_scope() as session:
        out = []
        for msg in tester_chat.claim_pending(supervisor_id, session=session, limit=limit):
            conv = session.get(Conversation, msg.conversation_id)
            if conv is None:
                continue
            out.append(Job(msg.id or 0, conv.bot_id, conv.key, msg.content, msg.author_id or "tester",
                           msg.author_name or "tester", msg.claimed_at))
        return out


def _holder(run_id: int) -> tuple[str, str | None]:
    with session_scope(readonly=True) as session:
        return tester_chat.run_holder(run_id, session=session)


def _write(fn: Any, *args: Any, **kwargs: Any) -> None:
    with session_scope() as session:
        fn(*args, session=session, **kwargs)


async def serve(runner: ChatRunner, op: str, data: dict[str, Any]) -> Any:
    """Operation ``op`` of the link's ``tester_chat`` group on ``runner`` (the web app's: its admin token).

    - ``wake``: claim now; the runs claimed and every run this runner holds (its own poll may have
      claimed the caller's message a moment before);
    - ``events`` (``run_id``, ``after``, ``claim``): the run's events after index ``after`` as a stream,
      until the run ends (``claim``: claim pending messages first, so that the page that just sent one
      is already listening when the run starts);
    - ``cancel`` (``run_id``, ``reason``): stop the run.

    :class:`NotFoundError` when the run is not running here.
    """
    if op == "wake":
        claimed = await runner.poll()
        return {"claimed": claimed, "running": sorted(runner.jobs)}
    run_id = int(data.get("run_id") or 0)
    if op == "cancel":
        if not runner.cancel(run_id, str(data.get("reason") or STOP_REASON)[:200]):
            raise NotFoundError("not running here")
        return {"cancelled": True}
    if op == "events":
        feed = runner.feeds.get(run_id)
        if data.get("claim") and (feed is None or feed.ended_at is not None):
            feed = await runner.claimed_feed(run_id)  # an ended feed: an earlier try of a message sent again
        if feed is None:
            raise NotFoundError("not running here")
        return Stream(feed.read(int(data.get("after", -1))))
    raise NotFoundError(f"the tester_chat group has no operation {op!r}")
