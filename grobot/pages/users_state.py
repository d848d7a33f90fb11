"""The Users page's state (admins): the accounts of the web app, their roles and the bots testers see.

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

from grobot.components.formatting import ago, utc_text
from grobot.core.errors import GroBotError
from grobot.core.models import Role
from grobot.core.services import bots as bots_service
from grobot.core.services import users
from grobot.core.services.validation import field_sentence
from grobot.state.admin_state import AdminState, Refused

logger = logging.getLogger(__name__)

ROUTE = "/users"
TITLE = "Users · GroBot"
PASSWORD_OUTPUT_ID = "shown-once-password"
MAX_BOTS_LISTED = 500  # the bots the access dialog offers
BOT_NAMES_SHOWN = 3  # the names of a tester's bots in the table (then "and N more")


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


def bots_text(names: list[str], total: int) -> str:
    """``"Alpha, Beta, Gamma and 31 more"``: the first names of a tester's bots, then a count."""
    listed = ", ".join(names)
    rest = total - len(names)
    return f"{listed} and {rest} more" if rest > 0 and listed else listed


def load_rows(session, user) -> list[UserRow]:
    """Every account with the first names of the bots granted to it (and how many in all)."""
    granted = bots_service.granted_bot_names(session=session, per_user=BOT_NAMES_SHOWN)
    rows = []
    for account in users.list_users(session=session):
        names, total = granted.get(account.id or 0, ([], 0))
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
                bots="All bots" if is_admin else bots_text(names, total),
                bot_count=total,
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

    @rx.event
    def shown_once_open_change(self, is_open: bool):
        """Escape or a click outside closes the password dialog too."""
        if not is_open:
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
            self.password_errors = {"password": field_sentence("password", str(exc).partition(": ")[2] or str(exc))}
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
                BotAccess(id=bot_id, name=name, granted=bot_id in granted)
                for bot_id, name in bots_service.bot_names(session=session, limit=MAX_BOTS_LISTED)
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
        return {key: field_sentence(key, problem)}
    if "already exists" in message:
        return {"username": message}
    return {"form": message}
