"""Test Chat with no message yet, in a real browser: the page stays at its top (header and tabs in
view), on a phone as on a desktop. The message list scrolls the page only to show a message above
the message box (``test_chat_live.py`` checks that with a conversation)."""

from __future__ import annotations

import logging

import pytest
from playwright.sync_api import expect

from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, unique
from tests.ui.screens import PHONE, WIDE, sized_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# Resolves once the message list has been laid out and its size observers have run (the list's own,
# which may scroll the page, were created first and run first), or fails after 5 s.
LIST_LAID_OUT = """() => new Promise((resolve, reject) => {
    const list = document.querySelector('[data-testid="chat-history"]');
    const deadline = setTimeout(() => reject(new Error('the message list was never laid out')), 5000);
    const observer = new ResizeObserver(() => {
        observer.disconnect();
        requestAnimationFrame(() => { clearTimeout(deadline); resolve(true); });
    });
    observer.observe(list);
    for (const child of list.children) observer.observe(child);
})"""


@pytest.mark.parametrize("viewport", [PHONE, WIDE], ids=["phone", "wide"])
def test_an_empty_chat_leaves_the_page_at_its_top(browser, web_app, ui_admin, viewport) -> None:
    name = unique("Quiet")
    bot_id = add_bot(name)
    with sized_page(browser, web_app.url, viewport, ui_admin) as page:
        page.goto(f"/bots/{bot_id}/chat")
        expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        page.evaluate(LIST_LAID_OUT)
        scrolled = page.evaluate("window.scrollY")
        assert scrolled == 0, f"the empty chat scrolled the page down by {scrolled} px"
        expect(page.get_by_role("heading", name=name, exact=True)).to_be_in_viewport(ratio=1)
        expect(page.get_by_role("navigation", name="Bot sections")).to_be_in_viewport(ratio=1)
        expect(page.get_by_role("textbox", name="Message")).to_be_in_viewport()
        assert page.grobot_errors == []
