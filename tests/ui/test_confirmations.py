"""Destructive actions of the shell's pages ask first, in a dialog that names what goes
(real browser, real web app): deleting a user, disabling one, deleting a bot's file. Cancel
keeps everything.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import AppUser, BotFile, Role
from grobot.core.services import files
from tests.ui.auth import PAGE_TIMEOUT_MS, create_ui_user
from tests.ui.chat import add_bot, unique

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

LIVE_TIMEOUT_MS = 15_000


def user_row(page, username: str):
    return page.get_by_role("table").get_by_role("row").filter(has=page.get_by_text(username, exact=True))


def test_deleting_a_user_asks_first_naming_them(admin_page) -> None:
    page = admin_page
    account = create_ui_user(unique("leaving"), Role.TESTER)
    page.goto("/users")
    row = user_row(page, account.username)
    expect(row).to_be_visible(timeout=PAGE_TIMEOUT_MS)

    row.get_by_role("button", name="More actions").click()
    page.get_by_role("menuitem", name="Delete").click()
    dialog = page.get_by_role("alertdialog", name="Delete user?")
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
