"""Database engine and sessions.

SQLite runs in WAL mode with foreign keys on and a busy timeout, and write sessions
start with ``BEGIN IMMEDIATE`` so that the web app, the supervisor and dozens of bot
processes can write at once without "database is locked". PostgreSQL goes through
psycopg2 with pool pre-ping.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from sqlalchemy import event
from sqlalchemy.engine import CursorResult, Engine, make_url
from sqlmodel import Session, create_engine

from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_MS = 30_000
# A dead network path must fail fast, not hang a heartbeat or lease renewal for minutes:
# connect timeout, TCP keepalives, and a bound on any one statement. A process frozen in the
# middle of a transaction (SIGSTOP, a VM paused) answers keepalives but holds its row locks:
# the server ends such a transaction after 10 s, so the bot rows it locked can fail over
# (GroBot's transactions last milliseconds; none waits on the network).
POSTGRES_CONNECT_ARGS = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "options": "-c statement_timeout=60000 -c idle_in_transaction_session_timeout=10000",
}

_engines: dict[str, Engine] = {}
_lock = threading.Lock()
_application_name = "grobot"


def set_application_name(name: str) -> None:
    """Name this process's PostgreSQL connections (``pg_stat_activity.application_name``), before the first."""
    global _application_name
    _application_name = name[:63]


def _prepare_sqlite_path(url: str) -> None:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)


def _install_sqlite_hooks(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # pragma: no cover - trivial
        # We emit BEGIN ourselves (below) so that writers can take the lock up front.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "IMMEDIATE")
        conn.exec_driver_sql(f"BEGIN {mode}")


def create_db_engine(url: str, *, pool_size: int | None = None) -> Engine:
    """A new engine for ``url`` with GroBot's connection settings."""
    settings = get_settings()
    if url.startswith("sqlite"):
        _prepare_sqlite_path(url)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
            hide_parameters=True,  # errors must not carry message text or secrets into the logs
        )
        _install_sqlite_hooks(engine)
        return engine
    size = pool_size or settings.db_pool_size
    engine = create_engine(
        url,
        pool_pre_ping=True,
        pool_size=size,
        max_overflow=size,
        pool_recycle=1800,
        hide_parameters=True,
        connect_args={**POSTGRES_CONNECT_ARGS, "application_name": _application_name}
        if url.startswith("postgresql") else {},
    )
    return engine


def get_engine(url: str | None = None) -> Engine:
    """The shared engine of this process for ``url`` (default: ``DATABASE_URL``)."""
    url = url or get_settings().database_url
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = create_db_engine(url)
        return engine


def dispose_engines() -> None:
    """Close every pooled connection (tests, and after ``fork``)."""
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


@contextmanager
def session_scope(*, readonly: bool = False, engine: Engine | None = None) -> Iterator[Session]:
    """A session that commits on success and rolls back on error.

    On SQLite a read-write session takes the write lock when it begins (``BEGIN
    IMMEDIATE``), so a transaction never fails half-way because another process wrote
    in between; pass ``readonly=True`` for sessions that only read. Keep sessions
    short: never hold one across an LLM call or a network request.
    """
    engine = engine or get_engine()
    if engine.dialect.name == "sqlite":
        engine = engine.execution_options(sqlite_begin="DEFERRED" if readonly else "IMMEDIATE")
    session = Session(engine, expire_on_commit=False)
    try:
        yield session
        if not readonly:
            session.commit()
        # A read-only session is closed without commit: close() ends the transaction
        # and leaves the loaded objects usable (detached, not expired).
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def execute_dml(session: Session, statement: Any, parameters: Any = None) -> int:
    """Run an INSERT, UPDATE or DELETE; the number of rows it matched."""
    result = cast("CursorResult[Any]", session.execute(statement, parameters))
    return int(result.rowcount or 0)
