"""Fixtures of the browser tests: the web app, its database, Chromium and the admin account are
the session's (``tests/browser_fixtures.py``, shared with ``tests/security``); ``ui_env`` points
this process at that database while the package runs; a fresh page (and browser storage) per test.

The modules share the database: each test sets up the bots and users it looks at.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.browser_fixtures import UiDatabase, chromium
from tests.conftest import GroBotEnv
from tests.ui.auth import UiUser, with_session
from tests.ui.webapp import WebApp

logger = logging.getLogger(__name__)


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    """Headless Chromium, one for the package."""
    yield from chromium()


@pytest.fixture(scope="package", autouse=True)
def ui_env(ui_database: UiDatabase) -> Iterator[GroBotEnv]:
    """Like ``grobot_env``, for the whole package: the database the session's web app serves."""
    ui_database.start_package()
    with ui_database.active() as env:
        yield env


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


@pytest.fixture
def admin_page(page, ui_admin: UiUser):
    """A fresh page with the admin's session (through the login form the first time, then with the
    session cookie it got: see ``with_session``); no page loaded yet: the test opens the one it looks at."""
    with_session(page, ui_admin)
    return page
