"""Plain words for admins and testers, the technical text behind "Details" for admins only (issue 30 item 6):
a bot that cannot reach Discord, a run that failed on a bad base URL, the Tool Router's scores, the Logs'
module names, who stopped a run.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import AgentEvent, BotStatus, LogEntry, Message, Role
from grobot.core.services import tester_chat, users
from tests.ui.auth import PAGE_TIMEOUT_MS, UiUser, create_ui_user
from tests.ui.chat import add_bot, unique
from tests.ui.screens import WIDE, sized_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DISCORD_DOWN = "cannot reach Discord: Cannot connect to host discord.com:443 ssl:default [Name or service not known]"
BAD_URL = "openai at not a url: connection failed (InvalidUrlClientError: not%20a%20url/models)"
ROUTER = "no tool matches the message (embeddings+words: user_notes_read 0.21); answering directly"
RAW = ("discord.com:443", "ssl:default", "InvalidUrlClientError", "not%20a%20url", "embeddings+words",
       "user_notes_read 0.21", "bot_worker.", "grobot.core")


@pytest.fixture(scope="module")
def tester() -> UiUser:
    return create_ui_user(unique("plain-tester"), Role.TESTER)


def _bot_in_trouble(*accounts: UiUser) -> int:
    """A bot that cannot reach Discord, whose last Test Chat run (of each account) failed on a bad base URL."""
    bot_id = add_bot(unique("Troubled"))
    with session_scope() as session:
        status = session.get(BotStatus, bot_id)
        status.state, status.detail = "error", DISCORD_DOWN
        session.add(status)
        session.add(LogEntry(bot_id=bot_id, level="ERROR", logger="bot_worker.bot_process",
                             message=f"Cannot reach Discord at https://discord.com/api/v10: {DISCORD_DOWN[22:]}"))
        for account in accounts:
            user = users.get_user(account.username, session=session)
            if user.role == Role.TESTER.value:
                users.grant_bot(user, bot_id, session=session)
            conv = tester_chat.open_session(bot_id, user.id or 0, session=session)
            run = tester_chat.submit(conv.id or 0, "What time is it?", session=session, author_name=account.username)
            session.add(AgentEvent(run_id=run.id, seq=1, kind="thinking", data={"step": "tool_router", "text": ROUTER}))
            session.add(AgentEvent(run_id=run.id, seq=2, kind="thinking", data={
                "step": "tool_router", "text": "no tool matches the message; answering directly",
                "detail": "embeddings+words: user_notes_read 0.21"}))
            tester_chat.fail(run.id or 0, BAD_URL, session=session)
    return bot_id


def _no_raw_text(page, who: str) -> None:
    shown = page.locator("main").inner_text()
    for raw in RAW:
        assert raw not in shown, f"{who} reads {raw!r}"


def test_a_tester_reads_plain_words_and_no_details(browser, web_app, ui_admin, tester) -> None:
    bot_id = _bot_in_trouble(tester)
    with sized_page(browser, web_app.url, WIDE, tester) as page:
        page.goto(f"/bots/{bot_id}/chat")
        expect(page.get_by_test_id("bot-status")).to_contain_text("Discord could not be reached",
                                                                  timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_test_id("status-details")).to_have_count(0)
        error = page.get_by_test_id("answer-error")
        expect(error).to_have_text("The bot could not answer: openai at not a url: connection failed")
        steps = page.get_by_test_id("chain-steps").last
        steps.get_by_text("Steps (2)").click()
        expect(steps.get_by_text("Tool Router: no tool matches the message; answering directly")).to_have_count(2)
        for summary in steps.locator("[data-step] summary").all():  # every step folded out: nothing technical
            summary.click()
        expect(page.get_by_test_id("technical-details")).to_have_count(0)
        _no_raw_text(page, "the tester")
        page.goto("/")
        expect(page.get_by_role("heading", name="Bots", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        expect(page.locator("main")).to_contain_text("Discord could not be reached")
        _no_raw_text(page, "the tester, on the Bots page")
        assert page.grobot_errors == [], page.grobot_errors


def test_an_admin_reads_the_same_words_with_the_details_behind_a_toggle(browser, web_app, ui_admin) -> None:
    bot_id = _bot_in_trouble(ui_admin)
    with sized_page(browser, web_app.url, WIDE, ui_admin) as page:
        page.goto(f"/bots/{bot_id}/chat")
        status = page.get_by_test_id("bot-status")
        expect(status).to_contain_text("Discord could not be reached", timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_test_id("answer-error")).to_have_text(
            "The bot could not answer: openai at not a url: connection failed")
        _no_raw_text(page, "the admin, with the details folded")
        page.get_by_test_id("status-details").click()
        expect(page.get_by_role("dialog")).to_contain_text(DISCORD_DOWN)
        page.keyboard.press("Escape")
        details = page.get_by_test_id("technical-details").first
        details.locator("summary").click()
        expect(details).to_contain_text("InvalidUrlClientError: not%20a%20url/models")
        steps = page.get_by_test_id("chain-steps").last
        steps.get_by_text("Steps (2)").click()
        steps.get_by_text("Tool Router: no tool matches the message; answering directly").last.click()
        expect(steps).to_contain_text("embeddings+words: user_notes_read 0.21")

        # The Logs: where a line comes from in words, its technical tail behind "Details".
        page.goto(f"/bots/{bot_id}/logs")
        row = page.locator("tr[data-level='ERROR']").first
        expect(row).to_contain_text("Cannot reach Discord", timeout=PAGE_TIMEOUT_MS)
        expect(row.get_by_test_id("log-source")).to_have_text("Discord")
        expect(page.get_by_role("columnheader", name="Source")).to_be_visible()
        _no_raw_text(page, "the admin, in the Logs")
        row.get_by_test_id("technical-details").locator("summary").click()
        expect(row).to_contain_text("discord.com:443 ssl:default")
        assert page.grobot_errors == [], page.grobot_errors


def test_a_run_stopped_by_an_admin_says_who_stopped_it(admin_page, ui_admin) -> None:
    """No worker runs: Stop withdraws the waiting message, in the name of who pressed it."""
    page = admin_page
    bot_id = add_bot(unique("Stopped"))
    page.goto(f"/bots/{bot_id}/chat")
    expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    page.get_by_role("textbox", name="Message").fill("Are you there?")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_test_id("waiting-for-worker")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    page.get_by_role("button", name="Stop").click()
    expect(page.get_by_test_id("answer-stopped").last).to_have_text(
        f"Stopped: the run was cancelled (stopped by {ui_admin.username})", timeout=PAGE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        conv = tester_chat.latest_session(bot_id, users.get_user(ui_admin.username, session=session).id or 0,
                                          session=session)
        stopped = [m for m in tester_chat.messages(conv.id, session=session) if m.role == "user"][-1]
    assert isinstance(stopped, Message) and "tester" not in stopped.error
