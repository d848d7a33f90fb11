"""Signing in to the web app, in a real browser against the real web app: the login page,
sessions that survive a reload, logging out, and what each role may see.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging
import re

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import AppUser, Role
from grobot.core.services import bots, users
from tests.ui.auth import (
    PAGE_TIMEOUT_MS,
    UiUser,
    create_ui_user,
    fill_login,
    home_url_pattern,
    login_url_pattern,
    sign_in,
)

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

LIVE_TIMEOUT_MS = 15_000  # the Bots page re-checks the session on every refresh (2 s)
SESSION_KEY = "grobot_session"


@pytest.fixture(scope="module")
def fleet(ui_env) -> dict[str, int]:
    """Three bots; the module's tester may see only Beta."""
    with session_scope() as session:
        for summary in bots.list_bots(session=session):
            bots.delete_bot(bots.get_bot(summary.id, session=session), session=session)
        return {name: bots.create_bot(session=session, name=name).id for name in ("Alpha", "Beta", "Gamma")}


@pytest.fixture(scope="module")
def admin(ui_env) -> UiUser:
    return create_ui_user("login-admin", Role.ADMIN)


@pytest.fixture(scope="module")
def tester(ui_env, fleet) -> UiUser:
    user = create_ui_user("login-tester", Role.TESTER)
    with session_scope() as session:
        users.grant_bot(session.get(AppUser, user.id), fleet["Beta"], session=session)
    return user


def expect_bots(page, names: list[str], timeout: float = PAGE_TIMEOUT_MS) -> None:
    """The table lists exactly these bots, in this order (a row header is the name, then "#id")."""
    headers = page.get_by_role("table").get_by_role("rowheader")
    expect(headers).to_have_text([re.compile(rf"^{re.escape(name)}#\d+$") for name in names], timeout=timeout)


def sidebar_user(page):
    return page.get_by_label("Signed-in user")


def stored_session(page) -> str | None:
    """The session cookie, which no script of the page can read (HttpOnly, SameSite=Strict)."""
    cookies = [c for c in page.context.cookies() if c["name"] == SESSION_KEY and c["value"]]
    if not cookies:
        return None
    assert cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict", cookies
    assert SESSION_KEY not in page.evaluate("() => document.cookie")
    assert page.evaluate(f"() => window.localStorage.getItem('{SESSION_KEY}')") is None
    return cookies[0]["value"]


def test_without_a_session_every_page_leads_to_the_login_page(page, ui_env) -> None:
    page.goto("/")
    expect(page).to_have_url(login_url_pattern(), timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page).to_have_title("Sign in · GroBot")
    expect(page.get_by_label("Username")).to_be_visible()
    expect(page.get_by_label("Password")).to_have_attribute("type", "password")
    expect(page.get_by_role("navigation", name="Main navigation")).to_have_count(0)

    # A forged or stale token in the browser's storage is no session either.
    page.context.add_cookies([{"name": SESSION_KEY, "value": "gAAAAABforged-token", "url": page.url}])
    page.goto("/")
    expect(page).to_have_url(login_url_pattern(), timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert not any("Alpha" in frame for frame in page.grobot_record.frames)


def test_a_wrong_password_or_unknown_user_shows_one_generic_error(page, admin, fleet) -> None:
    page.goto("/login")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    fill_login(page, admin.username, "not-the-password")
    alert = page.get_by_role("alert")
    expect(alert).to_have_text("Wrong username or password")
    expect(page).to_have_url(login_url_pattern())
    expect(page.get_by_label("Password")).to_have_value("")  # cleared for the next try
    expect(page.get_by_label("Username")).to_have_value(admin.username)

    fill_login(page, "nobody-here", "whatever-password")
    expect(alert).to_have_text("Wrong username or password")
    assert stored_session(page) in (None, "")


def test_repeated_failures_slow_this_browser_down_and_never_lock_the_account(page, ui_env) -> None:
    victim = create_ui_user("login-slowed", Role.TESTER)
    page.goto("/login")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    alert = page.get_by_role("alert")
    for _ in range(5):
        fill_login(page, victim.username, "guess-guess")
        expect(alert).to_have_text("Wrong username or password")
        expect(page.get_by_label("Password")).to_have_value("")
    fill_login(page, victim.username, "guess-guess")
    expect(alert).to_have_text("Wrong username or password. Too many failed attempts: wait 1 s before trying again.")
    # Slowed down, not locked out: once the wait is over (an attempt made sooner is refused), the right
    # password signs in.
    for _ in range(10):
        fill_login(page, victim.username, victim.password)
        try:
            expect(page).to_have_url(home_url_pattern(), timeout=3000)
            break
        except AssertionError:
            expect(alert).to_contain_text("Too many failed attempts: wait 1 s")
    expect(page).to_have_url(home_url_pattern())


def test_the_admin_signs_in_sees_every_bot_stays_signed_in_and_logs_out(page, admin, fleet) -> None:
    sign_in(page, admin, through_form=True)
    expect_bots(page, ["Alpha", "Beta", "Gamma"], timeout=PAGE_TIMEOUT_MS)
    expect(sidebar_user(page)).to_contain_text(admin.username)
    expect(sidebar_user(page).get_by_text("Admin", exact=True)).to_be_visible()

    # The state holds no password or hash; the browser keeps only the signed session token.
    token = stored_session(page)
    assert token and admin.password not in token
    frames = page.grobot_record.frames
    assert any("Alpha" in frame for frame in frames), "the state updates were not recorded"
    assert not any(admin.password in frame or "$argon2" in frame or "password_hash" in frame for frame in frames)

    # A reload, and a new tab, stay signed in.
    page.reload()
    expect(page).to_have_url(home_url_pattern())
    expect_bots(page, ["Alpha", "Beta", "Gamma"], timeout=PAGE_TIMEOUT_MS)
    second = page.context.new_page()
    second.goto("/")
    expect_bots(second, ["Alpha", "Beta", "Gamma"])
    second.close()

    # An open login page sends a signed-in user on to the app.
    page.goto("/login")
    expect(page).to_have_url(home_url_pattern(), timeout=PAGE_TIMEOUT_MS)

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(login_url_pattern(), timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert stored_session(page) in (None, "")
    page.goto("/")
    expect(page).to_have_url(login_url_pattern(), timeout=PAGE_TIMEOUT_MS)


def test_a_tester_sees_only_the_bots_granted_to_them(page, tester, fleet) -> None:
    sign_in(page, tester, through_form=True)
    expect_bots(page, ["Beta"], timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_text("1 bot · 0 online")).to_be_visible()
    expect(sidebar_user(page)).to_contain_text(tester.username)
    expect(sidebar_user(page).get_by_text("Tester", exact=True)).to_be_visible()
    # The other bots never reach this browser, not even in a state update.
    assert not any("Alpha" in frame or "Gamma" in frame for frame in page.grobot_record.frames)

    # A bot granted while the page is open appears with the next refresh.
    with session_scope() as session:
        users.grant_bot(session.get(AppUser, tester.id), fleet["Gamma"], session=session)
    expect_bots(page, ["Beta", "Gamma"], timeout=LIVE_TIMEOUT_MS)


def test_disabling_a_user_ends_their_open_session(page, ui_env, fleet) -> None:
    user = create_ui_user("login-disabled", Role.ADMIN)
    sign_in(page, user, through_form=True)
    expect_bots(page, ["Alpha", "Beta", "Gamma"])
    with session_scope() as session:
        session.get(AppUser, user.id).disabled = True
    # The server checks the session on every refresh, not just when the page opens.
    expect(page).to_have_url(login_url_pattern(), timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert stored_session(page) in (None, "")
