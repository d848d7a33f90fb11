"""Uploads and the backend's other HTTP endpoints against a foreign origin (issue 28, hole 3).

An admin has a bot's Files tab open in a real browser. The attacker knows that tab's client token
(it is in the websocket's URL, so in a proxy's log) and posts a file to ``/_upload`` naming it: from
a page of another origin, with no cookie, or with a cookie of their own (a tester's). Nothing is
stored, CORS lets no other origin read an answer, and the admin's own upload still works.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import expect
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import BotFile, Role
from grobot.core.services import files, users
from grobot.pages.bot_files_state import FilesState
from grobot.web_session import SESSION_COOKIE
from tests.security.attacks import name_of
from tests.ui.auth import PAGE_TIMEOUT_MS, create_ui_user
from tests.ui.chat import add_bot, unique

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

EVIL = "http://evil.example"


def stored(bot_id: int) -> list[str]:
    with session_scope(readonly=True) as session:
        rows = sorted(session.exec(select(BotFile.path).where(BotFile.bot_id == bot_id)).all())
    on_disk = sorted(p.name for p in files.bot_root(bot_id).rglob("*") if p.is_file())
    assert rows == on_disk, (rows, on_disk)
    return rows


def tab_token(page) -> str:
    """The client token of the page's open websocket (as a proxy's log shows its URL)."""
    urls = [url for url in page.grobot_log.requests if "/_event" in url and "token=" in url]
    assert urls, page.grobot_log.requests
    return parse_qs(urlsplit(urls[-1]).query)["token"][0]


def upload(base: str, token: str, name: str, *, origin: str | None = None, cookie: str | None = None) -> httpx.Response:
    headers = {"reflex-client-token": token, "reflex-event-handler": name_of(FilesState.upload)}
    if origin:
        headers["Origin"] = origin
    if cookie:
        headers["Cookie"] = f"{SESSION_COOKIE}={cookie}"
    return httpx.post(f"{base}/_upload", headers=headers, files={"files": (name, b"planted", "text/plain")},
                      timeout=60)


def test_an_upload_needs_its_own_cookie_and_the_apps_own_origin(admin_page, web_app, ui_admin) -> None:
    page = admin_page
    bot_id = add_bot(unique("Uploads"))
    page.goto(f"/bots/{bot_id}/files")
    expect(page.get_by_text("No files yet")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    token = tab_token(page)
    tester = create_ui_user(unique("tester"), Role.TESTER)
    with session_scope(readonly=True) as session:
        tester_cookie = users.start_session(users.get_user(tester.id, session=session))
        admin_cookie = users.start_session(users.get_user(ui_admin.id, session=session))

    # The attacks: a page of another site (with or without the admin's cookie: a browser would send it
    # on a cross-site request were it not SameSite), no cookie at all, a tester's cookie.
    answers = {
        "evil origin, no cookie": upload(web_app.url, token, "evil.txt", origin=EVIL),
        "evil origin, the admin's cookie": upload(web_app.url, token, "csrf.txt", origin=EVIL, cookie=admin_cookie),
        "no cookie": upload(web_app.url, token, "nocookie.txt"),
        "a tester's cookie": upload(web_app.url, token, "tester.txt", origin=web_app.url, cookie=tester_cookie),
    }
    assert stored(bot_id) == [], {what: (r.status_code, r.text[:300]) for what, r in answers.items()}
    for what in ("evil origin, no cookie", "evil origin, the admin's cookie", "no cookie"):
        assert answers[what].status_code == 403, (what, answers[what].status_code)
    assert all(r.headers.get("access-control-allow-origin") in (None, web_app.url) for r in answers.values())

    # CORS: no other origin may read an answer of the backend (the preflight of a credentialed POST).
    for path in ("/_upload", "/_grobot/session", "/ping"):
        preflight = httpx.options(f"{web_app.url}{path}", timeout=30, headers={
            "Origin": EVIL, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,reflex-client-token,reflex-event-handler"})
        assert preflight.headers.get("access-control-allow-origin") != EVIL, (path, dict(preflight.headers))
    # The backend's other endpoints refuse another origin too; Reflex's listing of uploads serves nothing.
    assert httpx.get(f"{web_app.url}/ping", headers={"Origin": EVIL}, timeout=30).status_code == 403
    assert httpx.post(f"{web_app.url}/_grobot/session", headers={"Origin": EVIL}, json={}, timeout=30).status_code == 403
    assert httpx.get(f"{web_app.url}/_upload/evil.txt", timeout=30).status_code == 404

    # The control: the admin's own upload (what the browser sends, then through the page itself).
    assert upload(web_app.url, token, "mine.txt", origin=web_app.url, cookie=admin_cookie).status_code == 200
    page.locator("#bot-files-upload input[type=file]").set_input_files(
        [{"name": "manual.txt", "mimeType": "text/plain", "buffer": b"the manual"}])
    expect(page.get_by_text("manual.txt")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    assert stored(bot_id) == ["manual.txt", "mine.txt"]
