"""The root state of the web app: who is signed in, and the server-side role checks.

Every page state derives from :class:`AppState`, so what all pages share (the signed-in
user and their role) lives here. This module imports nothing else of the app (only
``grobot.core`` and ``grobot.web_session``). Every state var reaches the browser: never put
a secret in one. The state keeps only the user's id, name and role; the signed session
token lives in an ``HttpOnly`` cookie no script of the page can read (``grobot.web_session``)
and is read on the server from the websocket's handshake; every event handler that reads or writes data checks that token and the
role again on the server with :func:`run_authorized` (``grobot.core.services.users``
decides), so nothing the browser sends can widen what a user may do.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlencode, urlsplit

import reflex as rx
from reflex.event import EventSpec
from sqlmodel import Session

from grobot.core.db import session_scope
from grobot.core.errors import PermissionDenied
from grobot.core.models import AppUser, Role
from grobot.core.services import users
from grobot.core.services.users import NotSignedIn
from grobot.web_session import SESSION_COOKIE, claim_tab, clear_session_script, session_from_cookie_header

logger = logging.getLogger(__name__)

T = TypeVar("T")

LOGIN_ROUTE = "/login"
HOME_ROUTE = "/"
NEXT_PARAM = "next"  # the login page's query parameter: the page that asked for a sign-in
SESSION_STORAGE_NAME = SESSION_COOKIE  # the cookie's name (and where older versions kept it in localStorage)
ALL_ROLES: tuple[Role, ...] = tuple(Role)
ADMIN_PAGE_REFUSED = "That page is for administrators only: here are the bots you may test."
SIGN_OUT_HINT = "Ends your sessions on every device"


def run_authorized(
    token: str, work: Callable[[Session, AppUser], T], *roles: Role, readonly: bool = True
) -> T:
    """Check the session ``token`` and the role (any role when none given), then ``work(session, user)``.

    Blocking (run it with ``asyncio.to_thread``). Raises :class:`NotSignedIn` without a valid
    session, ``PermissionDenied`` when the user's role is not among ``roles``.
    """
    with session_scope(readonly=readonly) as session:
        user = users.authorize(token, *(roles or ALL_ROLES), session=session)
        return work(session, user)


def sign_in(username: str, password: str, client: str) -> tuple[users.SignedInUser, str]:
    """Blocking (argon2): the user and a new session token, or ``users.LoginRefused`` (``client``:
    the address the login comes from, which the login throttle counts)."""
    with session_scope() as session:  # a write: it records the time of the login
        return users.login(session=session, username=username, password=password, client=client)


def current_user(token: str, *roles: Role) -> users.SignedInUser:
    """Who the session ``token`` belongs to (blocking; raises as :func:`run_authorized`)."""
    return run_authorized(token, lambda _session, user: users.signed_in(user), *roles)


def _end_sessions(user_id: int) -> None:
    with session_scope() as session:
        users.end_sessions(user_id, session=session)


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path of this app (never another site), else home."""
    target = (target or "").strip()
    if (not target.startswith("/") or target.startswith("//") or "\\" in target or any(c < " " for c in target)
            or urlsplit(target).path.rstrip("/") == LOGIN_ROUTE):
        return HOME_ROUTE
    return target


def login_route(back_to: str = "") -> str:
    """The login page, told to come back to ``back_to`` (a path of the app) after signing in."""
    target = safe_next(back_to)
    return LOGIN_ROUTE if target == HOME_ROUTE else f"{LOGIN_ROUTE}?{urlencode({NEXT_PARAM: target})}"


def sign_out_script(back_to: str = "") -> EventSpec:
    """Forget the session in the browser and start over on the login page with a fresh state
    (which comes back to ``back_to`` after signing in again).

    The session cookie is cleared by the server (a script cannot touch an ``HttpOnly``
    cookie); dropping the tab's Reflex state token (sessionStorage ``token``) makes the next
    page load start from an empty server state, so nothing a previous user saw lingers there.
    """
    return rx.call_script(clear_session_script(login_route(back_to)))


class AppState(rx.State):
    """State shared by every page (the base of every page's substate)."""

    # Shown in the page; the server never trusts these for a permission decision.
    user_id: int = 0
    username: str = ""
    role: str = ""

    @property
    def session_token(self) -> str:
        """The signed session token (``grobot.core.security.sign_session``) of the ``HttpOnly``
        cookie this tab's websocket was opened with; never trusted without verification."""
        return session_from_cookie_header(self.router.headers.cookie)

    @rx.var
    def signed_in(self) -> bool:
        return self.user_id > 0

    @rx.var
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN.value

    def _show_user(self, user: users.SignedInUser | None) -> None:
        if user is not None:  # this tab's state now holds what the user sees: it is theirs alone
            claim_tab(self.router.session.client_token, user.id)
        self.user_id = user.id if user else 0
        self.username = user.username if user else ""
        self.role = user.role if user else ""

    def _current_path(self) -> str:
        """The path (with its query) of the page this event came from."""
        url = self.router.url
        return f"{url.path}?{url.query}" if url.query else url.path

    def _forget_session(self) -> None:
        """Show nobody signed in (the cookie goes with :func:`sign_out_script`)."""
        self._show_user(None)

    async def _check_session(self, *roles: Role):
        """On-load check of a page open to ``roles``: who is signed in, or where to go instead."""
        token = self.session_token
        try:
            user = await asyncio.to_thread(current_user, token, *roles)
        except NotSignedIn:
            self._forget_session()
            # A stale session (expired, user disabled): also drop what this tab's state holds.
            back_to = self._current_path()
            return sign_out_script(back_to) if token else rx.redirect(login_route(back_to), replace=True)
        except PermissionDenied:
            logger.info("User %s (%s) was sent away from a page for %s", self.username, self.role, roles)
            return [rx.redirect(HOME_ROUTE, replace=True), rx.toast.warning(ADMIN_PAGE_REFUSED, duration=10_000)]
        self._show_user(user)
        return None

    @rx.event
    async def require_login(self):
        """On load of every page except the login page: a signed-in user of any role."""
        return await self._check_session()

    @rx.event
    async def require_admin(self):
        """On load of a page only admins may open."""
        return await self._check_session(Role.ADMIN)

    @rx.event
    async def sign_out(self):
        """Log out: end the sessions of the user this session belongs to (never of the user the tab
        last showed: a tab's state is not proof of anything), forget it here and in the browser."""
        try:
            user = await asyncio.to_thread(current_user, self.session_token)
        except NotSignedIn:
            user = None
        if user is not None:
            await asyncio.to_thread(_end_sessions, user.id)
            logger.info("User %s signed out of the web app", user.username)
        self._forget_session()
        return sign_out_script()
