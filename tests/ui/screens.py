"""Browser pages of a given size for the shell's tests: signed in, recording console errors."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import expect

from tests.ui.auth import PAGE_TIMEOUT_MS, UiUser, sign_in

logger = logging.getLogger(__name__)

WIDE = {"width": 1400, "height": 900}
NARROW = {"width": 420, "height": 900}
PHONE = {"width": 390, "height": 844}  # a common phone: the narrowest screen the pages are made for


@contextmanager
def sized_page(browser, base_url: str, viewport: dict[str, int], user: UiUser | None = None,
               **context_options: object) -> Iterator[object]:
    """A fresh browser context of ``viewport`` (signed in as ``user`` when given); its page's
    console errors and uncaught exceptions are in ``page.grobot_errors``."""
    context = browser.new_context(viewport=viewport, base_url=base_url, **context_options)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    page.grobot_errors = errors
    try:
        if user is not None:
            sign_in(page, user)
        yield page
    finally:
        context.close()


def horizontal_overflow(page) -> int:
    """By how many pixels the document is wider than the viewport (0 when it fits)."""
    return page.evaluate("() => Math.max(0, document.documentElement.scrollWidth - window.innerWidth)")


def widest_elements(page) -> list[str]:
    """What sticks out on the right (for the failure message)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('body *')]
            .filter(el => el.getBoundingClientRect().right > window.innerWidth + 1)
            .slice(0, 6)
            .map(el => `${el.tagName.toLowerCase()}.${[...el.classList].slice(0, 2).join('.')}`
                       + ` right=${Math.round(el.getBoundingClientRect().right)}`)"""
    )


def assert_fits_the_width(page, what: str) -> None:
    """Nothing on the page is wider than the window: no sideways scrolling."""
    extra = horizontal_overflow(page)
    assert extra == 0, f"{what}: {extra} px wider than the screen: {widest_elements(page)}"


def wait_for_page(page, heading: str) -> None:
    """The page's own heading is shown (its session check and on-load reads are done)."""
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)


def render_all(page) -> None:
    """Lay out and paint the cards the browser skips while they are off screen (``content-visibility``), so a
    full-page screenshot and the page's ``innerText`` hold all of it, as a user scrolling down sees it."""
    page.add_style_tag(content="* { content-visibility: visible !important; }")


def screenshot(page, name: str) -> None:
    """A full-page screenshot ``<name>-<width>.png`` into ``GROBOT_UI_SCREENSHOTS`` when it is set (to look at
    what a test shows, at each width it shows it)."""
    folder = os.environ.get("GROBOT_UI_SCREENSHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        render_all(page)
        page.screenshot(path=os.path.join(folder, f"{name}-{page.viewport_size['width']}.png"), full_page=True)
