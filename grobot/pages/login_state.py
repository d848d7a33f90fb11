"""The sign-in page: its state, what it reads and does through the services with the checks of each event (the view
is in :mod:`grobot.pages.login`)."""

from __future__ import annotations

import asyncio
import logging

import reflex as rx

from grobot.core.services import users
from grobot.core.services.users import NotSignedIn
from grobot.state import AppState
from grobot.state.app_state import LOGIN_ROUTE, NEXT_PARAM, current_user, safe_next, sign_in
from grobot.web_session import make_handoff, store_session_script

logger = logging.getLogger(__name__)

ROUTE = LOGIN_ROUTE
TITLE = "Sign in · GroBot"
PASSWORD_INPUT_ID = "login-password"


class LoginState(AppState):
    """The login form. The password only passes through :meth:`submit`; it is never stored."""

    error: str = ""
    busy: bool = False

    @rx.event
    async def open(self):
        """On load: someone already signed in goes straight to the app; an error of an earlier attempt
        (another visit, another user of the browser) is not shown again."""
        self.error, self.busy = "", False
        if not self.session_token:
            return None
        try:
            user = await asyncio.to_thread(current_user, self.session_token)
        except NotSignedIn:
            self._forget_session()
            return None
        except Exception:  # the database is unreachable: let them see the form
            logger.warning("Login page: checking the stored session failed", exc_info=True)
            return None
        self._show_user(user)
        return rx.redirect(self._next(), replace=True)

    def _next(self) -> str:
        """The page that sent the browser here (``?next=``), or home."""
        return safe_next(self.router.url.query_parameters.get(NEXT_PARAM))

    def _client_address(self) -> str:
        """Where this login comes from: the websocket's peer, as Reflex sets it for the connection
        (``X-Forwarded-For`` only behind ``REFLEX_TRUSTED_PROXY_HOPS`` trusted proxies; the
        browser cannot change it with an event)."""
        return self.router.session.client_ip or "unknown"

    @rx.event
    async def submit(self, form_data: dict[str, str]):
        """Check the username and password on the server; on success keep only the session."""
        username = str(form_data.get("username", "")).strip()
        password = str(form_data.get("password", ""))
        if not username or not password:
            self.error = "Enter your username and password"
            return
        self.busy = True
        self.error = ""
        yield
        try:
            user, token = await asyncio.to_thread(sign_in, username, password, self._client_address())
        except users.LoginRefused as exc:
            self.busy = False
            self.error = str(exc)
            yield rx.set_value(PASSWORD_INPUT_ID, "")
            return
        except Exception:
            logger.exception("Login failed with an unexpected error")
            self.busy = False
            self.error = "Signing in is not possible right now. Try again in a moment."
            return
        self.busy = False
        self._show_user(user)
        # The session becomes an HttpOnly cookie: the page trades this handoff for it, then reloads.
        yield rx.call_script(store_session_script(make_handoff(token), then=self._next()))
