"""Every page of the web app (the login page, the global pages and every tab of a bot, the
Knowledge Base also with a user open), at 1400x900 and at 420 px wide, as an admin and as a tester, in a
real browser: each loads with no console error, shows no raw technical text (an exception's name, a module's
name, an internal id, milliseconds past a second, "EUR 0.0000", a role's id) although the walked bot has them
in its data, nothing is wider than the screen at 420 px (the document's ``scrollWidth`` never exceeds the
viewport), and a screenshot of each is saved in the folder the test prints (``test-artifacts/pages``). A tester
opening an admin's page lands on the Bots page, told why.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging
import re
from types import SimpleNamespace

import pytest
from playwright.sync_api import expect

from grobot.components.bot_tabs import BOT_TABS as TAB_BAR
from grobot.core.db import session_scope
from grobot.core.models import AgentEvent, BotStatus, LogEntry, Role
from grobot.core.services import council, discord_users, files, llm_calls, tester_chat, user_notes, users
from tests.ui.auth import PAGE_TIMEOUT_MS, UiUser, create_ui_user
from tests.ui.chat import add_bot, unique
from tests.ui.screens import NARROW, WIDE, horizontal_overflow, render_all, sized_page, wait_for_page, widest_elements
from tests.ui.webapp import ROOT

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SCREENSHOTS = ROOT / "test-artifacts" / "pages"
GLOBAL_PAGES = (("/", "Bots"), ("/mcp", "MCP servers"), ("/usage", "Usage"), ("/users", "Users"),
                ("/settings", "Settings"))
BOT_TABS = tuple(tab.key for tab in TAB_BAR)  # every tab of the bar, the ones added later too
WALKED_USER = "1574564006750846976"
ADMIN_PAGES = {"/mcp", "/usage", "/users", "/settings"}
# What no admin or tester reads on a page (the walked bot's data has each of them).
RAW_TEXT = {
    "an exception's name": re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b"),
    "a traceback": re.compile(r"Traceback"),
    "a module's name": re.compile(r"\b(?:grobot|bot_worker|aiohttp)\.[a-z_]+"),
    "an internal user id": re.compile(r"app-user:\d"),
    "a host and port": re.compile(r"\b[a-z0-9-]+\.[a-z]{2,}:\d{2,5}\b|ssl:default"),
    "milliseconds past a second": re.compile(r"\b\d{1,3}(?:,\d{3})+ ms\b|\b\d{4,} ms\b"),
    "a cost of zeros": re.compile(r"\b0\.0000\b(?!\d)"),
    "a role's id": re.compile(r"\b(?:tool_identifier|parameter_extractor|tool_router)\b"),
    "the Tool Router's scores": re.compile(r"embeddings\+words"),
}


@pytest.fixture(scope="module")
def walk_tester(ui_env) -> UiUser:
    return create_ui_user(unique("walk-tester"), Role.TESTER)


@pytest.fixture(scope="module")
def walked_bot(ui_env, ui_admin, walk_tester) -> tuple[int, str]:
    """A bot with something on every tab, the technical text of a bad day included: a status that cannot
    reach Discord, log lines of module names with an exception, milliseconds and an internal user id, LLM
    calls of a role id that took 45 s, a Test Chat run of each user that failed on a bad base URL (with the
    Tool Router's scores among its steps), a file, a Discord user with notes, a deliberation."""
    name = unique("Walker")
    bot_id = add_bot(name, personality="A bot with a rather long personality text to fill the page.")
    with session_scope() as session:
        status = session.get(BotStatus, bot_id)
        status.state, status.discord_user_name, status.guild_count = "error", "walker-bot", 2
        status.detail = "cannot reach Discord: Cannot connect to host discord.com:443 ssl:default [Name or service not known]"
        session.add(status)
        session.add(LogEntry(bot_id=bot_id, level="INFO", logger="bot_worker.bot_process", message="Connected"))
        session.add(LogEntry(bot_id=bot_id, level="ERROR", logger="bot_worker.bot_process",
                             message="Cannot reach Discord at https://discord.com/api/v10: Cannot connect to host "
                                     "discord.com:443 ssl:default [Name or service not known]"))
        admin_id = users.get_user(ui_admin.username, session=session).id
        session.add(LogEntry(bot_id=bot_id, level="INFO", logger="grobot.core.agents.chain",
                             message=f"Answered a message (Test Chat, user app-user:{admin_id}, run 5) in 206039 ms: "
                                     "7 LLM call(s), 3000 tokens in, 200 out"))
        session.add(LogEntry(bot_id=bot_id, level="ERROR", logger="bot_worker.tester_chat_job",
                             message="Test Chat run 7 failed: InvalidUrlClientError: not%20a%20url/models"))
        tester = users.get_user(walk_tester.username, session=session)
        users.grant_bot(tester, bot_id, session=session)
        for account in (admin_id, tester.id):
            conv = tester_chat.open_session(bot_id, account or 0, session=session)
            run = tester_chat.submit(conv.id or 0, "What time is it?", session=session, author_name="walker")
            session.add(AgentEvent(run_id=run.id, seq=1, kind="thinking", data={
                "step": "tool_router", "text": "no tool matches the message (embeddings+words: user_notes_read 0.21); "
                                               "answering directly"}))
            tester_chat.fail(run.id or 0, "openai at not a url: connection failed (InvalidUrlClientError: "
                                          "not%20a%20url/models)", session=session)
            llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=run.id, records=[SimpleNamespace(
                role="tool_identifier", provider="ollama", model="llama3.2", tokens_in=12, tokens_out=3, ttft_ms=None,
                latency_ms=45_804.0, error="")])
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


@pytest.mark.parametrize("role", ["admin", "tester"])
@pytest.mark.parametrize("size", ["wide", "narrow"])
def test_every_page_loads_cleanly_at_desktop_and_phone_width(browser, web_app, ui_admin, walk_tester, walked_bot,
                                                             size, role, capsys) -> None:
    viewport = WIDE if size == "wide" else NARROW
    folder = SCREENSHOTS / f"{viewport['width']}x{viewport['height']}" / role
    for old in folder.glob("*.png"):
        old.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    with capsys.disabled():  # in the test output even when the test passes
        print(f"\nScreenshots of every page at {viewport['width']}x{viewport['height']} as {role}: {folder}")
    problems: list[str] = []
    bot_id, name = walked_bot
    account = ui_admin if role == "admin" else walk_tester
    with sized_page(browser, web_app.url, viewport) as page:  # the one page open without a session
        page.goto("/login")
        wait_for_page(page, "Sign in")
        check(page, folder, "login", "/login", size, problems)
    with sized_page(browser, web_app.url, viewport, account) as page:
        for slug, path, heading in pages(bot_id, name):
            page.grobot_errors.clear()
            page.goto(path)
            if role == "tester" and path in ADMIN_PAGES:  # sent to the Bots page, told why
                wait_for_page(page, "Bots")
                expect(page.get_by_text("That page is for administrators only")).to_be_visible(
                    timeout=PAGE_TIMEOUT_MS)
            else:
                wait_for_page(page, heading)
            if path.startswith("/bots/") and role == "tester" and not path.endswith("/chat"):
                expect(page.get_by_test_id("access-error")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
            elif path.startswith("/bots/"):
                expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
            expect(page.get_by_text("Checking your session…")).to_have_count(0)
            check(page, folder, slug, path, size, problems)
            if slug == "bot-knowledge" and role == "admin":  # and with a user open
                page.locator(f'[data-user="{WALKED_USER}"]').click()
                expect(page.get_by_role("textbox", name="Directives")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
                check(page, folder, "bot-knowledge-user", path + " (a user open)", size, problems)
    assert not problems, "\n".join(problems)
    expected = [f"{slug}.png" for slug, _, _ in pages(bot_id, name)] + ["login.png"]
    expected += ["bot-knowledge-user.png"] if role == "admin" else []
    assert sorted(p.name for p in folder.glob("*.png")) == sorted(expected)


def check(page, folder, slug: str, what: str, size: str, problems: list[str]) -> None:
    """Screenshot the page; note its console errors, raw technical text and (narrow) its horizontal overflow."""
    # Its fonts and images are in (a positive condition, not networkidle's half second of silence per page).
    page.wait_for_function("() => document.fonts.status === 'loaded' && Array.from(document.images)"
                           ".every(image => image.complete)", timeout=PAGE_TIMEOUT_MS)
    render_all(page)
    page.screenshot(path=str(folder / f"{slug}.png"), full_page=True)
    if page.grobot_errors:
        problems.append(f"{what}: console errors {page.grobot_errors}")
    shown = page.locator("body").inner_text()
    for label, pattern in RAW_TEXT.items():
        if found := pattern.search(shown):
            problems.append(f"{what}: {label} on screen: {shown[max(0, found.start() - 60):found.end() + 60]!r}")
    if size == "narrow" and (extra := horizontal_overflow(page)):
        problems.append(f"{what}: {extra} px wider than the screen: {widest_elements(page)}")
