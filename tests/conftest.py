"""Shared fixtures: an isolated GroBot environment per test, on SQLite or PostgreSQL.

Every test that touches the database gets a fresh data dir, secret key and database: a copy of
one migrated by Alembic once per session (never ``create_all``).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.pg import PgCluster  # noqa: E402

pytest_plugins = ["tests.fakes.llm", "tests.browser_fixtures"]

TEST_SECRET_KEY = "tests-secret-key-not-for-production"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark what ``make check`` leaves to ``make test`` (pytest.ini): ``browser`` (the web app in
    Chromium), ``e2e`` (a real supervisor: the ``*_e2e.py`` modules), ``real_llm`` (the demo model),
    each also ``slow``. By directory and by fixture, so a new test is marked where it lands."""
    for item in items:
        path = Path(str(item.fspath)).resolve()
        fixtures = set(getattr(item, "fixturenames", ()))
        marks = set()
        if path.is_relative_to(ROOT / "tests" / "ui") or fixtures & {"browser", "web_app"}:
            marks.add("browser")
        if path.name.endswith("_e2e.py"):
            marks.add("e2e")
        if path.is_relative_to(ROOT / "tests" / "real_llm") or "demo_server" in fixtures:
            marks.add("real_llm")
        for name in sorted(marks | ({"slow"} if marks else set())):
            if item.get_closest_marker(name) is None:
                item.add_marker(name)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadscope``: by module, the browser and demo-model tests on one worker (tests/scheduling.py)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from tests.scheduling import SharedProcessScheduling

    return SharedProcessScheduling(config, log)


def pytest_configure(config: pytest.Config) -> None:
    """With xdist (``make test``), the controller says at the end when each worker ended (tests/scheduling.py)."""
    if config.getoption("dist", "no") != "no" and not hasattr(config, "workerinput"):
        from tests.scheduling import WorkerTimes

        config.pluginmanager.register(WorkerTimes(), "grobot-worker-times")


@dataclass
class GroBotEnv:
    """What a test needs to know about its isolated environment."""

    data_dir: Path
    database_url: str
    backend: str  # "sqlite" or "postgresql"

    def environ(self, **extra: str) -> dict[str, str]:
        """Environment for subprocesses (CLI, worker, bot processes) of this test."""
        env = dict(os.environ)
        env.update(
            DATABASE_URL=self.database_url,
            GROBOT_DATA_DIR=str(self.data_dir),
            GROBOT_SECRET_KEY=TEST_SECRET_KEY,
            PYTHONPATH=str(ROOT),
        )
        env.update(extra)
        return env


def _reset_process_state() -> None:
    from grobot.core.db import dispose_engines
    from grobot.core.services.usage_limits import reset_warnings
    from grobot.core.settings import get_settings

    dispose_engines()
    get_settings.cache_clear()
    reset_warnings()


@pytest.fixture(autouse=True)
def fresh_settings() -> Iterator[None]:
    """Every test reads the settings from its own environment (``get_settings`` caches them per
    process; a test that changes the environment mid-way clears the cache itself)."""
    from grobot.core.settings import get_settings

    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PgCluster]:
    """One throwaway PostgreSQL server for the whole test session."""
    cluster = PgCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite database, copied for each test (migrating once is faster)."""
    from grobot.core import migrations

    path = tmp_path_factory.mktemp("template") / "grobot.db"
    os.environ.pop("DATABASE_URL", None)
    migrations.upgrade(f"sqlite:///{path}")
    _reset_process_state()
    return path


@pytest.fixture(scope="session")
def postgres_template(postgres_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The name of a migrated PostgreSQL database that every test's database is copied from
    (``CREATE DATABASE ... TEMPLATE``: a file copy instead of running every migration again)."""
    from grobot.core import migrations

    name = "grobot_template"
    url = postgres_cluster.create_database(name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATABASE_URL", url)
        patch.setenv("GROBOT_DATA_DIR", str(tmp_path_factory.mktemp("pg-template")))
        patch.setenv("GROBOT_SECRET_KEY", TEST_SECRET_KEY)
        _reset_process_state()
        migrations.upgrade(url)
        _reset_process_state()  # no connection may stay open to a template
    return name


def _make_env(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> GroBotEnv:
    data_dir = tmp_path / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    if backend == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        shutil.copy(template, data_dir / "grobot.db")
        url = f"sqlite:///{data_dir / 'grobot.db'}"
    else:
        cluster: PgCluster = request.getfixturevalue("postgres_cluster")
        url = cluster.create_database(template=request.getfixturevalue("postgres_template"))
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("GROBOT_DATA_DIR", str(data_dir))
    monkeypatch.setenv("GROBOT_SECRET_KEY", TEST_SECRET_KEY)
    for var in ("CHROMA_URL", "DISCORD_API_BASE", "DISCORD_GATEWAY_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    _reset_process_state()
    return GroBotEnv(data_dir=data_dir, database_url=url, backend=backend)


@pytest.fixture
def grobot_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[GroBotEnv]:
    """An isolated environment on SQLite (the embedded default)."""
    env = _make_env("sqlite", tmp_path, monkeypatch, request)
    yield env
    _reset_process_state()


@pytest.fixture(scope="module")
def module_env(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[GroBotEnv]:
    """``grobot_env`` shared by the tests of a module (one supervisor for them all:
    ``tests/worker/conftest.py``); a test that asks for it must not ask for ``grobot_env`` too."""
    patch = pytest.MonkeyPatch()
    env = _make_env("sqlite", tmp_path_factory.mktemp("module"), patch, request)
    yield env
    patch.undo()
    _reset_process_state()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[GroBotEnv]:
    """The same test on SQLite and on PostgreSQL."""
    env = _make_env(request.param, tmp_path, monkeypatch, request)
    yield env
    _reset_process_state()


@pytest.fixture
def pg_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[GroBotEnv]:
    """An isolated environment on PostgreSQL."""
    env = _make_env("postgresql", tmp_path, monkeypatch, request)
    yield env
    _reset_process_state()
