"""The Users page (admins): the accounts of the web app, their roles and the bots testers see
(the state and its handlers: :mod:`grobot.pages.users_state`)."""

from __future__ import annotations

import json

import reflex as rx

from grobot.components.formatting import counted
from grobot.components.forms import confirm_dialog, field, form_dialog
from grobot.components.layout import WIDE_CELL, page_layout
from grobot.core.services.users import MIN_PASSWORD
from grobot.pages.users_state import PASSWORD_OUTPUT_ID, ROUTE, TITLE, UserRow, UsersState

__all__ = ["ROUTE", "TITLE", "UsersState", "users_page"]


# --------------------------------------------------------------------------- components


def role_badge(role: rx.Var[str]) -> rx.Component:
    return rx.badge(
        rx.cond(role == "admin", "Admin", "Tester"),
        color_scheme=rx.cond(role == "admin", "indigo", "teal"),
        variant="soft",
    )


def user_row(row: UserRow) -> rx.Component:
    muted = rx.color("gray", 11)
    return rx.table.row(
        rx.table.row_header_cell(
            rx.hstack(
                rx.text(row.username, weight="medium"),
                rx.cond(row.is_self, rx.badge("you", variant="outline", color_scheme="gray", size="1")),
                spacing="2",
                align="center",
            )
        ),
        rx.table.cell(role_badge(row.role)),
        rx.table.cell(
            rx.cond(
                row.enabled,
                rx.hstack(rx.icon("circle-check", size=16, color=rx.color("green", 10)), rx.text("Active"), spacing="1", align="center"),
                rx.hstack(rx.icon("circle-minus", size=16, color=muted), rx.text("Disabled", color=muted), spacing="1", align="center"),
            )
        ),
        rx.table.cell(rx.text(row.last_login, title=row.last_login_at, color=rx.cond(row.last_login == "never", muted, rx.color("gray",
                                                                                                                                12))),
                      display=WIDE_CELL),
        rx.table.cell(
            rx.cond(
                row.role == "admin",
                rx.text("All bots", color=muted),
                rx.cond(row.bots != "", rx.text(row.bots, size="2"), rx.text("none yet", size="2", color=muted)),
            ),
            display=WIDE_CELL,
        ),
        rx.table.cell(
            rx.hstack(
                rx.cond(
                    row.role == "tester",
                    rx.button(rx.icon("bot", size=14), "Bots", size="1", variant="soft", on_click=UsersState.start_access(row.id,
                                                                                                                          row.username)),
                ),
                rx.menu.root(
                    rx.menu.trigger(rx.icon_button(rx.icon("ellipsis", size=16), variant="ghost", color_scheme="gray",
                                                   aria_label="More actions", title="More actions")),
                    rx.menu.content(
                        rx.menu.item(rx.icon("key-round", size=14), "Reset password", on_click=UsersState.start_password(row.id,
                                                                                                                         row.username)),
                        rx.cond(
                            row.enabled,
                            rx.menu.item(rx.icon("ban", size=14), "Disable", disabled=row.is_self, on_click=UsersState.ask("disable",
                                                                                                                           row.id,
                                                                                                                           row.username)),
                            rx.menu.item(rx.icon("circle-check", size=14), "Enable", on_click=UsersState.enable(row.id)),
                        ),
                        rx.menu.separator(),
                        rx.menu.item(rx.icon("trash-2", size=14), "Delete", color_scheme="red", disabled=row.is_self,
                                     on_click=UsersState.ask("delete", row.id, row.username)),
                    ),
                ),
                spacing="3",
                justify="end",
                align="center",
            )
        ),
        align="center",
        data_username=row.username,
    )


def users_table() -> rx.Component:
    return rx.table.root(
        rx.table.header(rx.table.row(
            rx.table.column_header_cell("User", width="24%"),
            rx.table.column_header_cell("Role", width="11%"),
            rx.table.column_header_cell("Status", width="12%"),
            rx.table.column_header_cell("Last sign-in", width="14%", display=WIDE_CELL),
            rx.table.column_header_cell("Bots", width="25%", display=WIDE_CELL),
            rx.table.column_header_cell("", width="14%"),
        )),
        rx.table.body(rx.foreach(UsersState.accounts, user_row)),
        variant="surface",
        size="2",
        width="100%",
    )


def _password_input(ident: str, error: rx.Var) -> rx.Component:
    return field(
        "Password",
        rx.input(id=ident, name="password", type="password", auto_complete="new-password", placeholder="Leave empty to generate one",
                 width="100%"),
        input_id=ident,
        error=error,
        help_text=f"At least {MIN_PASSWORD} characters. A generated password is shown once.",
    )


def add_dialog() -> rx.Component:
    return form_dialog(
        "Add a user",
        "Admins run the whole fleet; testers may only chat with the bots you give them.",
        field(
            "Username",
            rx.input(id="new-username", name="username", auto_complete="off", width="100%"),
            input_id="new-username",
            error=UsersState.add_errors.get("username", ""),
        ),
        field(
            "Role",
            rx.select.root(
                rx.select.trigger(id="new-role", width="100%"),
                rx.select.content(rx.select.item("Tester", value="tester"), rx.select.item("Admin", value="admin")),
                value=UsersState.add_role,
                on_change=UsersState.set_add_role,
            ),
            input_id="new-role",
            error=UsersState.add_errors.get("role", ""),
        ),
        _password_input("new-password", UsersState.add_errors.get("password", "")),
        rx.cond(
            UsersState.add_errors.contains("form"),
            rx.callout(UsersState.add_errors.get("form", ""), icon="triangle-alert", color_scheme="red", width="100%"),
        ),
        submit_label="Add user",
        on_submit=UsersState.add_user,
        form_key=f"add-{UsersState.form_version}",
        open_=UsersState.add_open,
        on_open_change=UsersState.add_open_change,
    )


def password_dialog() -> rx.Component:
    return form_dialog(
        rx.fragment("Reset the password of ", UsersState.password_username),
        "Their open sessions end at once (yours too, when it is your own account).",
        _password_input("reset-password", UsersState.password_errors.get("password", "")),
        submit_label="Set password",
        on_submit=UsersState.reset_password,
        form_key=f"pw-{UsersState.form_version}",
        open_=UsersState.password_user_id != 0,
        on_open_change=UsersState.password_open_change,
    )


def shown_once_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title("Password of ", UsersState.shown_once_for),
            rx.dialog.description(
                "Copy it now and hand it over safely: it is shown only this once.",
                size="2",
                color=rx.color("gray", 11),
                margin_bottom="1rem",
            ),
            rx.hstack(
                rx.el.input(
                    id=PASSWORD_OUTPUT_ID,
                    read_only=True,
                    aria_label="Generated password",
                    style={"flex": "1", "fontFamily": "var(--code-font-family, monospace)", "fontSize": "0.95rem",
                           "padding": "0.5rem 0.75rem", "borderRadius": "6px", "border": f"1px solid {rx.color('gray', 6)}",
                           "background": rx.color("gray", 2)},
                ),
                rx.button(
                    rx.icon("copy", size=14),
                    "Copy",
                    variant="soft",
                    on_click=rx.call_script(
                        "navigator.clipboard && navigator.clipboard.writeText("
                        f"document.getElementById({json.dumps(PASSWORD_OUTPUT_ID)}).value)"
                    ),
                ),
                width="100%",
                spacing="2",
            ),
            rx.hstack(rx.dialog.close(rx.button("Done", on_click=UsersState.close_shown_once)), justify="end", margin_top="1rem"),
            max_width="28rem",
        ),
        open=UsersState.shown_once_for != "",
        on_open_change=UsersState.shown_once_open_change,
    )


def access_dialog() -> rx.Component:
    return form_dialog(
        rx.fragment("Bots ", UsersState.access_username, " may test"),
        "Testers see only these bots, and only their Test Chat.",
        rx.cond(
            UsersState.access_bots.length() > 0,
            rx.box(  # scrolls down only: a long name wraps rather than widening the list
                rx.vstack(
                    rx.foreach(
                        UsersState.access_bots,
                        lambda bot: rx.el.label(
                            rx.hstack(
                                rx.checkbox(name="bot-" + bot.id.to_string(), default_checked=bot.granted,
                                            margin_top="0.2rem"),
                                rx.text(bot.name, size="2", min_width="0", overflow_wrap="anywhere"),
                                spacing="2",
                                align="start",
                            ),
                            width="100%",
                        ),
                    ),
                    spacing="2",
                    width="100%",
                ),
                max_height="20rem",
                overflow_y="auto",
                overflow_x="hidden",
                width="100%",
                data_testid="access-bots",
            ),
            rx.text("There are no bots yet.", size="2", color=rx.color("gray", 11)),
        ),
        submit_label="Save access",
        on_submit=UsersState.save_access,
        form_key=f"access-{UsersState.form_version}",
        open_=UsersState.access_user_id != 0,
        on_open_change=UsersState.access_open_change,
    )


def users_page() -> rx.Component:
    """The Users page."""
    return page_layout(
        rx.cond(
            UsersState.loaded,
            users_table(),
            rx.center(rx.spinner(size="3"), padding="3rem", width="100%"),
        ),
        add_dialog(),
        password_dialog(),
        shown_once_dialog(),
        access_dialog(),
        confirm_dialog(
            open_=UsersState.confirm_user_id != 0,
            title=rx.cond(UsersState.confirm_action == "delete", "Delete user?", "Disable user?"),
            message=rx.cond(
                UsersState.confirm_action == "delete",
                "Delete " + UsersState.confirm_username + "? Their account and bot access are removed for good.",
                "Disable " + UsersState.confirm_username + "? They are signed out at once and cannot sign in until enabled again.",
            ),
            confirm_label=rx.cond(UsersState.confirm_action == "delete", "Delete user", "Disable user"),
            on_confirm=UsersState.confirm,
            on_cancel=UsersState.cancel_confirm,
        ),
        active="users",
        title="Users",
        subtitle=rx.cond(
            UsersState.loaded,
            counted(UsersState.admin_count, "admin") + " · " + counted(UsersState.tester_count, "tester"),
            "Who may sign in to this web app",
        ),
        actions=rx.button(rx.icon("user-plus", size=16), "Add user", on_click=UsersState.start_add),
    )
