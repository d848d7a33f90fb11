"""The login page: username and password; the only page open without a session."""

from __future__ import annotations

import asyncio
import logging

import reflex as rx

from grobot.components.layout import brand
from grobot.core.db import session_scope
from grobot.core.services import users
from grobot.core.services.users import NotSignedIn
from grobot.state import AppState
from grobot.state.app_state import LOGIN_ROUTE, NEXT_PARAM, current_user, safe_next
from grobot.web_session import make_handoff, store_session_script

logger = logging.getLogger(__name__)

ROUTE = LOGIN_ROUTE
TITLE = "Sign in · GroBot"
PASSWORD_INPUT_ID = "login-password"
FIRST_ADMIN_COMMAND = "python -m grobot admin create --username NAME"


def check_login(username: str, password: str, client: str) -> tuple[users.SignedInUser, str]:
    """Blocking (argon2): the user and a new session token, or ``users.LoginRefused`` (``client``:
    the address the login comes from, which the login throttle counts)."""
    with session_scope() as session:  # a write: it records the time of the login
        return users.login(session=session, username=username, password=password, client=client)


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
            user, token = await asyncio.to_thread(check_login, username, password, self._client_address())
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


def field(label: str, *, name: str, input_id: str, type_: str, autocomplete: str, autofocus: bool = False) -> rx.Component:
    return rx.vstack(
        rx.el.label(rx.text(label, size="2", weight="medium"), html_for=input_id),
        rx.input(
            id=input_id,
            name=name,
            type=type_,
            auto_complete=autocomplete,
            auto_focus=autofocus,
            required=True,
            size="3",
            width="100%",
        ),
        spacing="1",
        width="100%",
    )


def login_form() -> rx.Component:
    return rx.form(
        rx.vstack(
            field("Username", name="username", input_id="login-username", type_="text", autocomplete="username", autofocus=True),
            field("Password", name="password", input_id=PASSWORD_INPUT_ID, type_="password", autocomplete="current-password"),
            rx.cond(
                LoginState.error != "",
                rx.callout(LoginState.error, icon="triangle-alert", color_scheme="red", role="alert", width="100%"),
            ),
            rx.button(
                rx.cond(LoginState.busy, rx.spinner(size="2"), rx.icon("log-in", size=16)),
                "Sign in",
                type="submit",
                size="3",
                width="100%",
                disabled=LoginState.busy,
            ),
            spacing="4",
            width="100%",
        ),
        on_submit=LoginState.submit,
        reset_on_submit=False,
        width="100%",
    )


def login_page() -> rx.Component:
    """The login page."""
    return rx.center(
        rx.vstack(
            rx.center(brand(), width="100%"),
            rx.card(
                rx.vstack(
                    rx.vstack(
                        rx.heading("Sign in", size="6", as_="h1"),
                        rx.text("Manage your bot fleet, or test the bots shared with you.", size="2", color=rx.color("gray", 11)),
                        spacing="1",
                    ),
                    login_form(),
                    spacing="5",
                    width="100%",
                ),
                size="4",
                width="100%",
            ),
            rx.text(
                "No account yet? An administrator creates the first one with ",
                rx.code(FIRST_ADMIN_COMMAND),
                size="1",
                color=rx.color("gray", 11),
                text_align="center",
            ),
            spacing="5",
            width="100%",
            max_width="24rem",
        ),
        min_height="100vh",
        padding="1.5rem",
        background=rx.color("gray", 2),
    )
