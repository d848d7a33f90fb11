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
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlmodel import Session, create_engine

from grobot.core import settings_version as _settings_version  # noqa: F401  (its hooks move a bot's settings version on every session)
from grobot.core.errors import GroBotError, SettingsError
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


# Whether an engine on a SQLite file that does not exist creates it (and its folders): yes in the
# processes of the app (worker, web app, tests) and for ``db upgrade``; the CLI's other commands
# turn it off (see :func:`creating_sqlite`) and say how to create the database instead.
_create_sqlite = True


@contextmanager
def creating_sqlite(allowed: bool) -> Iterator[None]:
    """Within this block, a missing SQLite file is created (``allowed``) or a :class:`DatabaseMissing`."""
    global _create_sqlite
    previous, _create_sqlite = _create_sqlite, allowed
    try:
        yield
    finally:
        _create_sqlite = previous


class DatabaseMissing(GroBotError):
    """The SQLite file of DATABASE_URL does not exist (and is not to be created here)."""


def _prepare_sqlite_path(url: str) -> None:
    parsed = make_url(url)
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:") or parsed.query.get("uri"):
        return
    path = Path(database).expanduser()
    if _create_sqlite:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.exists():
        raise DatabaseMissing(f"the database {path} does not exist (DATABASE_URL, default GROBOT_DATA_DIR/grobot.db): "
                              "create it with python -m grobot db upgrade")


def _url_error(url: str, exc: Exception) -> SettingsError:
    """A URL SQLAlchemy cannot use, in one line naming the variable (never the URL: it may hold a password)."""
    name = "DATABASE_URL" if url == get_settings().database_url else "the database URL"
    if isinstance(exc, ImportError):
        return SettingsError(f"{name} needs the Python driver {exc.name}, which is not installed: "
                             "for PostgreSQL use postgresql+psycopg2://USER:PASSWORD@HOST/DB")
    if isinstance(exc, NoSuchModuleError):
        return SettingsError(f"{name} names a database GroBot cannot use ({make_url(url).drivername}): "
                             "use sqlite:///PATH or postgresql+psycopg2://USER:PASSWORD@HOST/DB")
    return SettingsError(f"{name} is not a database URL: e.g. sqlite:///data/grobot.db or "
                         "postgresql+psycopg2://USER:PASSWORD@HOST/DB")


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
    try:
        return _create_db_engine(url, pool_size=pool_size)
    except (ArgumentError, ImportError) as exc:
        raise _url_error(url, exc) from None


def _create_db_engine(url: str, *, pool_size: int | None = None) -> Engine:
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
        engine = _begin_view(engine, readonly)
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


def _begin_view(engine: Engine, readonly: bool) -> Engine:
    """``engine`` whose sessions begin DEFERRED (``readonly``) or IMMEDIATE (SQLite): each view built once
    and kept on the engine (building it per session cost about as much as a query)."""
    views: dict[bool, Engine] = engine.__dict__.setdefault("_grobot_begin_views", {})
    view = views.get(readonly)
    if view is None:
        view = views[readonly] = engine.execution_options(sqlite_begin="DEFERRED" if readonly else "IMMEDIATE")
    return view


def execute_dml(session: Session, statement: Any, parameters: Any = None) -> int:
    """Run an INSERT, UPDATE or DELETE; the number of rows it matched."""
    result = cast("CursorResult[Any]", session.execute(statement, parameters))
    return int(result.rowcount or 0)
