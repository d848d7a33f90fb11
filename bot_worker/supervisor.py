"""The supervisor: one process per enabled bot, reconciled with the database.

An APScheduler ``AsyncIOScheduler`` runs the reconcile loop every ``GROBOT_POLL_SECONDS``
(coalesced, one instance at a time), a fast reaper that notices dead bot processes, and
the Test Chat job runner. Leases (``grobot.core.services.fleet``) make sure one bot runs
in one place only; on PostgreSQL a supervisor that cannot renew its leases stops its bots
before they can expire (fencing), so another supervisor may take them over safely. Its
bots reach it over the bot link (:mod:`bot_worker.link_server`): their heartbeats, their data.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot_worker.bot_link import LEASE_ENV
from bot_worker.embedded_models import EmbeddedModels
from bot_worker.exit_codes import EXIT_INTENTS, EXIT_REPLACED, EXIT_TOKEN_REJECTED, EXIT_UNREACHABLE
from bot_worker.link_server import SupervisorLink
from bot_worker.os_processes import is_bot_process, pid_alive, terminate
from bot_worker.scheduled_posts import SchedulePoster
from bot_worker.spawn import Spawner
from bot_worker.supervisor_config import UNREACHABLE_ERROR, Slot, SupervisorConfig, describe_exit, next_backoff
from bot_worker.supervisor_jobs import SupervisorJobs, end_scheduler, new_scheduler
from bot_worker.tester_chat_runner import ChatRunner
from grobot.core import link_client
from grobot.core.agents.deps import ChainDeps
from grobot.core.db import session_scope
from grobot.core.errors import GroBotError
from grobot.core.models import BotState, utcnow
from grobot.core.services import embedded_models, fleet, schedules, tester_chat
from grobot.core.settings import get_settings
from grobot.core.store.run_store_db import DatabaseStore

logger = logging.getLogger(__name__)



@dataclass
class Supervisor:
    """The fleet supervisor of this host."""

    config: SupervisorConfig = field(default_factory=SupervisorConfig.from_env)
    supervisor_id: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}")

    def __post_init__(self) -> None:
        self.hostname = socket.gethostname()
        self.is_postgres = get_settings().database_url.startswith("postgresql")
        self.slots: dict[int, Slot] = {}
        self.held: set[int] = set()
        self.last_renewal = time.monotonic()
        self.db_ok = True
        self.scheduler: AsyncIOScheduler | None = None
        # What this supervisor's own runs (Test Chat) use: the database, its memory once the memory
        # service runs, and its MCP sessions (also those the tool-list refreshes open).
        self.deps = ChainDeps(store=DatabaseStore())
        self.test_chat = ChatRunner(self.supervisor_id, self.config.test_chat_concurrency, deps=self.deps)
        self._stopping = asyncio.Event()
        self._lock_file: Any = None
        self._starting: asyncio.Task[None] | None = None  # the bot processes being started (see reconcile)
        self.models = EmbeddedModels(self.supervisor_id, self._write)
        self.jobs = SupervisorJobs(self.supervisor_id, self.config, self._write, self.deps)  # memory, housekeeping, MCP
        # The link: the bots' heartbeats (written at the next reconcile) and their data; the memory.
        self.link = SupervisorLink(self, poll_seconds=self.config.poll_seconds, deps=self.deps, memory=self.jobs,
                                   tester_chat=self.test_chat)
        self.lease_expires: datetime | None = None  # of the leases as last written (no later than in the database)
        self.config_versions: dict[int, str] = {}  # bot id -> version of its settings, as of the last poll
        # Scheduled posts: claimed and posted here, through Discord's REST API with the bots' tokens.
        self.posts = SchedulePoster(self.supervisor_id, self.deps,
                                    lambda fn, *args, **kw: asyncio.to_thread(self._write, fn, *args, **kw),
                                    claim_seconds=self.config.schedule_claim_seconds)
        self.spawner = Spawner()
        self.spawner.prepare({"GROBOT_SUPERVISOR_ID": self.supervisor_id,
                              "GROBOT_HEARTBEAT_SECONDS": str(self.config.heartbeat_seconds)})

    # ------------------------------------------------------------------ start / stop
    def acquire_single_instance(self) -> None:
        """On SQLite only one supervisor may run: hold an exclusive lock file, or refuse."""
        if self.is_postgres:
            return
        import fcntl

        from sqlalchemy.engine import make_url

        database = make_url(get_settings().database_url).database or "grobot.db"
        path = f"{database}.supervisor.lock"
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            handle.close()
            raise GroBotError(
                f"another supervisor is already running on this SQLite database ({owner}); only one may run "
                "at a time: stop it first, or use PostgreSQL (DATABASE_URL) to run several supervisors"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {self.hostname}\n")
        handle.flush()
        self._lock_file = handle

    async def run(self) -> int:
        """Run until SIGTERM/SIGINT; returns the exit code."""
        self.acquire_single_instance()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stopping.set)
        await self._startup()
        await self._start_link()
        await self.jobs.start_memory()
        await self._advertise()
        await self.models.start()
        await asyncio.to_thread(self.spawner.warm)
        self.scheduler = new_scheduler()
        now = datetime.now(UTC)
        self.scheduler.add_job(self.reconcile, IntervalTrigger(seconds=self.config.poll_seconds), id="reconcile",
                               next_run_time=now)
        self.scheduler.add_job(self.reap, IntervalTrigger(seconds=0.25), id="reap", next_run_time=now)
        self.scheduler.add_job(self.test_chat.poll, IntervalTrigger(seconds=self.config.test_chat_poll_seconds),
                               id="test_chat", next_run_time=now)
        self.scheduler.add_job(self.models.sync, IntervalTrigger(seconds=self.config.poll_seconds), id="models")
        self.scheduler.add_job(self.claim_schedules, IntervalTrigger(seconds=self.config.schedule_poll_seconds),
                               id="schedules", next_run_time=now)
        # (First after an interval: at start the database is the polls' and the bot starts'.)
        self.scheduler.add_job(self.sweep, IntervalTrigger(seconds=max(self.config.heartbeat_seconds, 5.0)), id="sweep")
        self.jobs.schedule(self.scheduler, now)
        self.scheduler.start()
        logger.info("Supervisor %s started (poll %.1f s, %s)", self.supervisor_id, self.config.poll_seconds,
                    "PostgreSQL" if self.is_postgres else "SQLite")
        await self._stopping.wait()
        await self.shutdown()
        return 0

    def wake(self) -> None:
        """Reconcile now instead of at the next tick."""
        if self.scheduler is not None and not self._stopping.is_set():
            try:
                self.scheduler.modify_job("reconcile", next_run_time=datetime.now(UTC))
            except Exception:  # pragma: no cover - job gone at shutdown
                pass

    async def _startup(self) -> None:
        """Register, and replace the bot processes a previous supervisor of this host left behind."""
        delay = 0.5
        while not self._stopping.is_set():
            try:
                await asyncio.to_thread(self._register)
                break
            except Exception as exc:
                logger.warning("Database unreachable at start (%s); retrying in %.1f s", type(exc).__name__, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10)
        self.last_renewal = time.monotonic()

    async def _start_link(self) -> None:
        """Serve the bot processes (their heartbeats and their data: without it, each bot uses the database
        itself), and the memory to them, the web app and the CLI (which find it in the database)."""
        try:
            await self.link.start()
        except OSError as exc:
            logger.error("The supervisor link could not start (%s): the bots use the database themselves and "
                         "run without long-term memory", exc)

    async def _advertise(self) -> None:
        """Record in the database, in this supervisor's one row, where its link listens (the web app and the
        CLI find its memory and its Test Chat runner there; without it Test Chat answers at the next poll)."""
        if not self.link.server.url:
            return
        try:
            await asyncio.to_thread(self._write, link_client.advertise, self.supervisor_id, self.link.server.url)
        except Exception as exc:
            logger.warning("Could not record where the supervisor link listens (%s): the web app and the CLI "
                           "cannot reach the memory nor Test Chat's runner", type(exc).__name__)

    def runs(self, bot_id: int, pid: int) -> bool:
        """Is process ``pid`` the one this supervisor runs for bot ``bot_id``? (The bot link asks.)"""
        slot = self.slots.get(bot_id)
        return slot is not None and slot.proc is not None and slot.proc.pid == pid


    def _bot_env(self, bot_id: int) -> dict[str, str]:
        """Per-start environment of a bot: the link (its data and its memory), its lease."""
        lease = self.lease_expires.isoformat() if self.lease_expires is not None else ""
        return {**self.link.env(bot_id), LEASE_ENV: lease}

    def _register(self) -> None:
        with session_scope() as session:
            supervisors = fleet.all_supervisors(session=session)
            known = {sup.id for sup in supervisors}
            dead = {sup.id for sup in supervisors if sup.hostname == self.hostname and sup.id != self.supervisor_id
                    and not pid_alive(sup.pid)}
            mine = f"{self.hostname}:"
            orphans = []
            for row in fleet.fleet_view(session=session):
                holder = row.supervisor_id
                if not holder or holder == self.supervisor_id:
                    continue
                gone = holder in dead or (holder.startswith(mine) and holder not in known) or not self.is_postgres
                if gone and row.pid and holder.startswith(mine):
                    orphans.append((row.bot_id, row.pid))
                if gone:
                    # SQLite has one supervisor only; on PostgreSQL a dead supervisor of this host
                    # is known to be gone, so its leases need not run out first.
                    fleet.release_all(holder, session=session, state=BotState.OFFLINE.value,
                                      detail="supervisor restarted")
            for sup_id in dead:
                fleet.remove_supervisor(sup_id, session=session)
            fleet.register_supervisor(self.supervisor_id, hostname=self.hostname, pid=os.getpid(), session=session)
        for bot_id, pid in orphans:
            if is_bot_process(pid, bot_id):
                logger.warning("Stopping bot %s process %s left by a previous supervisor", bot_id, pid,
                               extra={"bot_id": bot_id})
                terminate(pid, grace=self.config.stop_grace_seconds)

    async def shutdown(self) -> None:
        """Stop every bot process (SIGTERM, SIGKILL after the grace period) and release the leases."""
        logger.info("Supervisor stopping: %d bot process(es)", sum(1 for s in self.slots.values() if s.running))
        if self.scheduler is not None:
            await end_scheduler(self.scheduler)
        if self._starting is not None:  # (it starts no further process once stopping is set)
            await asyncio.wait([self._starting], timeout=3.0)
            self._starting.cancel()
        for slot in self.slots.values():
            if slot.proc is not None and slot.proc.poll() is None:
                slot.proc.send_signal(signal.SIGTERM)
        test_chat_stopped = asyncio.get_running_loop().create_task(self.test_chat.shutdown())
        deadline = time.monotonic() + min(self.config.stop_grace_seconds, 6.0)
        while time.monotonic() < deadline and any(s.proc is not None and s.proc.poll() is None for s in self.slots.values()):
            await asyncio.sleep(0.05)
        for slot in self.slots.values():
            if slot.proc is not None and slot.proc.poll() is None:
                slot.proc.kill()
                slot.proc.wait(2)
        await test_chat_stopped
        await self.posts.close()
        await self.deps.aclose()
        await self.models.stop()
        await self.link.stop()
        await self.jobs.stop()
        try:
            await asyncio.wait_for(asyncio.to_thread(self._release_everything), timeout=2.5)
        except Exception as exc:
            logger.warning("Could not release the leases (%s): they expire by themselves", type(exc).__name__)
        logger.info("Supervisor stopped")

    def _release_everything(self) -> None:
        with session_scope() as session:
            fleet.release_all(self.supervisor_id, session=session)
            fleet.remove_supervisor(self.supervisor_id, session=session)
            link_client.withdraw(self.supervisor_id, session=session)
            embedded_models.withdraw(self.supervisor_id, session=session)

    # ------------------------------------------------------------------ reconcile
    async def reconcile(self) -> None:
        """Compare the database with the process table and act on the difference."""
        if self._stopping.is_set():
            return
        started_at, written_at = time.monotonic(), utcnow()
        beats = self.link.take_heartbeats()
        try:
            rows, held = await asyncio.to_thread(self._read_and_lease, list(beats.values()))
        except Exception as exc:
            self.link.put_back(beats)  # written next time (the newer ones win)
            if self.db_ok:
                logger.warning("Database unreachable (%s): bots keep running; retrying", type(exc).__name__)
            self.db_ok = False
            self._fence()
            return
        if not self.db_ok:
            logger.info("Database reachable again")
        self.db_ok = True
        self.last_renewal = started_at
        self.lease_expires = written_at + timedelta(seconds=self.config.lease_seconds)
        self.held = held
        by_id = {row.bot_id: row for row in rows}
        self.config_versions = {row.bot_id: row.config_version for row in rows}
        now = time.monotonic()
        to_start: list[fleet.BotRow] = []
        for bot_id, slot in list(self.slots.items()):
            row = by_id.get(bot_id)
            if slot.running and not slot.stopping:
                if row is None:
                    self._stop(slot, "deleted")
                elif not row.enabled:
                    self._stop(slot, "disabled")
                elif not row.has_token:
                    self._stop(slot, "no Discord token set")
                elif bot_id not in held:
                    self._stop(slot, "lease lost")
                elif row.gateway_revision != slot.revision:
                    self._stop(slot, "restart")
                elif self._heartbeat_stale(slot, row, now):
                    logger.warning("Bot %s: no heartbeat for %.0f s; replacing its process", bot_id,
                                   fleet.heartbeat_age(row) or 0, extra={"bot_id": bot_id})
                    self._stop(slot, "no heartbeat")
            if row is None and not slot.running:
                del self.slots[bot_id]
        for row in rows:
            if row.bot_id not in held or not row.wanted:
                if not row.enabled and row.supervisor_id == self.supervisor_id and not self._is_running(row.bot_id):
                    await asyncio.to_thread(self._write, fleet.release_lease, self.supervisor_id, row.bot_id,
                                            state=BotState.STOPPED.value, detail="disabled")
                continue
            slot = self.slots.setdefault(row.bot_id, Slot(row.bot_id))
            if slot.running:
                continue
            if slot.revision and slot.revision != row.gateway_revision:
                slot.backoff, slot.next_start = None, 0.0  # a new token or intents: try at once
            if now >= slot.next_start:
                to_start.append(row)
        # Started beside the polls, not within one: the next poll renews the leases on time however long
        # the starts take (on a loaded machine a poll that waited for them let the fence stop the new bots).
        if to_start and (self._starting is None or self._starting.done()):
            self._starting = asyncio.get_running_loop().create_task(self._start_some(to_start))

    async def _start_some(self, rows: list[fleet.BotRow]) -> None:
        """Start the bot processes of ``rows`` still ours, ``start_interval`` apart (a poll's worth; the rest next poll)."""
        budget = max(1, int(self.config.poll_seconds / self.config.start_interval))
        try:
            for index, row in enumerate(rows[:budget]):
                if self._stopping.is_set():
                    return
                if index:
                    await asyncio.sleep(self.config.start_interval)
                if row.bot_id in self.held:  # (a poll since may have lost its lease)
                    await self._start(row)
        except Exception:
            logger.exception("Could not start the bot processes; trying again at the next poll")
        if len(rows) > budget:
            self.wake()

    async def sweep(self) -> None:
        """Housekeeping of the fleet tables (its own job: a slow sweep does not delay the lease renewals)."""
        if self._stopping.is_set():
            return
        try:
            await asyncio.to_thread(self._sweep)
        except Exception as exc:
            logger.warning("Sweep failed: %s", type(exc).__name__)

    async def claim_schedules(self) -> None:
        """Claim the due scheduled posts (once across supervisors, held until posted:
        :func:`~grobot.core.services.schedules.claim_due`) and post them from here, with the bots' tokens."""
        if self._stopping.is_set() or not self.db_ok:
            return
        claim = self.config.schedule_claim_seconds
        try:
            await self.posts.keep(renew_after=claim / 3)
            # Read first: most polls find nothing, and a write session would take SQLite's write lock.
            due, owners = await asyncio.to_thread(self._schedules_poll)
            for owner in filter(self._gone, owners):  # a supervisor of this host that died: no wait for its claims
                if await asyncio.to_thread(self._write, schedules.release_claims, owner):
                    logger.warning("A supervisor of this host stopped while it posted scheduled posts; taking them again")
                    due = True
            if not due:
                return
            runs = await asyncio.to_thread(self._write, schedules.claim_due, self.supervisor_id, claim_seconds=claim,
                                       nonce_seconds=self.config.schedule_nonce_seconds)
        except Exception as exc:
            logger.warning("Could not claim the scheduled posts (%s); trying again", type(exc).__name__)
            return
        for run in runs:
            late = (utcnow() - run.due_at).total_seconds()
            logger.info("Scheduled post %s%s: due %s, claimed%s", run.schedule_id,
                        f" ({run.name})" if run.name else "", run.due_at.strftime("%H:%M:%S UTC"),
                        f" ({late:.0f} s late)" if late >= 2 else "", extra={"bot_id": run.bot_id})
            self.posts.start(run)

    def _schedules_poll(self) -> tuple[bool, set[str]]:
        """Whether a scheduled post is to claim, and who holds claims (one read session)."""
        with session_scope(readonly=True) as session:
            return schedules.any_due(session=session), schedules.claim_owners(session=session)

    def _gone(self, owner: str) -> bool:
        """``owner`` is a supervisor of this host whose process has ended (one of another host is known
        gone only when its claims expire)."""
        host, _, rest = owner.partition(":")
        pid = rest.partition(":")[0]
        return (owner != self.supervisor_id and host == self.hostname and pid.isdigit()
                and not pid_alive(int(pid)))

    def _is_running(self, bot_id: int) -> bool:
        slot = self.slots.get(bot_id)
        return slot is not None and slot.running

    def _heartbeat_stale(self, slot: Slot, row: fleet.BotRow, now: float) -> bool:
        limit = 3 * self.config.heartbeat_seconds
        if now - slot.started_at < limit + 10:  # give a starting bot time to connect
            return False
        age = fleet.heartbeat_age(row)
        return age is None or age > limit

    def _read_and_lease(self, beats: list[fleet.Heartbeat]) -> tuple[list[fleet.BotRow], set[int]]:
        with session_scope() as session:
            fleet.supervisor_heartbeat(self.supervisor_id, session=session)
            fleet.record_heartbeats(self.supervisor_id, beats, session=session)
            rows = fleet.fleet_view(session=session)
            wanted = [row.bot_id for row in rows if row.wanted]
            held = set(fleet.acquire_leases(self.supervisor_id, wanted, lease_seconds=self.config.lease_seconds,
                                            session=session))
            # Keep the leases of bots still stopping (never two processes for one bot).
            running = [bot_id for bot_id, slot in self.slots.items() if slot.running and bot_id not in held]
            held |= fleet.renew_leases(self.supervisor_id, running, lease_seconds=self.config.lease_seconds,
                                       session=session)
        return rows, held

    def _sweep(self) -> None:
        with session_scope() as session:
            tester_chat.end_abandoned_runs(session=session, alive=self.supervisor_id)
            fleet.mark_stale_offline(max_age=fleet.stale_heartbeat_after(self.config.heartbeat_seconds),
                                     session=session)
            fleet.prune_supervisors(stale_after=max(3600.0, 10 * self.config.lease_seconds), session=session)
            link_client.prune_orphans(session=session)
            embedded_models.prune_orphans(session=session)

    def _read(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        with session_scope(readonly=True) as session:
            return fn(*args, session=session, **kwargs)

    def _write(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        with session_scope() as session:
            return fn(*args, session=session, **kwargs)

    def _fence(self) -> None:
        """PostgreSQL: leases we could not renew must not outlive us; stop the bots before they expire."""
        if not self.is_postgres:
            return  # one supervisor only: nobody can take the bots over, so they keep running
        silent = time.monotonic() - self.last_renewal
        if silent < self.config.fence_after:
            return
        for slot in self.slots.values():
            if slot.running and not slot.stopping:
                logger.error("Bot %s: leases not renewed for %.0f s; stopping it before another supervisor "
                             "takes it over", slot.bot_id, silent, extra={"bot_id": slot.bot_id})
                self._stop(slot, "lease lost")
        self.held = set()

    # ------------------------------------------------------------------ processes
    async def _start(self, row: fleet.BotRow) -> None:
        slot = self.slots.setdefault(row.bot_id, Slot(row.bot_id))
        if slot.running:
            return
        try:  # clear the previous pid first: the new process may report online before we write its pid
            await asyncio.to_thread(self._write, fleet.mark_starting, row.bot_id, supervisor_id=self.supervisor_id,
                                    pid=None, revision=row.gateway_revision)
        except Exception as exc:
            logger.warning("Bot %s: cannot write its status (%s); not starting it now", row.bot_id, type(exc).__name__,
                           extra={"bot_id": row.bot_id})
            return
        proc = self.spawner.start(row.bot_id, self._bot_env(row.bot_id))
        slot.proc, slot.revision, slot.started_at = proc, row.gateway_revision, time.monotonic()
        slot.stopping, slot.stop_reason = False, ""
        logger.info("Bot %s (%s): started process %s", row.bot_id, row.name, proc.pid, extra={"bot_id": row.bot_id})
        try:
            await asyncio.to_thread(self._write, fleet.record_pid, row.bot_id, pid=proc.pid)
        except Exception as exc:
            logger.warning("Bot %s: cannot write its pid (%s)", row.bot_id, type(exc).__name__, extra={"bot_id": row.bot_id})

    def _stop(self, slot: Slot, reason: str) -> None:
        if slot.proc is None or slot.stopping:
            return
        logger.info("Bot %s: stopping process %s (%s)", slot.bot_id, slot.proc.pid, reason, extra={"bot_id": slot.bot_id})
        slot.stopping, slot.stop_reason = True, reason
        slot.kill_at = time.monotonic() + self.config.stop_grace_seconds
        try:
            slot.proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass

    async def reap(self) -> None:
        """Notice exited processes (crash, stop), and SIGKILL those that ignore SIGTERM.

        It also fences: a reconcile stuck on a hanging database call cannot, since the
        scheduler runs one reconcile at a time, so this fast tick checks the lease age too.
        """
        if self._stopping.is_set():
            return
        self._fence()
        now = time.monotonic()
        for slot in list(self.slots.values()):
            proc = slot.proc
            if proc is None:
                continue
            code = proc.poll()
            if code is None:
                if slot.stopping and now >= slot.kill_at:
                    logger.warning("Bot %s: process %s ignored SIGTERM; killing it", slot.bot_id, proc.pid,
                                   extra={"bot_id": slot.bot_id})
                    proc.kill()
                continue
            slot.proc = None
            ran_for = now - slot.started_at
            if slot.stopping:
                reason, slot.stopping = slot.stop_reason, False
                logger.info("Bot %s: process %s stopped (%s; %s)", slot.bot_id, proc.pid, reason, describe_exit(code),
                            extra={"bot_id": slot.bot_id})
                if reason in ("disabled", "no Discord token set"):
                    await self._safe_write(fleet.release_lease, self.supervisor_id, slot.bot_id,
                                           state=BotState.STOPPED.value, detail=reason)
                elif reason == "lease lost":
                    pass
                elif reason == "deleted":
                    self.slots.pop(slot.bot_id, None)
                self.wake()  # a restart starts the new process now
                continue
            if code == EXIT_TOKEN_REJECTED:
                logger.error("Bot %s: Discord rejected the token; not retrying until it changes", slot.bot_id,
                             extra={"bot_id": slot.bot_id})
                await self._safe_write(fleet.mark_error, slot.bot_id, fleet.TOKEN_REJECTED,
                                       rejected_revision=slot.revision, clear_pid=True,
                                       supervisor_id=self.supervisor_id)
                continue
            if code == EXIT_INTENTS:
                slot.backoff = max(self.config.intent_retry_seconds, slot.backoff or 0)
                slot.next_start = now + slot.backoff
                logger.error("Bot %s: a privileged intent is not enabled; retrying in %.0f s", slot.bot_id, slot.backoff,
                             extra={"bot_id": slot.bot_id})
                continue
            if code == EXIT_REPLACED:
                # Fenced: the lease lapsed or another process holds the bot; the lease decides what next.
                logger.warning("Bot %s: the process stopped itself (lease lost or replaced)", slot.bot_id,
                               extra={"bot_id": slot.bot_id})
                slot.next_start = now + self.config.backoff_initial
                continue
            slot.backoff = next_backoff(slot.backoff, ran_for=ran_for, config=self.config)
            slot.next_start = now + slot.backoff
            unreachable = code == EXIT_UNREACHABLE
            if not unreachable:
                slot.failures += 1
            error = UNREACHABLE_ERROR if unreachable else describe_exit(code)
            logger.error("Bot %s: %s; restarting in %.0f s", slot.bot_id, error, slot.backoff, extra={"bot_id": slot.bot_id})
            await self._safe_write(fleet.record_crash, slot.bot_id, error, retry_in=slot.backoff,
                                   supervisor_id=self.supervisor_id, crashed=not unreachable)
            if slot.backoff <= self.config.poll_seconds:
                asyncio.get_running_loop().call_later(slot.backoff, self.wake)

    async def _safe_write(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        try:
            await asyncio.to_thread(self._write, fn, *args, **kwargs)
        except Exception as exc:
            logger.warning("Could not write the bot status (%s)", type(exc).__name__)
