"""The page shell in a real browser: the menu of narrow screens, the resizable sidebar, the
theme control, what the sidebar highlights, clickable switch labels and coming back to the
page that asked for a sign-in.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging
import re

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import Bot, Role
from grobot.core.services import users
from tests.helpers import wait_for
from tests.ui.auth import PAGE_TIMEOUT_MS, create_ui_user, fill_login, login_url_pattern
from tests.ui.chat import add_bot, unique
from tests.ui.screens import NARROW, WIDE, sized_page, wait_for_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

LIVE_TIMEOUT_MS = 15_000
GLOBAL_PAGES = (("MCP servers", "MCP servers"), ("Usage", "Usage"), ("Users", "Users"), ("Settings", "Settings"),
                ("Bots", "Bots"))
WIDTH_KEY = "grobot.sidebarWidth"


def open_menu(page):
    page.get_by_role("button", name="Open the menu").click()
    drawer = page.get_by_role("dialog", name="Menu")
    expect(drawer).to_be_visible()
    return drawer


def test_a_narrow_screen_reaches_every_page_through_the_menu(browser, web_app, ui_admin) -> None:
    name = unique("Menu")
    bot_id = add_bot(name)
    with sized_page(browser, web_app.url, NARROW, ui_admin) as page:
        expect(page.get_by_role("navigation", name="Main navigation")).to_be_hidden()
        for link, heading in GLOBAL_PAGES:
            drawer = open_menu(page)
            drawer.get_by_role("link", name=link, exact=True).click()
            wait_for_page(page, heading)
            expect(drawer).to_be_hidden()  # choosing a page closes the menu
        drawer = open_menu(page)
        drawer.locator(f'[data-bot-id="{bot_id}"]').click()
        expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/chat$"), timeout=PAGE_TIMEOUT_MS)
        wait_for_page(page, name)
        expect(page.get_by_role("dialog", name="Menu")).to_be_hidden()
        # Escape closes it too, and nothing was logged as an error on the way.
        open_menu(page)
        page.keyboard.press("Escape")
        expect(page.get_by_role("dialog", name="Menu")).to_be_hidden()
        assert page.grobot_errors == []


def sidebar_width(page) -> float:
    return page.get_by_role("navigation", name="Main navigation").bounding_box()["width"]


def test_the_sidebar_is_resized_by_dragging_and_keeps_its_width(browser, web_app, ui_admin) -> None:
    with sized_page(browser, web_app.url, WIDE, ui_admin) as page:
        before = sidebar_width(page)
        handle = page.get_by_role("separator", name="Resize the sidebar")
        box = handle.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + 60, y, steps=4)
        page.mouse.move(x + 100, y, steps=4)
        page.mouse.up()
        wider = wait_for(lambda: (w := sidebar_width(page)) > before + 80 and w, message="the sidebar to widen")
        assert abs(wider - (before + 100)) <= 4, (before, wider)
        stored = page.evaluate(f"localStorage.getItem({WIDTH_KEY!r})")
        assert stored is not None and abs(int(stored) - wider) <= 1

        # Remembered: another page, and a reload, open with the same width.
        page.get_by_role("navigation", name="Main navigation").get_by_role("link", name="Usage", exact=True).click()
        wait_for_page(page, "Usage")
        assert abs(sidebar_width(page) - wider) <= 1
        page.reload()
        wait_for_page(page, "Usage")
        assert abs(sidebar_width(page) - wider) <= 1

        # The keyboard: arrows on the focused edge.
        handle = page.get_by_role("separator", name="Resize the sidebar")
        handle.focus()
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        wait_for(lambda: abs(sidebar_width(page) - (wider - 32)) <= 1, message="two steps narrower")
        # Double-click: back to the default.
        handle.dblclick()
        wait_for(lambda: abs(sidebar_width(page) - before) <= 1, message="the default width")
        assert page.evaluate(f"localStorage.getItem({WIDTH_KEY!r})") is None
        assert page.grobot_errors == []


def page_is_dark(page) -> bool:
    """What the user sees: the page's background is dark (and the theme root says so)."""
    return page.evaluate(
        """() => {
            const root = document.querySelector('.radix-themes');
            const rgb = getComputedStyle(document.querySelector('main')).backgroundColor.match(/\\d+/g).map(Number);
            const dark = (rgb[0] + rgb[1] + rgb[2]) / 3 < 100;
            return root.classList.contains('dark') && dark;
        }"""
    )


def expect_theme(page, *, dark: bool, chosen: str) -> None:
    wait_for(lambda: page_is_dark(page) == dark, timeout=10, message=f"a {'dark' if dark else 'light'} page")
    group = page.get_by_role("group", name="Theme")
    for label in ("Light theme", "Dark theme", "System theme"):
        expect(group.get_by_role("button", name=label)).to_have_attribute(
            "aria-pressed", "true" if label == chosen else "false")


def test_the_theme_control_chooses_light_dark_or_the_system_theme(browser, web_app, ui_admin) -> None:
    with sized_page(browser, web_app.url, WIDE, ui_admin, color_scheme="dark") as page:
        expect_theme(page, dark=True, chosen="System theme")  # the browser prefers dark
        group = page.get_by_role("group", name="Theme")
        group.get_by_role("button", name="Light theme").click()
        expect_theme(page, dark=False, chosen="Light theme")
        page.reload()
        wait_for_page(page, "Bots")
        expect_theme(page, dark=False, chosen="Light theme")  # remembered

        group.get_by_role("button", name="System theme").click()
        expect_theme(page, dark=True, chosen="System theme")
        page.emulate_media(color_scheme="light")  # the system changes its mind: the page follows
        expect_theme(page, dark=False, chosen="System theme")

        group.get_by_role("button", name="Dark theme").click()
        expect_theme(page, dark=True, chosen="Dark theme")
        page.goto("/usage")
        wait_for_page(page, "Usage")
        expect_theme(page, dark=True, chosen="Dark theme")
        assert page.grobot_errors == []


def test_the_sidebar_highlights_a_bot_only_on_its_pages(browser, web_app, ui_admin) -> None:
    bot_id = add_bot(unique("Lit"))
    with sized_page(browser, web_app.url, WIDE, ui_admin) as page:
        nav = page.get_by_role("navigation", name="Main navigation")
        page.goto(f"/bots/{bot_id}/chat")
        expect(nav.locator(f'[data-bot-id="{bot_id}"]')).to_have_attribute("aria-current", "page",
                                                                          timeout=PAGE_TIMEOUT_MS)
        for link, heading in GLOBAL_PAGES:
            nav.get_by_role("link", name=link, exact=True).click()
            wait_for_page(page, heading)
            current = nav.locator('[aria-current="page"]')
            expect(current).to_have_count(1)
            expect(current).to_have_text(link)  # the page itself, never the last bot


def test_clicking_a_switch_label_toggles_the_switch(browser, web_app, ui_admin) -> None:
    name = unique("Label")
    bot_id = add_bot(name, enabled=False)
    with sized_page(browser, web_app.url, WIDE, ui_admin) as page:
        page.goto(f"/bots/{bot_id}/logs")
        wait_for_page(page, name)
        switch = page.get_by_role("switch", name="Bot enabled")
        expect(switch).to_have_attribute("aria-checked", "false")
        page.get_by_text("Disabled", exact=True).click()
        expect(switch).to_have_attribute("aria-checked", "true", timeout=LIVE_TIMEOUT_MS)
        expect(page.get_by_text("Enabled", exact=True)).to_be_visible()
        wait_for(lambda: _enabled(bot_id), timeout=10, message="the bot enabled in the database")

        live = page.get_by_role("switch", name="Live tail")
        before = live.get_attribute("aria-checked")
        page.get_by_text("Live", exact=True).click()
        expect(live).not_to_have_attribute("aria-checked", before or "")


def _enabled(bot_id: int) -> bool:
    with session_scope(readonly=True) as session:
        return session.get(Bot, bot_id).enabled


def test_signing_in_goes_back_to_the_page_that_asked(browser, web_app, ui_admin) -> None:
    bot_id = add_bot(unique("Back"))
    with sized_page(browser, web_app.url, WIDE) as page:
        page.goto(f"/bots/{bot_id}/files")
        expect(page).to_have_url(login_url_pattern(), timeout=PAGE_TIMEOUT_MS)
        fill_login(page, ui_admin.username, ui_admin.password)
        expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/files$"), timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)

        page.goto("/usage?days=7")  # signed in: straight there
        wait_for_page(page, "Usage")
    with sized_page(browser, web_app.url, WIDE) as page:
        page.goto("/settings")
        expect(page).to_have_url(login_url_pattern(), timeout=PAGE_TIMEOUT_MS)
        fill_login(page, ui_admin.username, ui_admin.password)
        expect(page).to_have_url(re.compile(r"/settings/?$"), timeout=PAGE_TIMEOUT_MS)
        wait_for_page(page, "Settings")
    with sized_page(browser, web_app.url, WIDE) as page:  # never to another site
        page.goto("/login?next=//example.com/x")
        fill_login(page, ui_admin.username, ui_admin.password)
        expect(page).to_have_url(re.compile(r"^http://127\.0\.0\.1:\d+/$"), timeout=PAGE_TIMEOUT_MS)


def test_a_session_that_ends_on_a_page_signs_in_again_back_to_that_page(browser, web_app) -> None:
    user = create_ui_user(unique("expiring"), Role.ADMIN)
    with sized_page(browser, web_app.url, WIDE, user) as page:
        page.goto("/usage")
        wait_for_page(page, "Usage")
        with session_scope() as session:
            users.end_sessions(user.id, session=session)  # e.g. signed out in another browser
        # The sidebar's next refresh finds the session gone.
        expect(page).to_have_url(re.compile(r"/login/?\?next=%2Fusage(%2F)?$"), timeout=LIVE_TIMEOUT_MS)
        fill_login(page, user.username, user.password)
        expect(page).to_have_url(re.compile(r"/usage/?$"), timeout=PAGE_TIMEOUT_MS)
        wait_for_page(page, "Usage")
