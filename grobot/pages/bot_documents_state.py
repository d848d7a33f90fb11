"""The Documents card of the Files tab: its state, what it reads and does through the services with the checks of each event (the view
is in :mod:`grobot.pages.bot_documents`)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.core.models import AppUser, Bot
from grobot.core.services import documents as documents_service
from grobot.core.services.tester_chat import worker_running
from grobot.core.services.users import NotSignedIn
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

logger = logging.getLogger(__name__)

FOLLOW_MS = 1500  # how often the states are read again while a file waits to be indexed
UNSETTLED = (documents_service.WAITING, documents_service.INDEXING)
MEGABYTE = 1024 * 1024


def _read(session: Session, _user: AppUser, bot: Bot) -> dict[str, Any]:
    settings = documents_service.DocumentsSettings.of(bot)
    states = documents_service.file_states(session=session, bot_id=bot.id or 0)
    return {"settings": settings, "states": states, "worker": worker_running(session=session)}


def load_documents(token: str, bot_id: int) -> dict[str, Any]:
    return run_for_bot(token, bot_id, _read, admin=True)


def ask_worker(token: str, bot_id: int) -> dict[str, Any]:
    """After a change of the files: ask the worker to index now, and read the states."""
    def work(session: Session, user: AppUser, bot: Bot) -> dict[str, Any]:
        documents_service.request_sync(session=session)
        return _read(session, user, bot)

    return run_for_bot(token, bot_id, work, admin=True)


def save_documents(token: str, bot_id: int, changes: dict[str, Any]) -> None:
    def work(session: Session, user: AppUser, bot: Bot) -> None:
        documents_service.update_settings(bot.id or 0, changes, session=session)
        logger.info("User %s changed the documents settings of bot %s", user.username, bot.id)

    run_for_bot(token, bot_id, work, admin=True, readonly=False)


def index_again(token: str, bot_id: int) -> int:
    def work(session: Session, user: AppUser, bot: Bot) -> int:
        logger.info("User %s asked to index the documents of bot %s again", user.username, bot.id)
        return documents_service.reindex(bot.id or 0, session=session)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


LABELS = {"documents_threshold": "threshold", "documents_max_file_bytes": "largest_file",
          "documents_max_passages": "most_passages"}  # as the form labels them


def _with_labels(exc: Exception) -> Exception:
    """A settings error that names the form's fields, not the bot's columns (the size in MB)."""
    if not isinstance(exc, documents_service.ValidationError):
        return exc
    import re

    text = str(exc)
    for name, label in LABELS.items():
        text = text.replace(name, label)
    text = re.sub(r"\d{4,}", lambda m: f"{round(int(m.group()) / MEGABYTE, 3):g} MB", text)
    return documents_service.ValidationError(text)


def _number(text: str, what: str) -> float:
    try:
        return float(text.strip().replace(",", "."))
    except ValueError:
        raise documents_service.ValidationError(f"{what}: enter a number") from None


class DocumentsState(BotPageState):
    """The open bot's documents: each file's state line, and the settings form."""

    doc_lines: dict[str, str] = {}  # path -> "Indexed: 12 passages", "Not indexed: ...", ...
    doc_states: dict[str, str] = {}  # path -> indexed, failed, waiting, indexing, off
    worker: bool = True
    enabled: bool = True
    threshold: str = ""
    max_file_mb: str = ""
    max_passages: str = ""
    saved: dict[str, str] = {}
    documents_error: str = ""
    saving: bool = False
    _followed_at: float = 0.0

    @rx.var
    def unsettled(self) -> bool:
        """A file waits to be indexed (the page follows the states until none does)."""
        return any(state in UNSETTLED for state in self.doc_states.values())

    @rx.var
    def waiting_without_worker(self) -> bool:
        return self.unsettled and not self.worker

    @rx.var
    def documents_dirty(self) -> bool:
        return bool(self.saved) and self.saved != self._form()

    def _form(self) -> dict[str, str]:
        return {"threshold": self.threshold, "max_file_mb": self.max_file_mb, "max_passages": self.max_passages}

    def _show(self, data: dict[str, Any], *, form: bool) -> None:
        states: dict[str, documents_service.FileState] = data["states"]
        self.doc_lines = {path: state.line for path, state in states.items()}
        self.doc_states = {path: state.state for path, state in states.items()}
        self.worker = bool(data["worker"])
        settings: documents_service.DocumentsSettings = data["settings"]
        self.enabled = settings.enabled
        if form:
            self.threshold = f"{settings.threshold:g}"
            self.max_file_mb = f"{settings.max_file_bytes / MEGABYTE:g}"
            self.max_passages = str(settings.max_passages)
            self.saved = self._form()

    async def _reload(self, reader: Any, *, form: bool) -> Any:
        try:
            data = await asyncio.to_thread(reader, self.session_token, self.current_bot_id)
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.documents_error = user_message(exc)
            return None
        self.documents_error = ""
        self._show(data, form=form)
        return None

    @rx.event
    async def load(self):
        if not self.bot_ready:
            return None
        return await self._reload(load_documents, form=True)

    @rx.event
    async def files_changed(self):
        """Files were uploaded or deleted: the worker indexes them now, and the page follows."""
        return await self._reload(ask_worker, form=not self.documents_dirty)

    @rx.event
    async def follow(self, _tick: str = ""):
        """On the page's timer: read the states again while a file waits to be indexed."""
        now = time.monotonic()
        if not self.unsettled or not self.bot_ready or now - self._followed_at < FOLLOW_MS / 2000:
            return None
        self._followed_at = now
        return await self._reload(load_documents, form=False)

    @rx.event
    def set_threshold(self, value: str) -> None:
        self.threshold = value

    @rx.event
    def set_max_file_mb(self, value: str) -> None:
        self.max_file_mb = value

    @rx.event
    def set_max_passages(self, value: str) -> None:
        self.max_passages = value

    @rx.event
    async def set_documents_enabled(self, enabled: bool):
        """Documents on or off (saved at once, like the bot's enable switch)."""
        try:
            await asyncio.to_thread(save_documents, self.session_token, self.current_bot_id,
                                    {"documents_enabled": bool(enabled)})
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        await self._reload(ask_worker, form=False)
        return rx.toast.success("Answers from documents are on: the files are indexed." if enabled
                                else "Answers from documents are off.")

    @rx.event
    async def save_limits(self):
        try:
            changes = {"documents_threshold": _number(self.threshold, "Threshold"),
                       "documents_max_file_bytes": int(_number(self.max_file_mb, "Largest file") * MEGABYTE),
                       "documents_max_passages": int(_number(self.max_passages, "Most passages"))}
            self.saving = True
            yield
            await asyncio.to_thread(save_documents, self.session_token, self.current_bot_id, changes)
        except Exception as exc:
            self.saving = False
            self.documents_error = user_message(_with_labels(exc))
            return
        self.saving = False
        await self._reload(ask_worker, form=True)
        yield rx.toast.success("Documents settings saved.")

    @rx.event
    async def reindex(self):
        try:
            count = await asyncio.to_thread(index_again, self.session_token, self.current_bot_id)
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        await self._reload(ask_worker, form=False)
        return rx.toast.success("The files are indexed again." if count else "The bot has no files to index.")
