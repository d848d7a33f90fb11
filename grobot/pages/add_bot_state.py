"""The "Add bot" dialog of the Bots page: its state, what it reads and does through the services with the checks of each event (the view
is in :mod:`grobot.pages.add_bot`)."""

from __future__ import annotations

import logging
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.core.errors import ConflictError, GroBotError
from grobot.core.models import AppUser
from grobot.core.services import bots as bots_service
from grobot.core.services import tester_chat
from grobot.core.services.validation import capitalised, field_problems, field_sentence
from grobot.state.admin_state import AdminState, Refused

logger = logging.getLogger(__name__)

FIELDS = ("name", "token", "personality")


def form_errors(exc: GroBotError) -> dict[str, str]:
    """``{"field": "problem"}`` for a failed create (``form`` for what is about no field of the dialog)."""
    message = str(exc)
    if isinstance(exc, ConflictError):
        return {"name": capitalised(message)}
    errors: dict[str, str] = {}
    others: list[str] = []
    for key, problem in field_problems(message):
        if key in FIELDS:
            errors[key] = field_sentence(key, problem)
        else:
            others.append(field_sentence(key, problem))
    if others:
        errors["form"] = " ".join(others)
    return errors or {"form": capitalised(message)}


def added_message(name: str, *, worker_running: bool) -> str:
    """The success toast: "start the worker" only when no worker has sent a heartbeat lately."""
    if worker_running:
        return f"Bot {name} added. Check its settings: the running worker starts it once it has a token and is enabled."
    return f"Bot {name} added. Check its settings, then start the worker (python -m grobot worker)."


def create(session: Session, user: AppUser, form: dict[str, Any]) -> tuple[int, bool]:
    """Create the bot from the submitted form (admins; the caller checked the role); returns its
    id and whether a bot worker runs (a recent heartbeat)."""
    token = str(form.get("token") or "").strip()
    bot = bots_service.create_bot(session=session, name=str(form.get("name") or "").strip(), token=token or None,
                                  personality=str(form.get("personality") or ""),
                                  enabled=bool(form.get("enabled")))
    logger.info("User %s added bot %s in the web app", user.username, bot.id)
    return bot.id or 0, tester_chat.worker_running(session=session)


class AddBotState(AdminState):
    """The "Add bot" dialog."""

    add_bot_open: bool = False
    add_bot_errors: dict[str, str] = {}
    add_bot_version: int = 0

    @rx.event
    async def start_add_bot(self):
        """Open the empty form (admins only)."""
        try:
            await self._admin(lambda _session, _user: None)
        except Refused as refused:
            return refused.event
        self.add_bot_errors = {}
        self.add_bot_version += 1
        self.add_bot_open = True
        return None

    @rx.event
    def add_bot_open_change(self, is_open: bool) -> None:
        if not is_open:
            self.add_bot_open = False

    @rx.event
    async def add_bot(self, form: dict[str, Any]):
        """Create the bot; on success open its Settings tab, else show the errors in the dialog."""
        try:
            bot_id, worker_running = await self._admin(lambda session, user: create(session, user, form), readonly=False)
        except Refused as refused:
            return refused.event
        except GroBotError as exc:
            self.add_bot_errors = form_errors(exc)
            return None
        self.add_bot_open = False
        self.add_bot_errors = {}
        name = str(form.get("name") or "").strip()
        return [rx.toast.success(added_message(name, worker_running=worker_running)),
                rx.redirect(f"/bots/{bot_id}/settings")]
