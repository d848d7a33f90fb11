"""Destructive actions of the shell's pages ask first, in a dialog that names what goes
(real browser, real web app): deleting a user, disabling one, deleting a bot's file. Cancel
(or Escape) keeps everything.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import AppUser, BotFile, Message, Role
from grobot.core.services import files, tester_chat, users
from tests.ui.auth import PAGE_TIMEOUT_MS, create_ui_user
from tests.ui.chat import add_bot, unique

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

LIVE_TIMEOUT_MS = 15_000


def user_row(page, username: str):
    return page.get_by_role("table").get_by_role("row").filter(has=page.get_by_text(username, exact=True))


def user_action(page, username: str, action: str):
    """The confirmation of ``action`` ("Delete", "Disable") on a user, opened from their row's menu."""
    page.goto("/users")
    row = user_row(page, username)
    expect(row).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    row.get_by_role("button", name="More actions").click()
    page.get_by_role("menuitem", name=action).click()
    return page.get_by_role("alertdialog", name=f"{action} user?")


def test_deleting_a_user_asks_first_naming_them(admin_page) -> None:
    page = admin_page
    account = create_ui_user(unique("leaving"), Role.TESTER)
    dialog = user_action(page, account.username, "Delete")
    row = user_row(page, account.username)
    expect(dialog).to_contain_text(f"Delete {account.username}? Their account and bot access are removed for good.")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    expect(row).to_be_visible()
    with session_scope(readonly=True) as session:
        assert session.get(AppUser, account.id) is not None

    row.get_by_role("button", name="More actions").click()
    page.get_by_role("menuitem", name="Delete").click()
    page.get_by_role("alertdialog", name="Delete user?").get_by_role("button", name="Delete user").click()
    expect(page.get_by_text(f"{account.username} deleted")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect(row).to_have_count(0)
    with session_scope(readonly=True) as session:
        assert session.get(AppUser, account.id) is None


def test_deleting_a_file_asks_first_naming_it(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Keeper"))
    with session_scope() as session:
        files.write_file(session=session, bot_id=bot_id, path="docs/keep.md", data=b"keep", content_type="text/markdown")
    page.goto(f"/bots/{bot_id}/files")
    row = page.locator('[data-path="docs/keep.md"]')
    expect(row).to_be_visible(timeout=PAGE_TIMEOUT_MS)

    row.get_by_role("button", name="Delete docs/keep.md").click()
    dialog = page.get_by_role("alertdialog", name="Delete this file?")
    expect(dialog).to_contain_text("docs/keep.md is deleted from the bot's folder. This cannot be undone.")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    expect(row).to_be_visible()

    row.get_by_role("button", name="Delete docs/keep.md").click()
    page.get_by_role("alertdialog", name="Delete this file?").get_by_role("button", name="Delete").click()
    expect(row).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert session.exec(select(BotFile).where(BotFile.bot_id == bot_id)).all() == []


def test_escape_closes_the_disable_user_confirmation(admin_page) -> None:
    """Escape is a Cancel: the dialog goes (it stayed on screen before), the user stays enabled,
    and the next confirmation opens as usual."""
    page = admin_page
    account = create_ui_user(unique("staying"), Role.TESTER)
    dialog = user_action(page, account.username, "Disable")
    row = user_row(page, account.username)
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(row).not_to_contain_text("Disabled")
    with session_scope(readonly=True) as session:
        assert session.get(AppUser, account.id).disabled is False
    row.get_by_role("button", name="More actions").click()  # the page is usable again, the next dialog opens
    page.get_by_role("menuitem", name="Delete").click()
    expect(page.get_by_role("alertdialog", name="Delete user?")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("alertdialog")).to_have_count(0)
    with session_scope(readonly=True) as session:
        assert session.get(AppUser, account.id) is not None


def test_escape_closes_the_reset_conversation_confirmation(admin_page) -> None:
    """Escape is a Cancel in Test Chat too: the dialog goes, the conversation stays, and Reset
    still resets when asked again."""
    page = admin_page
    bot_id = add_bot(unique("Chatty"))
    with session_scope() as session:
        admin_id = users.get_user("ui-admin", session=session).id or 0
        conversation_id = tester_chat.open_session(bot_id, admin_id, session=session).id or 0
        message = tester_chat.submit(conversation_id, "Keep this", session=session, author_name="ui-admin")
        message.status = "done"
        session.add(Message(conversation_id=conversation_id, role="assistant", content="Kept answer"))
    page.goto(f"/bots/{bot_id}/chat")
    expect(page.get_by_test_id("bot-answer")).to_contain_text("Kept answer", timeout=PAGE_TIMEOUT_MS)
    page.get_by_role("button", name="Reset conversation").click()
    dialog = page.get_by_role("alertdialog", name="Reset this conversation?")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(page.get_by_test_id("user-message")).to_have_text(["Keep this"])
    with session_scope(readonly=True) as session:
        kept = tester_chat.recent_messages(conversation_id, session=session)
        assert [m.content for m in kept] == ["Keep this", "Kept answer"]
    page.get_by_role("button", name="Reset conversation").click()  # opens again, and Reset still resets
    page.get_by_role("alertdialog", name="Reset this conversation?").get_by_role("button", name="Reset").click()
    expect(page.get_by_test_id("user-message")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
