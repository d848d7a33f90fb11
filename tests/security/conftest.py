"""Fixtures of the attacker's test suite (issue 17).

The session's database and real web app (``reflex run --env prod``), shared with ``tests/ui``
(``tests/browser_fixtures.py``); an "attacker" HTTP server on 127.0.0.1
that records every request it gets (a foreign origin for the payloads); and pages that log every
request the browser makes, so a test can say that nothing left for a foreign host.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.browser_fixtures import UiDatabase, chromium
from tests.conftest import GroBotEnv
from tests.ui.auth import with_session
from tests.ui.webapp import WebApp

logger = logging.getLogger(__name__)


class _AttackerHandler(BaseHTTPRequestHandler):
    def _hit(self) -> None:
        self.server.hits.append(f"{self.command} {self.path}")  # type: ignore[attr-defined]
        body = b"<svg xmlns='http://www.w3.org/2000/svg'/>"
        self.send_response(200)
        self.send_header("Content-Type", "image/svg+xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _hit

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class Attacker:
    """A server of the attacker's: payloads point at it; ``hits`` is what it received."""

    server: ThreadingHTTPServer

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def hits(self) -> list[str]:
        return list(self.server.hits)  # type: ignore[attr-defined]


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    """Headless Chromium, one for the package."""
    yield from chromium()


@pytest.fixture(scope="package")
def ui_env(ui_database: UiDatabase) -> Iterator[GroBotEnv]:
    """The database of the session's web app, while this package's browser tests run."""
    ui_database.start_package()
    with ui_database.active() as env:
        yield env


@pytest.fixture(autouse=True)
def _web_app_database(request: pytest.FixtureRequest) -> None:
    """A test of the web app reads and writes its database (the others have their own ``grobot_env``)."""
    if "web_app" in request.fixturenames:
        request.getfixturevalue("ui_env")


@pytest.fixture(scope="package")
def attacker_server() -> Iterator[Attacker]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AttackerHandler)
    server.hits = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Attacker(server)
    server.shutdown()
    server.server_close()


@pytest.fixture
def attacker(attacker_server: Attacker) -> Attacker:
    """The attacker's server, with no request received yet in this test."""
    attacker_server.server.hits.clear()  # type: ignore[attr-defined]
    return attacker_server


@dataclass
class BrowserLog:
    """What the browser did: every request URL, WebSocket frames, console messages."""

    origin: str
    requests: list[str] = field(default_factory=list)
    frames: list[str] = field(default_factory=list)
    sent_frames: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)

    def csp_reports(self) -> list[str]:
        """What Chromium reported as blocked by the Content-Security-Policy."""
        return [line for line in self.console if "Content Security Policy" in line]

    def foreign_requests(self) -> list[str]:
        """Requests to anything but the web app itself (``data:``/``blob:`` stay in the page)."""
        return [url for url in self.requests
                if not url.startswith((self.origin + "/", "data:", "blob:", "about:"))
                and url != self.origin]


@pytest.fixture
def page(browser, web_app: WebApp) -> Iterator[object]:
    """A fresh page that logs every request (popups included), frame and console message."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=web_app.url)
    log = BrowserLog(origin=web_app.url)
    context.on("request", lambda request: log.requests.append(request.url))

    def on_websocket(ws) -> None:
        log.requests.append(ws.url.replace("ws://", "http://", 1))
        ws.on("framereceived", lambda p: log.frames.append(p if isinstance(p, str) else p.decode("utf-8", "replace")))
        ws.on("framesent", lambda p: log.sent_frames.append(p if isinstance(p, str) else p.decode("utf-8", "replace")))

    context.on("page", lambda p: p.on("websocket", on_websocket))
    page = context.new_page()
    page.on("console", lambda msg: log.console.append(f"{msg.type}: {msg.text}"))
    page.grobot_log = log
    yield page
    context.close()


@pytest.fixture
def admin_page(page, ui_admin):
    """A fresh logging page with the admin's session, no page loaded yet (see ``with_session``)."""
    with_session(page, ui_admin)
    return page
