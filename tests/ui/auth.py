"""Accounts of the web app for the browser tests, and signing in (through the login form once per
account, then with the session cookie it got)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import Role
from grobot.core.services import users
from grobot.web_session import SESSION_COOKIE

logger = logging.getLogger(__name__)

PAGE_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class UiUser:
    id: int
    username: str
    password: str
    role: str


def create_ui_user(username: str, role: Role, password: str | None = None) -> UiUser:
    """A new account in the web app's database (the name must be new)."""
    password = password or users.generate_password()
    with session_scope() as session:
        user = users.create_user(session=session, username=username, password=password, role=role.value)
        return UiUser(id=user.id or 0, username=username, password=password, role=role.value)


def login_url_pattern() -> re.Pattern[str]:
    return re.compile(r".*/login/?(\?.*)?$")


def home_url_pattern() -> re.Pattern[str]:
    return re.compile(r"^https?://[^/]+/?$")


def fill_login(page, username: str, password: str) -> None:
    """Type into the login form and submit it (the page must be the login page)."""
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


# The session cookie of each account's first sign-in (by username and password), for the next ones.
_SESSION_COOKIES: dict[tuple[str, str], list[Any]] = {}


def sign_in(page, user: UiUser, *, through_form: bool = False) -> None:
    """Sign in and wait for the Bots page: through the login form the first time an account signs
    in (or when ``through_form``), then with the session cookie that sign-in got, as a browser
    that comes back (signing in once per account keeps the browser tests fast)."""
    key = (user.username, user.password)
    if not through_form and key in _SESSION_COOKIES:
        page.context.add_cookies(_SESSION_COOKIES[key])
        page.goto("/")
        bots = page.get_by_role("heading", name="Bots", exact=True)
        expect(bots.or_(page.get_by_role("heading", name="Sign in"))).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        if bots.is_visible():
            return
        del _SESSION_COOKIES[key]  # the session ended (signed out elsewhere, a new password): sign in again
        page.context.clear_cookies()
    page.goto("/login")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    fill_login(page, user.username, user.password)
    expect(page).to_have_url(home_url_pattern(), timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_role("heading", name="Bots", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    _SESSION_COOKIES[key] = [c for c in page.context.cookies() if c["name"] == SESSION_COOKIE]


def with_session(page, user: UiUser) -> None:
    """Give the page's browser ``user``'s session without loading a page (the test opens the page it looks
    at): the cookie of the account's first sign-in while the server still honours it (not signed out, the
    password unchanged, the account enabled), else a sign-in through the form, which ends on the Bots page."""
    key = (user.username, user.password)
    cookies = _SESSION_COOKIES.get(key)
    if cookies and _honoured(cookies):
        page.context.add_cookies(cookies)
        return
    _SESSION_COOKIES.pop(key, None)
    sign_in(page, user, through_form=True)


def _honoured(cookies: list[Any]) -> bool:
    with session_scope(readonly=True) as session:
        return all(users.user_for_session(cookie["value"], session=session) is not None for cookie in cookies)
