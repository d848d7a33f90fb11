"""The council's settings card: its state, what it reads and does through the services with the checks of each event (the view
is in :mod:`grobot.pages.bot_council_settings`)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.core.errors import ValidationError
from grobot.core.models import AppUser, Bot
from grobot.core.services import council
from grobot.core.services.users import NotSignedIn
from grobot.core.services.validation import sentences
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

logger = logging.getLogger(__name__)

SAME = "same"  # a select's value for "the category's provider" (a select item cannot be empty)


@dataclass
class AdvisorForm:
    """One advisor as the form edits it."""

    name: str
    role: str
    category: str
    provider: str  # SAME: the category's
    model: str
    enabled: bool
    uses: str  # the provider and model it uses now (as saved)


def settings_form(session: Session, bot: Bot) -> dict[str, Any]:
    """The council's settings as the form shows them."""
    bot_id = bot.id or 0
    row = council.get_council(bot_id, session=session)
    uses = council.describe_llms(bot_id, session=session)
    advisors = [AdvisorForm(name=a.name, role=a.role, category=a.category, provider=a.provider or SAME,
                            model=a.model, enabled=a.enabled, uses=uses.get(a.name, "not taking part"))
                for a in council.advisors(bot_id, session=session)]
    return {"enabled": bool(row.enabled), "advisors": advisors, "synthesis_category": row.synthesis_category,
            "synthesis_provider": row.synthesis_provider or SAME, "synthesis_model": row.synthesis_model,
            "synthesis_uses": uses.get("", "")}


def load_form(token: str, bot_id: int) -> dict[str, Any]:
    return run_for_bot(token, bot_id, lambda session, _user, bot: settings_form(session, bot), admin=True)


def change(token: str, bot_id: int, action: Any) -> dict[str, Any]:
    """Run ``action(session, bot_id)`` (a change of the council) and read the form again."""

    def work(session: Session, user: AppUser, bot: Bot) -> dict[str, Any]:
        action(session, bot.id or 0)
        logger.info("User %s changed the council of bot %s", user.username, bot.id)
        session.flush()
        return settings_form(session, bot)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


def _provider(value: str) -> str:
    return "" if value == SAME else value


class CouncilSettingsState(BotPageState):
    """The council's settings of the open bot."""

    council_enabled: bool = False
    advisor_forms: list[AdvisorForm] = []
    synthesis_category: str = "output"
    synthesis_provider: str = SAME
    synthesis_model: str = ""
    synthesis_uses: str = ""
    settings_dirty: bool = False
    settings_error: str = ""
    adding: bool = False
    new_name: str = ""
    new_role: str = ""
    add_error: str = ""
    confirm_remove: str = ""
    confirm_reset: bool = False

    def _show(self, data: dict[str, Any]) -> None:
        self.council_enabled = data["enabled"]
        self.advisor_forms = data["advisors"]
        self.synthesis_category = data["synthesis_category"]
        self.synthesis_provider = data["synthesis_provider"]
        self.synthesis_model = data["synthesis_model"]
        self.synthesis_uses = data["synthesis_uses"]
        self.settings_dirty = False
        self.settings_error = ""

    async def _run(self, read: Any, *args: Any, done: str = "") -> Any:
        """``read(token, bot id, *args)`` in a thread, then show the form it returns (and ``done``)."""
        try:
            data = await asyncio.to_thread(read, self.session_token, self.current_bot_id, *args)
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.settings_error = user_message(exc)
            return None
        self._show(data)
        return rx.toast.success(done) if done else None

    async def _change(self, action: Any, done: str) -> Any:
        return await self._run(change, action, done=done)

    def _opened(self, data: dict[str, Any]) -> None:
        """The tab opened with ``data`` (read by the tab's load, with the deliberations)."""
        self.confirm_remove, self.confirm_reset, self.adding = "", False, False
        self._show(data)

    @rx.event
    async def load(self):
        self.settings_error, self.confirm_remove, self.confirm_reset, self.adding = "", "", False, False
        if not self.bot_ready or not self.is_admin:
            return None
        return await self._run(load_form)

    @rx.event
    async def set_council_enabled(self, enabled: bool):
        """The switch saves at once (the /council command answers or refuses from the next question)."""
        return await self._change(lambda session, bot_id: council.set_council(bot_id, session=session,
                                                                               enabled=bool(enabled)),
                                  "Council enabled: /council answers now." if enabled else "Council disabled.")

    @rx.event
    def edit_advisor(self, index: int, key: str, value: Any) -> None:
        forms = list(self.advisor_forms)
        if 0 <= index < len(forms) and key in ("role", "category", "provider", "model", "enabled"):
            setattr(forms[index], key, bool(value) if key == "enabled" else str(value))
            self.advisor_forms = forms
            self.settings_dirty = True

    @rx.event
    def edit_synthesis(self, key: str, value: str) -> None:
        if key in ("synthesis_category", "synthesis_provider", "synthesis_model"):
            setattr(self, key, value)
            self.settings_dirty = True

    @rx.event
    async def save_settings(self):
        """Save every advisor and the synthesis's LLM at once (all or nothing: one transaction)."""
        forms = list(self.advisor_forms)
        synthesis = {"synthesis_category": self.synthesis_category,
                     "synthesis_provider": _provider(self.synthesis_provider), "synthesis_model": self.synthesis_model}

        def action(session: Session, bot_id: int) -> None:
            for form in forms:
                try:
                    council.set_advisor(bot_id, form.name, session=session, role=form.role, category=form.category,
                                        provider=_provider(form.provider), model=form.model.strip(),
                                        enabled=form.enabled)
                except ValidationError as exc:  # the callout names the advisor it is about
                    raise ValidationError(f"Advisor {form.name}: {sentences(str(exc))}") from None
            try:
                council.set_council(bot_id, session=session, **synthesis)
            except ValidationError as exc:
                raise ValidationError(f"Synthesis: {sentences(str(exc))}") from None

        return await self._change(action, "Council settings saved.")

    @rx.event
    def open_add(self) -> None:
        self.adding, self.new_name, self.new_role, self.add_error = True, "", "", ""

    @rx.event
    def add_open_changed(self, is_open: bool) -> None:
        self.adding = bool(is_open)

    @rx.event
    def set_new_name(self, value: str) -> None:
        self.new_name = value

    @rx.event
    def set_new_role(self, value: str) -> None:
        self.new_role = value

    @rx.event
    async def add_advisor(self, _form_data: dict[str, Any] | None = None):
        name, role = self.new_name.strip(), self.new_role.strip()
        if any(f.name == name for f in self.advisor_forms):
            self.add_error = f"The council already has an advisor named {name}."
            return None
        try:
            data = await asyncio.to_thread(change, self.session_token, self.current_bot_id,
                                           lambda session, bot_id: council.set_advisor(bot_id, name, session=session,
                                                                                       role=role))
        except Exception as exc:
            self.add_error = user_message(exc)
            return None
        self._show(data)
        self.adding = False
        return rx.toast.success(f"Advisor {name} added.")

    @rx.event
    def ask_remove(self, name: str) -> None:
        self.confirm_remove = name

    @rx.event
    def cancel_confirm(self) -> None:
        self.confirm_remove, self.confirm_reset = "", False

    @rx.event
    async def remove_advisor(self):
        name, self.confirm_remove = self.confirm_remove, ""
        if not name:
            return None
        return await self._change(lambda session, bot_id: council.delete_advisor(bot_id, name, session=session),
                                  f"Advisor {name} removed.")

    @rx.event
    def ask_reset(self) -> None:
        self.confirm_reset = True

    @rx.event
    async def reset_advisors(self):
        self.confirm_reset = False
        return await self._change(lambda session, bot_id: council.reset_advisors(bot_id, session=session),
                                  "The five default advisors are back.")
