"""Discord users by name, in a real browser (issue 14 item 7): the Knowledge Base names people from
their messages, keeps the open user in the address (a link survives a reload), updates live and fits
420 px; Memory names the users of its memories; a bot's Conversations tab lists its channels and
DMs, by user, with their messages."""

from __future__ import annotations

import logging
import re

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.services import conversations, memories, user_notes
from tests.ui.auth import PAGE_TIMEOUT_MS, sign_in
from tests.ui.chat import add_bot, unique
from tests.ui.test_memory_tab import memory_worker  # noqa: F401  (a fixture: the real memory service)

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LIVE_TIMEOUT_MS = 15_000
ALICE, BOB = "1574564006750846976", "1574564006750846977"


def _say(bot_id: int, key: str, title: str, author_id: str, author_name: str, text: str, answer: str = "") -> int:
    with session_scope() as session:
        conv = conversations.get_or_create_conversation(session=session, bot_id=bot_id, key=key, title=title)
        conversations.insert_user_message(session=session, conversation_id=conv.id, content=text,
                                          author_id=author_id, author_name=author_name)
        if answer:
            conversations.append_run_messages(session=session, conversation_id=conv.id, author_name="Knower",
                                              messages=[{"role": "assistant", "content": answer}])
        return conv.id or 0


def _note(bot_id: int, user_id: str, text: str) -> None:
    with session_scope() as session:
        user_notes.add_note(session=session, bot_id=bot_id, discord_user_id=user_id, note=text, reliability=0.7,
                            source="archivist")


def _width(page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def test_knowledge_base_names_users_links_to_them_and_updates_live(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Namer"))
    _say(bot_id, "guild:900", "#general", ALICE, "Alice Liddell", "hello there")
    _note(bot_id, ALICE, "Likes tea parties")
    page.goto(f"/bots/{bot_id}/knowledge")
    item = page.locator(f'[data-user="{ALICE}"]')
    expect(item).to_contain_text("Alice Liddell", timeout=PAGE_TIMEOUT_MS)
    item.click()
    expect(page.get_by_role("heading", level=2)).to_have_text("Alice Liddell", timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_text(f"Discord id {ALICE}")).to_be_visible()
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/knowledge\?user={ALICE}$"))

    page.reload()  # the link survives: the same user opens
    expect(page.get_by_role("heading", level=2)).to_have_text("Alice Liddell", timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_text("Likes tea parties")).to_be_visible()

    # What the bot learns meanwhile shows up without a reload: a new note, a new person.
    _note(bot_id, ALICE, "Is late for everything")
    _say(bot_id, "dm:901", "Bob", BOB, "Bob Builder", "can we fix it?")
    expect(page.get_by_text("Is late for everything")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect(page.locator(f'[data-user="{BOB}"]')).to_contain_text("Bob Builder", timeout=LIVE_TIMEOUT_MS)
    assert page.get_by_text(BOB, exact=True).count() == 0  # never the raw id instead of the name


def test_knowledge_base_and_conversations_fit_a_narrow_screen(browser, web_app, ui_admin) -> None:
    context = browser.new_context(viewport={"width": 420, "height": 900}, base_url=web_app.url)
    page = context.new_page()
    try:
        sign_in(page, ui_admin)
        bot_id = add_bot(unique("Narrow"))
        conv = _say(bot_id, "guild:902", "#a-rather-long-channel-name-for-a-narrow-screen", ALICE, "Alice Liddell",
                    "hi " + "x" * 120, "An answer with a long word: " + "y" * 120)
        _note(bot_id, ALICE, "A note long enough to wrap on a narrow screen: " + "tea " * 30)
        page.goto(f"/bots/{bot_id}/knowledge?user={ALICE}")
        expect(page.get_by_role("heading", level=2)).to_have_text("Alice Liddell", timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_role("button", name="Add note")).to_be_visible()
        assert _width(page) <= 420, f"the Knowledge Base is {_width(page)} px wide at 420 px"

        page.goto(f"/bots/{bot_id}/conversations?c={conv}")
        expect(page.get_by_test_id("conversation-line")).to_have_count(2, timeout=PAGE_TIMEOUT_MS)
        assert _width(page) <= 420, f"the Conversations tab is {_width(page)} px wide at 420 px"
    finally:
        context.close()


def test_memory_names_the_users_of_its_memories(admin_page, memory_worker) -> None:  # noqa: F811
    page = admin_page
    bot_id = add_bot(unique("Rememberer"))
    _say(bot_id, "guild:903", "#general", ALICE, "Alice Liddell", "I love green tea")
    with session_scope(readonly=True) as session:
        memories.add_memory(bot_id, "Alice loves green tea", session=session, user_id=ALICE)
    page.goto(f"/bots/{bot_id}/memory")
    item = page.locator("[data-memory]").first
    expect(item).to_contain_text("Alice loves green tea", timeout=PAGE_TIMEOUT_MS)
    expect(item).to_contain_text("Alice Liddell")
    assert ALICE not in item.inner_text()


def test_conversations_tab_lists_channels_and_dms_by_user_with_their_messages(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Talker"))
    general = _say(bot_id, "guild:904", "#general", ALICE, "Alice Liddell", "Who are you?", "I am the Talker.")
    _say(bot_id, "guild:904", "#general", BOB, "Bob Builder", "Can we fix it?", "Yes we can.")
    dm = _say(bot_id, "dm:905", "Bob Builder", BOB, "Bob Builder", "A secret question", "A secret answer")
    page.goto(f"/bots/{bot_id}/chat")
    page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Conversations").click()
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/conversations$"), timeout=PAGE_TIMEOUT_MS)
    rows = page.locator("[data-conversation]")
    expect(rows).to_have_count(2, timeout=PAGE_TIMEOUT_MS)
    expect(rows.first).to_contain_text("DM with Bob Builder")  # the most recent first
    expect(rows.nth(1)).to_contain_text("#general")
    expect(rows.nth(1)).to_contain_text("4 messages · 2 people")

    rows.nth(1).click()
    lines = page.get_by_test_id("conversation-line")
    expect(lines).to_have_count(4, timeout=LIVE_TIMEOUT_MS)
    expect(lines.first).to_contain_text("Alice Liddell")
    expect(lines.first).to_contain_text("Who are you?")
    expect(lines.nth(1)).to_contain_text("I am the Talker.")
    expect(page).to_have_url(re.compile(rf"/conversations\?c={general}$"))

    # By user: only the conversations Alice wrote in; the address keeps both.
    page.get_by_role("combobox", name="Conversations of").click()
    page.get_by_role("option", name="Alice Liddell").click()
    expect(rows).to_have_count(1, timeout=LIVE_TIMEOUT_MS)
    expect(page).to_have_url(re.compile(rf"/conversations\?user={ALICE}&c={general}$"))
    page.reload()
    expect(page.get_by_test_id("conversation-line")).to_have_count(4, timeout=PAGE_TIMEOUT_MS)
    expect(page.locator("[data-conversation]")).to_have_count(1)

    # A name leads to what the bot knows of that person.
    page.get_by_test_id("conversation-line").first.get_by_role("link", name="Alice Liddell").click()
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/knowledge\?user={ALICE}$"), timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_role("heading", level=2)).to_have_text("Alice Liddell", timeout=PAGE_TIMEOUT_MS)
    assert dm  # the DM stays listed for Bob


def test_a_conversation_of_one_message_says_1_message(admin_page) -> None:
    """The conversation list said "1 messages · 1 person"."""
    page = admin_page
    bot_id = add_bot(unique("Terse"))
    _say(bot_id, "guild:907", "#quiet", ALICE, "Alice Liddell", "Anyone here?")
    page.goto(f"/bots/{bot_id}/conversations")
    row = page.locator("[data-conversation]")
    expect(row).to_contain_text("1 message · 1 person · ", timeout=PAGE_TIMEOUT_MS)
    expect(row).not_to_contain_text("messages")
