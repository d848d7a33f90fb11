"""The Users page (admins): the accounts of the web app, their roles and the bots testers see.

Passwords never enter a state var: a typed one passes only through the submit handler, and
a generated one is written straight into the "shown once" dialog's field by a script
(it is not kept on the server, nor in the page state that Reflex stores).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import reflex as rx

from grobot.components.formatting import ago, counted, utc_text
from grobot.components.forms import confirm_dialog, field, form_dialog
from grobot.components.layout import page_layout
from grobot.core.errors import GroBotError
from grobot.core.models import Role
from grobot.core.services import bots as bots_service
from grobot.core.services import users
from grobot.state.admin_state import AdminState, Refused

logger = logging.getLogger(__name__)

ROUTE = "/users"
TITLE = "Users · GroBot"
PASSWORD_OUTPUT_ID = "shown-once-password"
MAX_BOTS_LISTED = 500
WIDE_CELL = ["none", "none", "table-cell"]  # columns left out on narrow screens


@dataclass
class UserRow:
    """One account as the page shows it (never the password hash)."""

    id: int
    username: str
    role: str
    enabled: bool
    last_login: str
    last_login_at: str
    created: str
    bots: str
    bot_count: int
    is_self: bool


@dataclass
class BotAccess:
    id: int
    name: str
    granted: bool


def load_rows(session, user) -> list[UserRow]:
    """Every account with the names of the bots granted to it."""
    bots = bots_service.list_bots(session=session)[:MAX_BOTS_LISTED]
    names = {bot.id: bot.name for bot in bots}
    granted = users.granted_bots(session=session)
    rows = []
    for account in users.list_users(session=session):
        ids = granted.get(account.id or 0, [])
        is_admin = account.role == Role.ADMIN.value
        rows.append(
            UserRow(
                id=account.id or 0,
                username=account.username,
                role=account.role,
                enabled=not account.disabled,
                last_login=ago(account.last_login_at, never="never"),
                last_login_at=utc_text(account.last_login_at),
                created=utc_text(account.created_at),
                bots="All bots" if is_admin else ", ".join(sorted(names[i] for i in ids if i in names)),
                bot_count=len(ids),
                is_self=account.id == user.id,
            )
        )
    return rows


def _show_once_script(password: str) -> rx.event.EventSpec:
    """Put ``password`` into the shown-once field when it is on the page (it opens just before)."""
    return rx.call_script(
        "(function put(n){const el=document.getElementById(" + json.dumps(PASSWORD_OUTPUT_ID) + ");"
        "if(el){el.value=" + json.dumps(password) + ";el.select();}"
        "else if(n>0){setTimeout(function(){put(n-1);},50);}})(60);"
    )


class UsersState(AdminState):
    """The account list and its dialogs."""

    accounts: list[UserRow] = []
    loaded: bool = False
    add_open: bool = False
    add_errors: dict[str, str] = {}
    add_role: str = Role.TESTER.value
    form_version: int = 0
    password_user_id: int = 0
    password_username: str = ""
    password_errors: dict[str, str] = {}
    shown_once_for: str = ""
    access_user_id: int = 0
    access_username: str = ""
    access_bots: list[BotAccess] = []
    confirm_action: str = ""  # "delete" | "disable"
    confirm_user_id: int = 0
    confirm_username: str = ""

    @rx.var
    def admin_count(self) -> int:
        return sum(1 for row in self.accounts if row.role == Role.ADMIN.value)

    @rx.var
    def tester_count(self) -> int:
        return sum(1 for row in self.accounts if row.role == Role.TESTER.value)

    async def _reload(self) -> None:
        self.accounts = await self._admin(load_rows)
        self.loaded = True

    @rx.event
    async def open(self):
        """On load: read the accounts."""
        return await self._open()

    # ----------------------------------------------------------------- add

    @rx.event
    async def start_add(self):
        """Open the empty "Add a user" form."""
        if refused := await self._refused():
            return refused
        self.add_errors = {}
        self.add_role = Role.TESTER.value
        self.form_version += 1
        self.add_open = True
        return None

    @rx.event
    def set_add_role(self, role: str):
        if role in {r.value for r in Role}:
            self.add_role = role

    @rx.event
    def add_open_change(self, is_open: bool):
        if not is_open:
            self.add_open = False

    @rx.event
    async def add_user(self, form: dict[str, Any]):
        """Create the account; with no password typed, one is generated and shown once."""
        username = str(form.get("username", "")).strip()
        typed = str(form.get("password", ""))
        password = typed or users.generate_password()
        role = self.add_role

        def work(session, user) -> None:
            users.create_user(session=session, username=username, password=password, role=role)
            logger.info("Admin %s added the %s account %s", user.username, role, username)

        try:
            await self._admin(work, readonly=False)
        except Refused as refused:
            yield refused.event
            return
        except GroBotError as exc:
            self.add_errors = _errors(str(exc), ("username", "password", "role"))
            return
        self.add_open = False
        self.add_errors = {}
        try:
            await self._reload()
        except Refused as refused:
            yield refused.event
            return
        yield rx.toast.success(f"{role.capitalize()} {username} added")
        if not typed:
            self.shown_once_for = username
            yield
            yield _show_once_script(password)

    @rx.event
    def close_shown_once(self):
        """Close the password dialog (the script-filled field goes with it)."""
        self.shown_once_for = ""

    # ----------------------------------------------------------------- password

    @rx.event
    async def start_password(self, user_id: int, username: str):
        """Open the password form of an account."""
        if refused := await self._refused():
            return refused
        self.password_user_id = int(user_id)
        self.password_username = username
        self.password_errors = {}
        self.form_version += 1
        return None

    @rx.event
    def password_open_change(self, is_open: bool):
        if not is_open:
            self.password_user_id = 0

    @rx.event
    async def reset_password(self, form: dict[str, Any]):
        """A new password (typed, or generated and shown once); the user's sessions end."""
        typed = str(form.get("password", ""))
        password = typed or users.generate_password()
        user_id, username = self.password_user_id, self.password_username

        def work(session, user) -> None:
            account = users.get_user(user_id, session=session)
            users.set_password(account, password, session=session)
            users.end_sessions(account.id or 0, session=session)
            logger.info("Admin %s reset the password of %s", user.username, account.username)

        try:
            await self._admin(work, readonly=False)
        except Refused as refused:
            yield refused.event
            return
        except GroBotError as exc:
            self.password_errors = {"password": str(exc).partition(": ")[2] or str(exc)}
            return
        self.password_user_id = 0
        yield rx.toast.success(f"Password of {username} changed; their sessions have ended")
        if not typed:
            self.shown_once_for = username
            yield
            yield _show_once_script(password)

    # ----------------------------------------------------------------- bot access

    @rx.event
    async def start_access(self, user_id: int, username: str):
        """Open the bot access dialog of a tester, with the bots granted now."""

        def work(session, _user) -> list[BotAccess]:
            account = users.get_user(int(user_id), session=session)
            granted = users.visible_bot_ids(account, session=session) or set()
            return [
                BotAccess(id=bot.id, name=bot.name, granted=bot.id in granted)
                for bot in bots_service.list_bots(session=session)[:MAX_BOTS_LISTED]
            ]

        try:
            self.access_bots = await self._admin(work)
        except Refused as refused:
            return refused.event
        except GroBotError as exc:
            return rx.toast.error(str(exc))
        self.access_user_id = int(user_id)
        self.access_username = username
        self.form_version += 1
        return None

    @rx.event
    def access_open_change(self, is_open: bool):
        if not is_open:
            self.access_user_id = 0

    @rx.event
    async def save_access(self, form: dict[str, Any]):
        """Exactly the checked bots become the ones the tester may see."""
        bot_ids = {int(key.removeprefix("bot-")) for key, value in form.items() if key.startswith("bot-") and value}
        user_id, username = self.access_user_id, self.access_username

        def work(session, user) -> None:
            users.set_granted_bots(users.get_user(user_id, session=session), bot_ids, session=session)
            logger.info("Admin %s set the bots of %s", user.username, username)

        self.access_user_id = 0
        return await self._act(work, f"{username} may now test {len(bot_ids)} bot{'' if len(bot_ids) == 1 else 's'}")

    # ----------------------------------------------------------------- enable, disable, delete

    @rx.event
    async def enable(self, user_id: int):
        return await self._set_disabled(int(user_id), False)

    @rx.event
    def ask(self, action: str, user_id: int, username: str):
        """Ask before disabling or deleting an account."""
        if action in ("delete", "disable"):
            self.confirm_action = action
            self.confirm_user_id = int(user_id)
            self.confirm_username = username

    @rx.event
    def cancel_confirm(self):
        self.confirm_user_id = 0

    @rx.event
    async def confirm(self):
        user_id, self.confirm_user_id = self.confirm_user_id, 0
        if not user_id:
            return None
        if self.confirm_action == "disable":
            return await self._set_disabled(user_id, True)

        def work(session, user) -> str:
            account = users.get_user(user_id, session=session)
            users.delete_user(account, session=session, acting_user_id=user.id)
            logger.info("Admin %s deleted the account %s", user.username, account.username)
            return account.username

        return await self._act(work, lambda name: f"{name} deleted")

    async def _set_disabled(self, user_id: int, disabled: bool):
        def work(session, user) -> str:
            account = users.get_user(user_id, session=session)
            users.set_disabled(account, disabled, session=session, acting_user_id=user.id)
            logger.info("Admin %s %s the account %s", user.username, "disabled" if disabled else "enabled", account.username)
            return account.username

        return await self._act(work, lambda name: f"{name} {'disabled: their sessions have ended' if disabled else 'enabled'}")


def _errors(message: str, fields: tuple[str, ...]) -> dict[str, str]:
    key, sep, problem = message.partition(": ")
    if sep and key in fields:
        return {key: problem}
    if "already exists" in message:
        return {"username": message}
    return {"form": message}


# --------------------------------------------------------------------------- components


def role_badge(role: rx.Var[str]) -> rx.Component:
    return rx.badge(
        rx.cond(role == "admin", "Admin", "Tester"),
        color_scheme=rx.cond(role == "admin", "indigo", "teal"),
        variant="soft",
    )


def user_row(row: UserRow) -> rx.Component:
    muted = rx.color("gray", 10)
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
                        rx.menu.item(rx.icon("trash-2", size=14), "Delete", color="red", disabled=row.is_self,
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
        help_text=f"At least {users.MIN_PASSWORD} characters. A generated password is shown once.",
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
    )


def access_dialog() -> rx.Component:
    return form_dialog(
        rx.fragment("Bots ", UsersState.access_username, " may test"),
        "Testers see only these bots, and only their Test Chat.",
        rx.cond(
            UsersState.access_bots.length() > 0,
            rx.scroll_area(
                rx.vstack(
                    rx.foreach(
                        UsersState.access_bots,
                        lambda bot: rx.el.label(
                            rx.hstack(
                                rx.checkbox(name="bot-" + bot.id.to_string(), default_checked=bot.granted),
                                rx.text(bot.name, size="2"),
                                spacing="2",
                                align="center",
                            ),
                        ),
                    ),
                    spacing="2",
                ),
                max_height="20rem",
                type="auto",
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
