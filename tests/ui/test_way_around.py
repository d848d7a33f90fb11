"""Finding one's way (real browser, real web app): an unknown address shows the page frame, says
the page does not exist and links back to the bot list; "Skip to content" is the first Tab
stop of every page and takes the keyboard past the sidebar to the page's content; the lists one
picks from (conversations, Discord users) are reached with Tab and opened with Enter.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.services import conversations, discord_users
from tests.ui.auth import PAGE_TIMEOUT_MS, home_url_pattern, login_url_pattern
from tests.ui.chat import add_bot, unique
from tests.ui.screens import PHONE, WIDE, sized_page, wait_for_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

FOCUSED = "() => document.activeElement && document.activeElement.closest('main') !== null"
FOCUS_DEADLINE = {"timeout": 5_000}
MAX_TAB_PRESSES = 80  # more Tab stops than any page has before its lists


def test_an_unknown_address_says_so_and_leads_back(browser, web_app, ui_admin) -> None:
    name = unique("Lost")
    bot_id = add_bot(name)
    with sized_page(browser, web_app.url, WIDE, ui_admin) as page:
        for path in (f"/bots/{bot_id}/nonexistent", "/bots/", "/no/such/page"):
            page.goto(path)
            wait_for_page(page, "Page not found")
            main = page.get_by_role("main")
            expect(main).to_contain_text("This page does not exist")
            expect(page.get_by_test_id("missing-path")).to_have_text(path)
            # The usual frame: the sidebar with the pages and the bots.
            navigation = page.get_by_role("navigation", name="Main navigation")
            expect(navigation.get_by_role("link", name="Settings", exact=True)).to_be_visible()
            expect(page.locator(f'[data-bot-id="{bot_id}"]').first).to_be_visible(timeout=PAGE_TIMEOUT_MS)  # (a backend round trip)
        main.get_by_role("link", name="All bots").click()
        expect(page).to_have_url(home_url_pattern(), timeout=PAGE_TIMEOUT_MS)
        wait_for_page(page, "Bots")

        page.goto("/bots/99999/chat")  # a bot that does not exist keeps its own message
        wait_for_page(page, "Bot not found")
        # The unknown addresses answer HTTP 404 (the browser logs it); nothing else went wrong.
        errors = [e for e in page.grobot_errors if "status of 404" not in e]
        assert errors == [], errors


def test_an_unknown_address_asks_to_sign_in_first(browser, web_app, ui_admin) -> None:
    with sized_page(browser, web_app.url, WIDE) as page:
        page.goto("/bots/1/nonexistent")
        expect(page).to_have_url(login_url_pattern(), timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        expect(page.get_by_text("Page not found")).to_have_count(0)


@pytest.mark.parametrize("viewport", [WIDE, PHONE], ids=["wide", "phone"])
def test_skip_to_content_is_the_first_tab_stop(browser, web_app, ui_admin, viewport) -> None:
    for _ in range(3):  # a sidebar with bots to skip
        add_bot(unique("Skip"))
    bot_id = add_bot(unique("Target"))
    with sized_page(browser, web_app.url, viewport, ui_admin) as page:
        page.goto(f"/bots/{bot_id}/settings")
        expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        skip = page.get_by_role("link", name="Skip to content")
        assert not _in_view(skip), "the skip link shows before it has the focus"

        page.keyboard.press("Tab")
        expect(skip).to_be_focused()
        assert _in_view(skip), "the focused skip link is out of sight"

        page.keyboard.press("Enter")
        page.wait_for_function(FOCUSED, **FOCUS_DEADLINE)  # the focus is in the main content
        assert not _in_view(skip)
        page.keyboard.press("Tab")  # and the next stop is the content's first control, not the sidebar
        page.wait_for_function(FOCUSED, **FOCUS_DEADLINE)
        assert page.evaluate("() => document.activeElement.closest('nav[aria-label=\"Main navigation\"]')") is None
        assert page.grobot_errors == [], page.grobot_errors


def _in_view(locator) -> bool:
    """Whether the element is within the window (a box that is on screen, not pushed off it)."""
    return locator.evaluate(
        """el => { const r = el.getBoundingClientRect();
                   return r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0
                          && r.top < window.innerHeight && r.left < window.innerWidth; }"""
    )


def _tab_to(page, selector: str) -> None:
    """Press Tab until the focus is on ``selector`` (fails when the keyboard never gets there)."""
    page.get_by_role("main").focus()
    for _ in range(MAX_TAB_PRESSES):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement !== null && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{MAX_TAB_PRESSES} presses of Tab never reached {selector}: a keyboard cannot open it")


def test_a_conversation_and_a_discord_user_open_with_the_keyboard(browser, web_app, ui_admin) -> None:
    """Conversations and Knowledge Base: the entries of their lists were clickable boxes the Tab key
    never reached, so an admin without a mouse could open no conversation and no user."""
    bot_id = add_bot(unique("Keyed"))
    with session_scope() as session:
        conv = conversations.get_or_create_conversation(session=session, bot_id=bot_id, key="guild:906",
                                                        title="#keyboard")
        conversations.insert_user_message(session=session, conversation_id=conv.id, content="Typed, not clicked",
                                          author_id="4343", author_name="Grace Hopper")
        discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id="4343",
                                     directives="Be brief.", display_name="Grace Hopper")
    with sized_page(browser, web_app.url, WIDE, ui_admin) as page:
        page.goto(f"/bots/{bot_id}/conversations")
        expect(page.locator("[data-conversation]")).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
        _tab_to(page, "[data-conversation]")
        page.keyboard.press("Enter")
        expect(page.get_by_test_id("conversation-line")).to_contain_text("Typed, not clicked", timeout=PAGE_TIMEOUT_MS)

        page.goto(f"/bots/{bot_id}/knowledge")
        expect(page.locator('[data-user="4343"]')).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        _tab_to(page, '[data-user="4343"]')
        page.keyboard.press("Enter")
        expect(page.get_by_role("textbox", name="Directives")).to_have_value("Be brief.", timeout=PAGE_TIMEOUT_MS)
        assert page.grobot_errors == [], page.grobot_errors
