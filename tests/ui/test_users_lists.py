"""The Users page with many bots and long bot names, in a real browser: what an admin sees."""

from __future__ import annotations

import logging
import uuid

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import Role
from grobot.core.services import bots, users
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.screens import PHONE, WIDE, assert_fits_the_width, sized_page, wait_for_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def make_tester(names: list[str]) -> str:
    """A tester who may test the bots called ``names`` (created here); returns the username."""
    username = f"tester-{uuid.uuid4().hex[:6]}"
    with session_scope() as session:
        ids = {bots.create_bot(session=session, name=name).id or 0 for name in names}
        account = users.create_user(session=session, username=username, password="p" * 12, role=Role.TESTER.value)
        users.set_granted_bots(account, ids, session=session)
    return username


def user_row(page, username: str):
    return page.get_by_role("table").get_by_role("row").filter(has=page.get_by_text(username, exact=True))


def test_a_tester_with_34_bots_shows_three_names_and_a_count(browser, web_app, ui_admin) -> None:
    prefix = f"Many{uuid.uuid4().hex[:4]}"
    username = make_tester([f"{prefix} bot {i:02d}" for i in range(34)])
    with sized_page(browser, web_app.url, WIDE, ui_admin) as page:
        page.goto("/users")
        wait_for_page(page, "Users")
        row = user_row(page, username)
        cell = row.get_by_role("cell").nth(3)  # Role, Status, Last sign-in, Bots
        expect(cell).to_have_text(f"{prefix} bot 00, {prefix} bot 01, {prefix} bot 02 and 31 more",
                                  timeout=PAGE_TIMEOUT_MS)
        height = row.bounding_box()["height"]
        assert height < 100, f"the row of a tester with 34 bots is {height:.0f} px tall"


def test_long_bot_names_wrap_in_the_access_dialog(browser, web_app, ui_admin) -> None:
    tail = uuid.uuid4().hex[:6]
    names = [f"support_bot_for_the_customer_service_team_{region}_{tail}" for region in ("eu_west_1", "us_east_2")]
    username = make_tester(names)
    with sized_page(browser, web_app.url, PHONE, ui_admin) as page:
        page.goto("/users")
        wait_for_page(page, "Users")
        user_row(page, username).get_by_role("button", name="Bots").click()
        dialog = page.get_by_role("dialog")
        expect(dialog.get_by_role("heading", name=f"Bots {username} may test")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        for name in names:
            label = dialog.get_by_text(name, exact=True)
            expect(dialog.get_by_role("checkbox", name=name)).to_be_checked()
            # The whole name, its distinguishing end included, is in view: no box between it and
            # the dialog cuts it or scrolls sideways.
            clipped = label.evaluate(
                """(el) => {
                    el.scrollIntoView({block: 'nearest'});
                    const r = el.getBoundingClientRect(), out = [];
                    for (let box = el.parentElement; box && box.getAttribute('role') !== 'dialog'; box = box.parentElement) {
                        const b = box.getBoundingClientRect();
                        if (box.scrollWidth > box.clientWidth + 1) out.push(`scrolls ${box.scrollWidth - box.clientWidth} px sideways`);
                        if (getComputedStyle(box).overflowX !== 'visible' && (r.right > b.right + 0.5 || r.left < b.left - 0.5))
                            out.push(`cut at ${Math.round(b.right)} px (name ends at ${Math.round(r.right)} px)`);
                    }
                    return out;
                }""")
            assert not clipped, f"{name}: {clipped}"
        assert_fits_the_width(page, "the access dialog")


def test_the_shown_once_password_closes_with_escape(admin_page) -> None:
    page = admin_page
    username = f"esc-{uuid.uuid4().hex[:6]}"
    page.goto("/users")
    wait_for_page(page, "Users")
    page.get_by_role("button", name="Add user").click()
    page.locator("#new-username").fill(username)
    page.get_by_role("dialog").get_by_role("button", name="Add user").click()
    shown = page.get_by_role("dialog").filter(has_text=f"Password of {username}")
    expect(shown.locator("#shown-once-password")).not_to_have_value("", timeout=PAGE_TIMEOUT_MS)
    # The dialog takes the focus once it listens for keys: the key a user presses goes to it.
    expect(shown.locator(":focus")).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
    page.keyboard.press("Escape")
    expect(shown).to_have_count(0, timeout=PAGE_TIMEOUT_MS)  # closing is a round trip to the backend
    # Closed for good: opening another dialog does not bring it back.
    page.get_by_role("button", name="Add user").click()
    expect(page.get_by_role("dialog").get_by_role("heading", name="Add a user")).to_be_visible()
    expect(page.get_by_role("dialog")).to_have_count(1)
