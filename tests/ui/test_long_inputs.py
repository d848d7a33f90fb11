"""Long inputs are not taken silently (issue 30 item 8): the personality and a user's directives count
their tokens against the context of the model that reads them, with a warning past a quarter of it; a
long note, message or memory shows its first lines with "Show more".

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging
import re

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.services import conversations, discord_users, llm_settings, user_notes
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, unique

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LONG_PERSONALITY = "Be brief. " * 1000  # 10,000 characters, about 3,000 tokens
USER = "424242424242"


def _bot_with_a_small_model(**fields: object) -> int:
    """A bot whose output model has the demo model's 4,096-token context."""
    bot_id = add_bot(unique("Wordy"), **fields)
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="output", bot_id=bot_id, provider="ollama", model="smol",
                             context_window="4096")
    return bot_id


def test_the_personality_counts_its_tokens_against_the_models_context(admin_page) -> None:
    page = admin_page
    bot_id = _bot_with_a_small_model()
    page.goto(f"/bots/{bot_id}/settings")
    personality = page.get_by_role("textbox", name="Personality")
    expect(personality).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    meter = page.get_by_test_id("personality-tokens")
    expect(meter).to_have_text(re.compile(r"^About \d+ tokens of the 4,096-token context of the output model \(smol\)\.$"))
    expect(meter).to_have_attribute("data-level", "")

    personality.fill(LONG_PERSONALITY)
    expect(meter).to_contain_text("About 3,000 tokens of the 4,096-token context of the output model (smol) (73%)")
    expect(meter).to_contain_text("little is left for the conversation")
    expect(meter).to_have_attribute("data-level", "warn")
    personality.fill(LONG_PERSONALITY * 2)
    expect(meter).to_contain_text("longer than the whole context")
    expect(meter).to_have_attribute("data-level", "over")
    page.get_by_role("button", name="Discard").click()
    expect(meter).to_have_attribute("data-level", "")


def test_directives_count_their_tokens_too(admin_page) -> None:
    page = admin_page
    bot_id = _bot_with_a_small_model()
    page.goto(f"/bots/{bot_id}/knowledge?user={USER}")
    directives = page.get_by_role("textbox", name="Directives")
    expect(directives).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    meter = page.get_by_test_id("directives-tokens")
    expect(meter).to_have_text("About 0 tokens of the 4,096-token context of the output model (smol).")
    directives.fill("Answer in French. " * 400)
    expect(meter).to_have_attribute("data-level", "warn")


def test_long_entries_show_their_first_lines_and_more_on_demand(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Longnote"))
    note = ("The user keeps a very detailed diary of every trip they take across the country. " * 12)[:999]
    message = "A very long message from Discord. " * 300  # 10,200 characters
    with session_scope() as session:
        discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id=USER, directives="",
                                     display_name="Grace Hopper")
        user_notes.add_note(session=session, bot_id=bot_id, discord_user_id=USER, note=note, reliability=0.9,
                            source="admin")
        conv = conversations.get_or_create_conversation(session=session, bot_id=bot_id, key="guild:901",
                                                        title="#general", guild_id="1", channel_id="901")
        conversations.insert_user_message(session=session, conversation_id=conv.id, content=message,
                                          author_id=USER, author_name="Grace Hopper")

    page.goto(f"/bots/{bot_id}/knowledge?user={USER}")
    shown = page.locator("[data-note-text]").first
    expect(shown).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    clamped = shown.bounding_box()["height"]
    assert clamped <= 6 * 24, f"the note is {clamped:.0f} px high: not cut to its first lines"
    toggle = page.get_by_test_id("show-more").first
    expect(toggle.locator(".grobot-more")).to_be_visible()
    expect(toggle.locator(".grobot-less")).to_be_hidden()
    toggle.click()
    expect(toggle.locator(".grobot-less")).to_be_visible()
    expect(toggle.locator(".grobot-more")).to_be_hidden()
    assert shown.bounding_box()["height"] > clamped * 1.3, "Show more did not open the note"

    page.goto(f"/bots/{bot_id}/conversations")
    page.get_by_text("#general").first.click()
    expect(page.get_by_test_id("show-more").locator(".grobot-more")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    text = page.locator(".grobot-clamped").first
    assert text.bounding_box()["height"] <= 6 * 24
