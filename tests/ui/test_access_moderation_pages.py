"""Who may use a bot and its moderation on the bot's Settings tab, in a real browser: users and roles
added by the names the bot has seen (its Knowledge Base's users, the roles it saw on Discord) and shown
by name, a pattern that cannot be used refused at its field in plain words, and what was saved is what
the reply rules and the moderation read at the next message.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import Bot
from grobot.core.services import discord_roles, discord_users
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, unique
from tests.ui.screens import NARROW, WIDE, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ALICE, BOB = "111111111111111111", "222222222222222222"
MODERATORS, MUTED = "333333333333333333", "444444444444444444"


def _stored(bot_id: int) -> Bot:
    with session_scope(readonly=True) as session:
        bot = session.get(Bot, bot_id)
        assert bot is not None
        session.expunge(bot)
        return bot


def _add_from(page, label: str, choice: str) -> None:
    """Pick ``choice`` in the "Add a ..." list of the access list ``label``."""
    page.get_by_role("combobox", name=f"Add to {label.lower()}").click()
    page.get_by_role("option", name=choice, exact=True).click()


def test_access_lists_by_name_and_moderation_on_the_settings_tab(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Doorman"))
    with session_scope() as session:  # what the bot has seen: two users, two roles of its server
        discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id=ALICE, directives="",
                                     display_name="alice")
        discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id=BOB, directives="",
                                     display_name="bob")
        discord_roles.save_roles(bot_id, "555555555555555555", "Test Guild",
                                 [(MODERATORS, "Moderators", 2), (MUTED, "Muted", 1)], session=session)
    page.goto(f"/bots/{bot_id}/settings")
    section = page.get_by_test_id("section-who-may-use-the-bot")
    expect(section).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(section).to_contain_text("Everyone who is not blocked.")

    _add_from(page, "Blocked users", "bob")
    _add_from(page, "Allowed roles", "Moderators")
    _add_from(page, "Blocked roles", "Muted")
    expect(page.get_by_test_id("blocked_user_ids-chip")).to_have_text("bob")
    expect(page.get_by_role("textbox", name="Blocked users (ids)")).to_have_value(BOB)
    # One not seen yet is typed by id, and shown by it.
    page.get_by_role("textbox", name="Allowed users (ids)").fill(f"{ALICE}, 666666666666666666")
    expect(page.get_by_test_id("allowed_user_ids-chip")).to_have_text(["alice", "666666666666666666"])

    # A pattern RE2 cannot use is refused at its field, in plain words, and nothing is saved.
    page.get_by_role("textbox", name="Blocked words").fill("spam\nbad word")
    page.get_by_role("textbox", name="Blocked patterns").fill("b[a4]d(\nfree\\s+money")
    page.get_by_role("button", name="Save changes").click()
    error = page.locator("[data-field-error=moderation_patterns]")
    expect(error).to_have_text("pattern 1 (b[a4]d() cannot be used: a parenthesis is not closed",
                               timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_test_id("settings-error")).to_contain_text("Blocked patterns")
    assert _stored(bot_id).blocked_user_ids == []
    screenshot(page, "settings-access-error")

    page.get_by_role("textbox", name="Blocked patterns").fill("b[a4]d\\(\nfree\\s+money")
    page.get_by_role("combobox", name="When something matches").click()
    page.get_by_role("option", name="Ignore it (no answer)").click()
    page.get_by_role("switch", name="Ask the decision model").click()
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("All changes saved")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    bot = _stored(bot_id)
    assert (bot.allowed_user_ids, bot.blocked_user_ids) == ([ALICE, "666666666666666666"], [BOB])
    assert (bot.allowed_role_ids, bot.blocked_role_ids) == ([MODERATORS], [MUTED])
    assert bot.moderation_words == ["spam", "bad word"] and bot.moderation_patterns == ["b[a4]d\\(", "free\\s+money"]
    assert (bot.moderation_action, bot.moderation_ask_model) == ("ignore", True)

    # After a reload the lists show names; a chip's button takes one off (saved with the bar).
    page.reload()
    expect(page.get_by_test_id("blocked_role_ids-chip")).to_have_text("Muted", timeout=PAGE_TIMEOUT_MS)
    for size in (WIDE, NARROW):
        page.set_viewport_size(size)
        screenshot(page, "settings-access")
    page.set_viewport_size(WIDE)
    page.get_by_role("button", name="Remove bob").click()
    expect(page.get_by_test_id("section-who-may-use-the-bot")).to_contain_text("Nobody.")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("All changes saved")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    assert _stored(bot_id).blocked_user_ids == []
