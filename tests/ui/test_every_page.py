"""Every page of the web app (the login page, the global pages and every tab of a bot, the
Knowledge Base also with a user open), at 1400x900 and at 420 px wide, in a real browser: each
loads with no console error, nothing is wider than the screen at 420 px (the document's ``scrollWidth`` never exceeds the viewport), and a
screenshot of each is saved in the folder the test prints (``test-artifacts/pages``).

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging

import pytest
from playwright.sync_api import expect

from grobot.components.bot_tabs import BOT_TABS as TAB_BAR
from grobot.core.db import session_scope
from grobot.core.models import BotStatus, LogEntry
from grobot.core.services import council, discord_users, files, user_notes
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, unique
from tests.ui.screens import NARROW, WIDE, horizontal_overflow, sized_page, wait_for_page, widest_elements
from tests.ui.webapp import ROOT

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SCREENSHOTS = ROOT / "test-artifacts" / "pages"
GLOBAL_PAGES = (("/", "Bots"), ("/mcp", "MCP servers"), ("/usage", "Usage"), ("/users", "Users"),
                ("/settings", "Settings"))
BOT_TABS = tuple(tab.key for tab in TAB_BAR)  # every tab of the bar, the ones added later too
WALKED_USER = "1574564006750846976"


@pytest.fixture(scope="module")
def walked_bot(ui_env) -> tuple[int, str]:
    """A bot with something on every tab: a status, a log line, a file, a Discord user with notes."""
    name = unique("Walker")
    bot_id = add_bot(name, personality="A bot with a rather long personality text to fill the page.")
    with session_scope() as session:
        status = session.get(BotStatus, bot_id)
        status.state, status.discord_user_name, status.guild_count = "online", "walker-bot", 2
        session.add(status)
        session.add(LogEntry(bot_id=bot_id, level="INFO", logger="bot_worker.bot_process", message="Connected"))
        files.write_file(session=session, bot_id=bot_id, path="docs/manual-with-a-long-name.md", data=b"# Manual\n",
                         content_type="text/markdown")
        discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id=WALKED_USER,
                                     directives="Be formal.", display_name="Ada Lovelace")
        user_notes.add_note(session=session, bot_id=bot_id, discord_user_id=WALKED_USER,
                            note="Writes compilers", reliability=0.9, source="archivist")
        council.save_deliberation(bot_id, {
            "question": "Should the walker bot learn a second language, and which one would serve its users best?",
            "advisors": [{"name": "Analyst", "provider": "ollama", "model": "llama3.2", "answer": "Yes: Spanish."}],
            "synthesis": "Consensus: Spanish.", "consensus": "Spanish.", "confidence": 70}, session=session,
            asked_by="Ada Lovelace")
    return bot_id, name


def pages(bot_id: int, name: str) -> list[tuple[str, str, str]]:
    """(slug, path, heading) of every page."""
    found = [(path.strip("/") or "bots", path, heading) for path, heading in GLOBAL_PAGES]
    found += [(f"bot-{tab}", f"/bots/{bot_id}/{tab}", name) for tab in BOT_TABS]
    return found


@pytest.mark.parametrize("size", ["wide", "narrow"])
def test_every_page_loads_cleanly_at_desktop_and_phone_width(browser, web_app, ui_admin, walked_bot, size,
                                                             capsys) -> None:
    viewport = WIDE if size == "wide" else NARROW
    folder = SCREENSHOTS / f"{viewport['width']}x{viewport['height']}"
    for old in folder.glob("*.png"):
        old.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    with capsys.disabled():  # in the test output even when the test passes
        print(f"\nScreenshots of every page at {viewport['width']}x{viewport['height']}: {folder}")
    problems: list[str] = []
    bot_id, name = walked_bot
    with sized_page(browser, web_app.url, viewport) as page:  # the one page open without a session
        page.goto("/login")
        wait_for_page(page, "Sign in")
        check(page, folder, "login", "/login", size, problems)
    with sized_page(browser, web_app.url, viewport, ui_admin) as page:
        for slug, path, heading in pages(bot_id, name):
            page.grobot_errors.clear()
            page.goto(path)
            wait_for_page(page, heading)
            if path.startswith("/bots/"):
                expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
            expect(page.get_by_text("Checking your session…")).to_have_count(0)
            check(page, folder, slug, path, size, problems)
            if slug == "bot-knowledge":  # and with a user open
                page.locator(f'[data-user="{WALKED_USER}"]').click()
                expect(page.get_by_role("textbox", name="Directives")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
                check(page, folder, "bot-knowledge-user", path + " (a user open)", size, problems)
    assert not problems, "\n".join(problems)
    expected = [f"{slug}.png" for slug, _, _ in pages(bot_id, name)] + ["bot-knowledge-user.png", "login.png"]
    assert sorted(p.name for p in folder.glob("*.png")) == sorted(expected)


def check(page, folder, slug: str, what: str, size: str, problems: list[str]) -> None:
    """Screenshot the page; note its console errors and (narrow) its horizontal overflow."""
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(folder / f"{slug}.png"), full_page=True)
    if page.grobot_errors:
        problems.append(f"{what}: console errors {page.grobot_errors}")
    if size == "narrow" and (extra := horizontal_overflow(page)):
        problems.append(f"{what}: {extra} px wider than the screen: {widest_elements(page)}")

