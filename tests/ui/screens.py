"""Browser pages of a given size for the shell's tests: signed in, recording console errors."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import expect

from tests.ui.auth import PAGE_TIMEOUT_MS, UiUser, sign_in

logger = logging.getLogger(__name__)

WIDE = {"width": 1400, "height": 900}
NARROW = {"width": 420, "height": 900}


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


def wait_for_page(page, heading: str) -> None:
    """The page's own heading is shown (its session check and on-load reads are done)."""
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
