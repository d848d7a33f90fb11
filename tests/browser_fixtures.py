"""Session fixtures of the browser tests, shared by ``tests/ui`` and ``tests/security``: one
database and one running web app for the whole test session (building and starting the app is
the slow part), and the admin account; each package launches Chromium (``chromium``).

A package uses them through its own ``ui_env`` (package scope, in its conftest): the package
starts from the migrated database with only the admin account in it and an empty data dir, as
if it had a web app of its own, and while it runs this process's environment points at that
database, as the web app's does. The modules of a package share the database: each test sets up
the bots and users it looks at.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import TEST_SECRET_KEY, GroBotEnv, _reset_process_state
from tests.ui.auth import UiUser
from tests.ui.webapp import CHROMIUM_ARGS, ROOT, WebApp, chromium_path
from tests.worker.harness import FAST_ENV

logger = logging.getLogger(__name__)


@dataclass
class UiDatabase:
    """The web app's database and environment, for the whole session."""

    env: GroBotEnv
    variables: dict[str, str]
    unset: tuple[str, ...]
    template: Path
    admin: UiUser | None = None
    packages: int = 0

    def start_package(self) -> None:
        """The next package starts from the migrated database (copied into the live file with
        SQLite's backup, which the web app's connections see at their next transaction) with the
        admin account, and an empty data dir (bot files, memory)."""
        from grobot.core.models import Role
        from tests.ui.auth import create_ui_user

        with self.active():
            if self.packages:
                _reset_process_state()
                with closing(sqlite3.connect(self.template)) as source, \
                        closing(sqlite3.connect(self.env.data_dir / "grobot.db", timeout=60)) as live:
                    source.backup(live)
                for path in self.env.data_dir.iterdir():
                    if not path.name.startswith("grobot.db"):
                        shutil.rmtree(path) if path.is_dir() else path.unlink()
            self.packages += 1
            admin = create_ui_user("ui-admin", Role.ADMIN, password=self.admin.password if self.admin else None)
            assert self.admin is None or admin == self.admin, (admin, self.admin)  # the same account as before
            self.admin = admin

    @contextmanager
    def active(self) -> Iterator[GroBotEnv]:
        """This process reads and writes the web app's database (its settings and engines too)."""
        with pytest.MonkeyPatch.context() as patch:
            for name, value in self.variables.items():
                patch.setenv(name, value)
            for name in self.unset:
                patch.delenv(name, raising=False)
            _reset_process_state()
            try:
                yield self.env
            finally:
                _reset_process_state()


@pytest.fixture(scope="session")
def ui_database(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> UiDatabase:
    """A migrated SQLite database and data dir for the web app (a package's ``ui_env`` applies it)."""
    data_dir = tmp_path_factory.mktemp("ui") / "data"
    data_dir.mkdir(parents=True)
    shutil.copy(sqlite_template, data_dir / "grobot.db")
    env = GroBotEnv(data_dir=data_dir, database_url=f"sqlite:///{data_dir / 'grobot.db'}", backend="sqlite")
    variables = {
        "DATABASE_URL": env.database_url,
        "GROBOT_DATA_DIR": str(data_dir),
        "GROBOT_SECRET_KEY": TEST_SECRET_KEY,
        # The pages' tests start from the Ollama built-in default; the embedded demo model has its own
        # tests (tests/real_llm, tests/worker/test_embedded_model_e2e.py).
        "GROBOT_EMBEDDED_LLM": "0",
        # The bot workers the tests start beat every second (FAST_ENV): the web app, and this process,
        # count a supervisor (or bot) silent for 13 s as stopped (fleet.stale_after_seconds), not 25 s.
        "GROBOT_HEARTBEAT_SECONDS": FAST_ENV["GROBOT_HEARTBEAT_SECONDS"],
    }
    return UiDatabase(env=env, variables=variables, template=sqlite_template,
                      unset=("CHROMA_URL", "DISCORD_API_BASE", "DISCORD_GATEWAY_URL", "OLLAMA_HOST"))


@pytest.fixture(scope="session")
def web_app(ui_database: UiDatabase) -> Iterator[WebApp]:
    """The real web app (``reflex run --env prod``) on a free port, serving ``ui_database``:
    built and started once for the session."""
    with _only_web_app_of_this_tree():
        with ui_database.active() as env:
            environ = env.environ()
        app = WebApp(env=environ, log_path=env.data_dir.parent / "reflex.log",
                     states_dir=env.data_dir.parent / "states")
        try:
            app.start()
        except AssertionError as exc:  # the production build can fail on a loaded machine (its prerender times out)
            logger.warning("The web app did not start; trying once more: %s", str(exc)[-2000:])
            app.start()
        yield app
        app.stop()


@contextmanager
def _only_web_app_of_this_tree() -> Iterator[None]:
    """Fail at once, in plain words, where a second web app would rebuild ``.web`` under the first
    (another pytest of this worktree, or browser tests on two xdist workers)."""
    lock = Path(tempfile.gettempdir()) / f"grobot-web-app-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}.lock"
    with lock.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pytest.fail(f"another test process runs the web app of {ROOT}: run the browser tests in one process "
                        "(with xdist: -n N --dist loadscope, as make test does)")
        yield


def chromium() -> Iterator[object]:
    """Headless Chromium from Debian (:func:`tests.ui.webapp.chromium_path`), for a package's ``browser``
    fixture: Playwright's sync API keeps an event loop running on this thread while it is open,
    so it closes at the package's end, before tests that run asyncio themselves."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    if not os.path.exists(executable):
        pytest.fail(f"{executable} is missing: apt-get install -y chromium-headless-shell (or set GROBOT_CHROMIUM)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def ui_admin(ui_database: UiDatabase) -> UiUser:
    """The admin account of the web app (each package's database has it), for the tests that need
    one signed in."""
    if ui_database.admin is None:  # no package started yet: a test outside tests/ui and tests/security
        ui_database.start_package()
    assert ui_database.admin is not None
    return ui_database.admin
