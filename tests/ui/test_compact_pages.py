"""A bot's pages leave the screen to their content (issue 30 item 5): the header is one line on a desktop
and the tabs one row that scrolls sideways on a phone (it was 280 px, and 490 px in three rows at 420 px),
the Settings save bar is there only while something is unsaved, and the Test Chat fills the window with
one scrollbar, its conversation's (the page scrolled too).

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import BotStatus, Message
from grobot.core.services import tester_chat, users
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, unique
from tests.ui.screens import NARROW, WIDE, sized_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

GEOMETRY_JS = """() => {
    const box = (el) => el ? el.getBoundingClientRect() : null;
    const nav = document.querySelector('nav[aria-label="Bot sections"]');
    const centre = (el) => { const b = box(el); return b ? b.top + b.height / 2 : null; };
    return {
        header: box(document.querySelector('[data-testid="page-header"]')),
        nav: box(nav),
        navScrolls: nav ? nav.scrollWidth > nav.clientWidth + 1 : false,
        openTabShown: (() => {
            const tab = nav && nav.querySelector('a[aria-current="page"]');
            if (!tab) return false;
            const t = box(tab), n = box(nav);
            return t.left >= n.left - 1 && t.right <= n.right + 1;
        })(),
        name: centre(document.querySelector('main h1')),
        status: centre(document.querySelector('[data-testid="bot-status"]')),
        switch: centre(document.querySelector('button[aria-label="Bot enabled"]')),
    };
}"""


def _bot_with_a_status() -> tuple[int, str]:
    name = unique("Compact")
    bot_id = add_bot(name)
    with session_scope() as session:
        status = session.get(BotStatus, bot_id)
        status.state, status.detail = "error", "the bot stopped with an error after a long and winding explanation"
        status.discord_user_name = "compact-bot"
        session.add(status)
    return bot_id, name


@pytest.mark.parametrize("size", ["wide", "narrow"])
def test_the_bot_header_is_one_line_and_the_tabs_one_row(browser, web_app, ui_admin, size) -> None:
    viewport = WIDE if size == "wide" else NARROW
    bot_id, name = _bot_with_a_status()
    with sized_page(browser, web_app.url, viewport, ui_admin) as page:
        page.goto(f"/bots/{bot_id}/knowledge")  # a tab at the right of the bar
        expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_test_id("bot-status")).to_be_visible()
        shape = page.evaluate(GEOMETRY_JS)
        assert shape["nav"]["height"] <= 48, f"the tabs take {shape['nav']['height']:.0f} px: more than one row"
        if size == "wide":
            assert shape["header"]["height"] <= 64, f"the header is {shape['header']['height']:.0f} px high"
            assert abs(shape["name"] - shape["status"]) <= 8 and abs(shape["name"] - shape["switch"]) <= 8, \
                f"name, status and switch are not on one line: {shape}"
            assert not shape["navScrolls"], "every tab fits on a desktop"
            assert shape["nav"]["bottom"] <= 150, f"the tab's content starts {shape['nav']['bottom']:.0f} px down"
        else:
            assert shape["navScrolls"], "the tabs scroll sideways on a phone"
            assert shape["openTabShown"], "the open tab is scrolled into the bar's view"
            assert shape["nav"]["bottom"] <= 220, (
                f"header and tabs take {shape['nav']['bottom']:.0f} px of the {viewport['height']} px screen")
        assert page.grobot_errors == [], page.grobot_errors


def test_the_save_bar_is_there_only_while_something_is_unsaved(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Barless"))
    page.goto(f"/bots/{bot_id}/settings")
    keywords = page.get_by_role("textbox", name="Keywords")
    expect(keywords).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    bar = page.get_by_test_id("save-bar")
    expect(bar).to_have_count(0)
    keywords.fill("books")
    expect(bar).to_be_visible()
    expect(bar).to_contain_text("Unsaved changes")
    bar.get_by_role("button", name="Discard").click()
    expect(bar).to_have_count(0)
    expect(keywords).to_have_value("")
    keywords.fill("library")
    bar.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("Settings saved")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(bar).to_have_count(0)


CHAT_SHAPE_JS = """() => {
    const history = document.querySelector('[data-testid="chat-history"]');
    const card = document.querySelector('[data-testid="chat-card"]').getBoundingClientRect();
    const composer = document.querySelector('[data-testid="composer"]').getBoundingClientRect();
    const scrolls = [...document.querySelectorAll('main, main *')].filter((el) => {
        const style = getComputedStyle(el);
        return /(auto|scroll)/.test(style.overflowY) && el.scrollHeight > el.clientHeight + 1;
    }).map((el) => el.getAttribute('data-testid') || el.tagName.toLowerCase());
    return {
        page: document.scrollingElement.scrollHeight - window.innerHeight,
        historyScrolls: history.scrollHeight > history.clientHeight + 1,
        scrolls,
        cardBottom: card.bottom,
        composerBottom: composer.bottom,
        window: window.innerHeight,
    };
}"""


@pytest.mark.parametrize("size", ["wide", "narrow"])
def test_the_test_chat_fills_the_window_with_one_scrollbar(browser, web_app, ui_admin, size) -> None:
    viewport = WIDE if size == "wide" else NARROW
    bot_id = add_bot(unique("Tall"))
    with session_scope() as session:  # a long conversation already
        admin_id = users.get_user(ui_admin.username, session=session).id or 0
        conv = tester_chat.open_session(bot_id, admin_id, session=session)
        for i in range(20):
            msg = tester_chat.submit(conv.id or 0, f"question {i}", session=session, author_name=ui_admin.username)
            msg.status = "done"
            session.add(Message(conversation_id=conv.id, role="assistant", content=f"answer {i} " * 15))
    with sized_page(browser, web_app.url, viewport, ui_admin) as page:
        page.goto(f"/bots/{bot_id}/chat")
        expect(page.get_by_test_id("bot-answer").last).to_contain_text("answer 19", timeout=PAGE_TIMEOUT_MS)
        shape = page.evaluate(CHAT_SHAPE_JS)
        assert shape["page"] <= 1, f"the page itself scrolls by {shape['page']} px besides the conversation"
        assert shape["historyScrolls"] and shape["scrolls"] == ["chat-history"], shape["scrolls"]
        assert shape["composerBottom"] <= shape["window"], "the message box is below the window"
        assert shape["cardBottom"] >= shape["window"] - 40, f"the chat does not fill the window: {shape}"
        expect(page.get_by_role("textbox", name="Message")).to_be_in_viewport()
        assert page.grobot_errors == [], page.grobot_errors
