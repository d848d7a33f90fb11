"""Finding one's way (real browser, real web app): an unknown address shows the page frame, says
the page does not exist and links back to the bot list.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging

import pytest
from playwright.sync_api import expect

from tests.ui.auth import PAGE_TIMEOUT_MS, home_url_pattern, login_url_pattern
from tests.ui.chat import add_bot, unique
from tests.ui.screens import WIDE, sized_page, wait_for_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]



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
            expect(page.locator(f'[data-bot-id="{bot_id}"]').first).to_be_visible()
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
