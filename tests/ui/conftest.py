"""Fixtures of the browser tests: one isolated database and one running web app for the
whole ``tests/ui`` package (starting the app is the slow part, so all modules share it),
Debian's Chromium driven by Playwright, a fresh page (and browser storage) per test.

The modules share the database: each test sets up the bots and users it looks at.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grobot.core.models import Role
from tests.conftest import TEST_SECRET_KEY, GroBotEnv, _reset_process_state
from tests.ui.auth import UiUser, create_ui_user, sign_in
from tests.ui.webapp import CHROMIUM_ARGS, WebApp, chromium_path

logger = logging.getLogger(__name__)


@pytest.fixture(scope="package")
def ui_env(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[GroBotEnv]:
    """Like ``grobot_env``, for the whole package: the web app it serves lives that long."""
    data_dir = tmp_path_factory.mktemp("ui") / "data"
    data_dir.mkdir(parents=True)
    shutil.copy(sqlite_template, data_dir / "grobot.db")
    env = GroBotEnv(data_dir=data_dir, database_url=f"sqlite:///{data_dir / 'grobot.db'}", backend="sqlite")
    patch = pytest.MonkeyPatch()
    patch.setenv("DATABASE_URL", env.database_url)
    patch.setenv("GROBOT_DATA_DIR", str(data_dir))
    patch.setenv("GROBOT_SECRET_KEY", TEST_SECRET_KEY)
    for var in ("CHROMA_URL", "DISCORD_API_BASE", "DISCORD_GATEWAY_URL", "OLLAMA_HOST"):
        patch.delenv(var, raising=False)
    # The pages' tests start from the Ollama built-in default; the embedded demo model has its own
    # tests (tests/real_llm, tests/worker/test_embedded_model_e2e.py).
    patch.setenv("GROBOT_EMBEDDED_LLM", "0")
    _reset_process_state()
    yield env
    patch.undo()
    _reset_process_state()


@pytest.fixture(scope="package")
def web_app(ui_env: GroBotEnv) -> Iterator[WebApp]:
    """The real web app (``reflex run --env prod``) on a free port, serving ``ui_env``."""
    app = WebApp(
        env=ui_env.environ(),
        log_path=ui_env.data_dir.parent / "reflex.log",
        states_dir=ui_env.data_dir.parent / "states",
    )
    app.start()
    yield app
    app.stop()


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    """Headless Chromium from Debian (``apt-get install chromium``), one for the package."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    if not os.path.exists(executable):
        pytest.fail(f"{executable} is missing: apt-get install -y chromium (or set GROBOT_CHROMIUM)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclass
class PageRecord:
    """What a page received: WebSocket frames and console errors (for the no-secret checks)."""

    frames: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


@pytest.fixture
def page(browser, web_app: WebApp) -> Iterator[object]:
    """A fresh browser page (1280x800) that records the WebSocket frames it receives."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=web_app.url)
    page = context.new_page()
    record = PageRecord()
    page.grobot_record = record

    def on_frame(payload: str | bytes) -> None:
        record.frames.append(payload if isinstance(payload, str) else payload.decode("utf-8", "replace"))

    def on_websocket(ws) -> None:
        ws.on("framereceived", on_frame)

    page.on("websocket", on_websocket)
    page.on("console", lambda msg: record.console_errors.append(msg.text) if msg.type == "error" else None)
    yield page
    context.close()


@pytest.fixture(scope="package")
def ui_admin(ui_env: GroBotEnv) -> UiUser:
    """An admin account of the web app, for the tests that need one signed in."""
    return create_ui_user("ui-admin", Role.ADMIN)


@pytest.fixture
def admin_page(page, ui_admin: UiUser):
    """A fresh page, signed in as the admin through the login form."""
    sign_in(page, ui_admin)
    return page
