"""The login page: username and password; the only page open without a session."""

from __future__ import annotations

import reflex as rx

from grobot.components.layout import brand
from grobot.pages.login_state import PASSWORD_INPUT_ID, LoginState

FIRST_ADMIN_COMMAND = "python -m grobot admin create --username NAME"


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
