"""Logging: records that carry a bot id go to ``log_entry``, in batches, off the caller's path.

A bot process sets its bot id once (:func:`set_process_bot_id`); other code may pass
``extra={"bot_id": N}``. The handler only queues records; a daemon thread writes them
in batches (to the database, or for a bot process through its supervisor: ``writer``).
When the database is down it keeps a bounded buffer, drops the oldest beyond it, and
never raises into or blocks the code that logs.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from grobot.core.visible_text import visible_controls

logger = logging.getLogger(__name__)

_process_bot_id: int | None = None


def set_process_bot_id(bot_id: int | None) -> None:
    """Every record of this process is attributed to ``bot_id`` (bot processes)."""
    global _process_bot_id
    _process_bot_id = bot_id


LogWriter = Callable[[list[dict[str, Any]]], int]  # writes a batch; returns how many records were dropped


def write_log_rows(rows: list[dict[str, Any]], *, database_url: str | None = None) -> int:
    """Insert log records; returns how many were dropped because their bot was deleted meanwhile."""
    from sqlalchemy import insert
    from sqlalchemy.exc import IntegrityError

    from grobot.core.db import get_engine
    from grobot.core.models import LogEntry

    engine = get_engine(database_url)
    try:
        with engine.begin() as conn:
            conn.execute(insert(LogEntry), rows)
        return 0
    except IntegrityError:
        # A bot was deleted meanwhile: keep the records of the others, one by one.
        dropped = 0
        for record in rows:
            try:
                with engine.begin() as conn:
                    conn.execute(insert(LogEntry), [record])
            except IntegrityError:
                dropped += 1
        return dropped


class DatabaseLogHandler(logging.Handler):
    """Queue records for a background writer thread (``writer``: default, the database)."""

    def __init__(
        self,
        *,
        level: int = logging.INFO,
        batch_size: int = 200,
        flush_interval: float = 0.5,
        max_buffer: int = 10_000,
        database_url: str | None = None,
        writer: LogWriter | None = None,
    ) -> None:
        super().__init__(level)
        self.writer: LogWriter = writer or (lambda rows: write_log_rows(rows, database_url=database_url))
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.max_buffer = max_buffer
        self.database_url = database_url
        self.dropped = 0
        self.written = 0
        self._failing = False
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._pending: deque[dict[str, Any]] = deque()
        self._stop = threading.Event()
        self._flushed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="db-log-writer", daemon=True)
        self._thread.start()

    # -- caller side: never blocks, never raises ------------------------------------------
    def emit(self, record: logging.LogRecord) -> None:
        try:
            if record.name.startswith(("sqlalchemy", "grobot.core.logs", "grobot.core.db")):
                return  # the writer's own logs would loop
            bot_id = getattr(record, "bot_id", None) or _process_bot_id
            if bot_id is None:
                return
            self._queue.put(
                {
                    "bot_id": int(bot_id),
                    "created_at": datetime.fromtimestamp(record.created, UTC),
                    "level": record.levelname,
                    "logger": record.name[:200],
                    "message": self.format(record)[:10_000],
                }
            )
        except Exception:  # pragma: no cover - logging must never break the caller
            self.handleError(record)

    # -- writer thread ---------------------------------------------------------------------
    def _run(self) -> None:
        backoff = self.flush_interval
        while not self._stop.is_set() or not self._queue.empty():
            self._drain(timeout=self.flush_interval)
            if not self._pending:
                self._notify()
                continue
            if self._write_batch():
                backoff = self.flush_interval
                self._notify()
            else:
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)

    def _drain(self, timeout: float) -> None:
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return
        while item is not None:
            self._pending.append(item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
        while len(self._pending) > self.max_buffer:
            self._pending.popleft()
            self.dropped += 1

    def _write_batch(self) -> bool:
        batch = [self._pending[i] for i in range(min(self.batch_size, len(self._pending)))]
        try:
            self.dropped += self.writer(batch)
        except Exception as exc:
            if not self._failing:
                print(f"grobot: cannot write logs to the database ({type(exc).__name__}: "
                      f"{str(exc).splitlines()[0][:200] if str(exc) else ''}); keeping them and retrying",
                      file=sys.stderr)
            self._failing = True
            return False
        for _ in batch:
            self._pending.popleft()
        self.written += len(batch)
        if self._failing:
            print("grobot: writing logs to the database again", file=sys.stderr)
            self._failing = False
        return True

    def _notify(self) -> None:
        with self._flushed:
            self._flushed.notify_all()

    def flush(self, timeout: float = 5.0) -> bool:  # type: ignore[override]  # logging's flush() returns None
        """Wait until everything queued so far is written (True) or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        with self._flushed:
            while not (self._queue.empty() and not self._pending):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._flushed.wait(min(remaining, 0.1))
        return True

    def close(self) -> None:
        self.flush(timeout=2.0)
        self._stop.set()
        self._queue.put(None)
        self._thread.join(timeout=3.0)
        super().close()


class ConsoleFormatter(logging.Formatter):
    """One line per record on the console: what a record says (an MCP server's stderr, a tool's error)
    can neither drive the terminal (ESC sequences) nor start a line that passes for another record;
    a traceback after it keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return visible_controls(super().formatMessage(record), keep="\t")


def console_handler(stream: Any = None) -> logging.StreamHandler[Any]:
    """The console handler of :func:`configure_logging` (``stream``: default, stderr)."""
    console = logging.StreamHandler(stream)
    console.setFormatter(ConsoleFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    console._grobot = True  # type: ignore[attr-defined]
    return console


def configure_logging(*, level: str = "INFO", to_database: bool = False, database_url: str | None = None,
                      writer: LogWriter | None = None) -> DatabaseLogHandler | None:
    """Console logging for the process, plus the database handler when asked (``writer``: where its
    batches go instead of the database)."""
    root = logging.getLogger()
    root.setLevel(level)
    if not any(isinstance(h, logging.StreamHandler) and getattr(h, "_grobot", False) for h in root.handlers):
        root.addHandler(console_handler())
    for noisy in ("httpx", "httpcore", "discord.gateway", "discord.http", "chromadb", "mcp"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
    # "job skipped: maximum number of running instances reached" is coalescing working as meant.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    if not to_database:
        return None
    handler = DatabaseLogHandler(database_url=database_url, writer=writer)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root.addHandler(handler)
    return handler
