"""What a supervisor hosts besides its bot processes: the bots' memory store (served on its link),
the indexer of their documents and the periodic jobs (housekeeping, memory pruning, MCP tool lists).

:class:`SupervisorJobs` is owned by :class:`~bot_worker.supervisor.Supervisor`, which opens the
memory store, schedules the jobs on its scheduler and closes the store at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from grobot.core.agents.deps import ChainDeps
from grobot.core.memory import NoopMemory
from grobot.core.settings import get_settings

if TYPE_CHECKING:
    from bot_worker.supervisor_config import SupervisorConfig
    from grobot.core.memory.local import LocalMemory
    from grobot.core.services.document_sync import DocumentsIndexer

logger = logging.getLogger(__name__)

Write = Callable[..., Any]  # ``write(fn, *args, **kwargs)``: ``fn(..., session=...)`` in a transaction of its own


class _StoppedJobs(logging.Filter):
    """APScheduler logs a job cancelled by its shutdown as an error with a traceback; a job still running when
    the worker stops (housekeeping opening the memory store) is no error: one INFO line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
            job = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
            record.msg, record.args = "Job %s was still running when the worker stopped: ended", (getattr(job, "name", job),)
            record.exc_info, record.exc_text = None, None
        return True


_STOPPED_JOBS = _StoppedJobs()


def new_scheduler() -> AsyncIOScheduler:
    """The supervisor's scheduler: one run of a job at a time, late runs merged into one, never skipped."""
    executor_logger = logging.getLogger("apscheduler.executors.default")
    if _STOPPED_JOBS not in executor_logger.filters:
        executor_logger.addFilter(_STOPPED_JOBS)
    return AsyncIOScheduler(job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None})


async def end_scheduler(scheduler: AsyncIOScheduler, grace: float = 3.0) -> None:
    """No new job runs; the running ones (a poll in a database call) end first, within ``grace``; the
    scheduler's shutdown cancels what still runs (APScheduler's asyncio executor cannot wait for it)."""
    scheduler.pause()
    running = [f for f in getattr(scheduler._lookup_executor("default"), "_pending_futures", ()) if not f.done()]
    if running:
        await asyncio.wait(running, timeout=grace)
    scheduler.shutdown(wait=False)
    if still := [f for f in running if not f.done()]:
        await asyncio.wait(still, timeout=grace)  # their cancellation reaches them (and is logged) before we go on


class SupervisorJobs:
    """The memory store of one supervisor, and its housekeeping and MCP jobs."""

    def __init__(self, supervisor_id: str, config: SupervisorConfig, write: Write, deps: ChainDeps) -> None:
        self.supervisor_id = supervisor_id
        self.deps = deps  # the supervisor's: its memory is set here, its MCP sessions refresh the tool lists
        self.config = config
        self._write = write
        self.memory: LocalMemory | None = None  # the store its link serves (None: none yet)
        self._memory_lock: Any = None  # the lock file of the embedded store (False: another supervisor has it)
        self._prune_task: asyncio.Task[None] | None = None
        self._warm_task: asyncio.Task[None] | None = None
        self.documents: DocumentsIndexer | None = None  # with the memory store

    def schedule(self, scheduler: AsyncIOScheduler, now: datetime) -> None:
        """Add the periodic jobs to the supervisor's scheduler."""
        scheduler.add_job(self.housekeeping, IntervalTrigger(seconds=self.config.housekeeping_seconds),
                          id="housekeeping")
        scheduler.add_job(self.refresh_mcp_tools, IntervalTrigger(seconds=self.config.mcp_refresh_seconds),
                          id="mcp_refresh", next_run_time=now)
        scheduler.add_job(self.list_new_mcp_servers, IntervalTrigger(seconds=self.config.poll_seconds),
                          id="mcp_new")
        scheduler.add_job(self.sync_documents, IntervalTrigger(seconds=self.config.poll_seconds), id="documents",
                          next_run_time=now)

    # ------------------------------------------------------------------ memory store
    async def start_memory(self) -> None:
        """Open the bots' memory store in this process; its link serves it (the ``memory`` group).

        The embedder and Chroma load in the background on the store's own threads
        (``GROBOT_MEMORY_PRELOAD=0``: on first use instead). Without the store the bots
        still answer, with no memory.
        """
        from grobot.core.memory.local import LocalMemory
        if not self._lock_memory_store():
            return
        local = LocalMemory()
        self.memory = local
        self.deps.memory = local
        from grobot.core.services.document_sync import DocumentsIndexer

        self.documents = DocumentsIndexer(local.documents_index, self._write)
        self._prune_task = asyncio.get_running_loop().create_task(self.prune_memories())
        if get_settings().worker.memory_preload:
            self._warm_task = asyncio.get_running_loop().create_task(local.warm())

    def _lock_memory_store(self) -> bool:
        """An embedded Chroma store may be opened by one process only: hold a lock file in it, or go without."""
        settings = get_settings()
        if settings.chroma_url or self._memory_lock:
            return True  # a Chroma server: every supervisor may serve it (or we hold the lock already)
        import fcntl

        settings.chroma_dir.mkdir(parents=True, exist_ok=True)
        handle = open(settings.chroma_dir / "supervisor.lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            if self._memory_lock is False:
                return False  # said so already
            self._memory_lock = False
            logger.error("Another supervisor holds the embedded memory store in %s: this one's bots run without "
                         "long-term memory (set CHROMA_URL to a Chroma server shared by every supervisor)",
                         settings.chroma_dir)
            return False
        self._memory_lock = handle
        return True

    async def stop(self) -> None:
        """Close the memory store (after the link stopped serving it)."""
        if self.memory is not None:
            self.memory.close()
            self.memory = None
            self.deps.memory = NoopMemory()
        if self.documents is not None:
            self.documents.close()
            self.documents = None

    async def sync_documents(self) -> None:
        """Bring the bots' document index up to date with their files (each file's state in ``bot_document``)."""
        if self.documents is None:
            return
        try:
            await self.documents.sync()
        except Exception as exc:
            logger.warning("Indexing the bots' documents failed: %s", type(exc).__name__)

    async def prune_memories(self) -> None:
        """Drop the memory collections of bots deleted while no worker ran, and keep
        each bot within ``memory_max_per_bot`` (the oldest memories go).

        A supervisor that could not serve memory (another one held the embedded store) tries
        again here: bots started from then on get it.
        """
        if self.memory is None:
            await self.start_memory()
        if self.memory is None:
            return
        try:
            existing, keep = await asyncio.to_thread(self._write, _bot_ids_and_memory_cap)
            gone, trimmed = await self.memory.prune(set(existing), keep=keep)
            if self.documents is not None:
                await self.documents.prune(set(existing))
        except Exception as exc:
            logger.warning("Pruning memories failed: %s", type(exc).__name__)
            return
        if gone:
            logger.info("Dropped the memories of %d deleted bot(s)", len(gone))
        if trimmed:
            logger.info("Deleted the %d oldest memories beyond %d per bot", trimmed, keep)

    # ------------------------------------------------------------------ periodic jobs
    async def housekeeping(self) -> None:
        """Log and event retention, usage repair (idempotent: several supervisors may run them)."""
        try:
            from grobot.core.services import maintenance
        except ImportError:  # pragma: no cover - an install without the maintenance service
            return
        for job in (maintenance.repair_usage, maintenance.purge_old_logs, maintenance.purge_old_events,
                    maintenance.purge_old_budget_alerts):
            try:
                await asyncio.to_thread(self._write, job)
            except Exception as exc:
                logger.warning("Housekeeping %s failed: %s", job.__name__, type(exc).__name__)
        await self.prune_memories()

    async def refresh_mcp_tools(self) -> None:
        """Refresh the cached tool lists (and errors) of the enabled MCP servers; close the others."""
        from grobot.core.services import mcp_tool_lists

        for name, error in (await self._listed(mcp_tool_lists.refresh_all, "MCP tool-list refresh")).items():
            if error:
                logger.warning("MCP server %s: %s", name, error)

    async def list_new_mcp_servers(self) -> None:
        """List the servers never listed yet (added from a shell with ``--no-test``) within a poll."""
        from grobot.core.services import mcp_tool_lists

        for name, error in (await self._listed(mcp_tool_lists.refresh_new, "MCP tool listing of new servers")).items():
            logger.log(logging.WARNING if error else logging.INFO, "New MCP server %s: %s", name, error or "listed")

    async def _listed(self, refresh: Any, what: str) -> dict[str, str]:
        """``refresh(hub)``: each server's listing error ("": listed); none when it failed as a whole."""
        try:
            return await refresh(self.deps.mcp.hub())
        except Exception as exc:
            logger.warning("%s failed: %s", what, type(exc).__name__)
            return {}


def _bot_ids_and_memory_cap(*, session: Any) -> tuple[list[int], int]:
    from sqlmodel import select

    from grobot.core.models import Bot
    from grobot.core.services import app_settings

    cap = int(app_settings.get_values(("memory_max_per_bot",), session=session)["memory_max_per_bot"])
    return [int(i) for i in session.exec(select(Bot.id)).all()], cap
