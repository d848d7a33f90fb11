"""The Knowledge Base tab's state: its users, directives, notes and the Archivist's suggestions (what the
tab shows and does: :mod:`grobot.pages.bot_knowledge`)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.components.long_text import context_use
from grobot.components.url_state import replace_url
from grobot.core.errors import MemoryUnavailable, NotFoundError, ValidationError
from grobot.core.llm.context_window import text_tokens
from grobot.core.models import AppUser, Bot, LLMCategory
from grobot.core.services import bots as bots_service
from grobot.core.services import discord_users, llm_settings, user_notes
from grobot.core.services.users import NotSignedIn
from grobot.core.wording import counted
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

logger = logging.getLogger(__name__)

USER_LIMIT = 200
MAX_USER_ID_CHARS = 32


@dataclass
class UserRow:
    """A Discord user in the list."""

    discord_user_id: str
    display_name: str
    has_directives: bool
    note_count: int
    updated: str
    message_count: int = 0
    suggestion_count: int = 0


@dataclass
class NoteRow:
    """A note about the selected user."""

    id: int
    note: str
    reliability: float
    percent: str
    source: str
    updated: str


@dataclass
class UserDetail:
    display_name: str
    directives: str
    notes: list[NoteRow]
    context_window: int = 0  # of the bot's output model, which reads the directives
    context_model: str = ""


def _users(session: Session, bot: Bot, search: str) -> list[UserRow]:
    return [UserRow(discord_user_id=u.discord_user_id, display_name=u.display_name, has_directives=u.has_directives,
                    note_count=u.note_count, updated=u.updated_at.strftime("%Y-%m-%d %H:%M") if u.updated_at else "",
                    message_count=u.message_count, suggestion_count=u.suggestion_count)
            for u in discord_users.known_users(session=session, bot_id=bot.id or 0, search=search, limit=USER_LIMIT)]


def _detail(session: Session, bot: Bot, user_id: str) -> UserDetail:
    profile = discord_users.get_profile(session=session, bot_id=bot.id or 0, discord_user_id=user_id)
    notes = [NoteRow(id=n.id or 0, note=n.note, reliability=n.reliability, percent=f"{round(n.reliability * 100)}%",
                     source=n.source, updated=n.updated_at.strftime("%Y-%m-%d"))
             for n in user_notes.list_notes(session=session, bot_id=bot.id or 0, discord_user_id=user_id)]
    name = discord_users.display_names(session=session, bot_id=bot.id or 0, user_ids=[user_id]).get(user_id, "")
    output = llm_settings.effective_llms(session=session, bot_id=bot.id)[LLMCategory.OUTPUT.value]
    return UserDetail(display_name=name, directives=profile.directives if profile else "", notes=notes,
                      context_window=int(output.context_window or 0),
                      context_model=f"the output model ({output.model})" if output.model else "the output model")


def clean_user_id(value: str) -> str:
    """A Discord user id as typed (digits only), or :class:`ValidationError`."""
    text = (value or "").strip()
    if not text.isdigit() or len(text) > MAX_USER_ID_CHARS:
        raise ValidationError("a Discord user id is a number (right-click the user in Discord, Copy User ID)")
    return text


def load_users(token: str, bot_id: int, search: str) -> list[UserRow]:
    return run_for_bot(token, bot_id, lambda session, _user, bot: _users(session, bot, search), admin=True)


def load_detail(token: str, bot_id: int, user_id: str) -> UserDetail:
    return run_for_bot(token, bot_id, lambda session, _user, bot: _detail(session, bot, user_id), admin=True)


def change_user(token: str, bot_id: int, user_id: str, change: Any) -> UserDetail:
    """``change(session, bot)`` as an admin, then the user's detail again (one transaction)."""

    def work(session: Session, user: AppUser, bot: Bot) -> UserDetail:
        change(session, bot)
        logger.info("User %s changed what bot %s knows of a Discord user", user.username, bot.id)
        return _detail(session, bot, user_id)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


def forget(token: str, bot_id: int, user_id: str) -> dict[str, int]:
    """Delete the profile, notes and memories of a user (after the admin check)."""
    checked_bot = run_for_bot(token, bot_id, lambda _session, _user, bot: bot.id or 0, admin=True)
    return discord_users.forget_user_everywhere(bot_id=checked_bot, discord_user_id=user_id)


LIVE_REFRESH_MS = 3000  # the list and the open user follow what the bot learns, this often
LIVE_STALE_SECONDS = 10.0  # a live refresh still running after this long does not block the next one


class KnowledgeState(BotPageState):
    """The Knowledge Base of the open bot."""

    users: list[UserRow] = []
    search: str = ""
    kb_loaded: bool = False
    kb_error: str = ""
    lookup_id: str = ""
    lookup_error: str = ""
    selected: str = ""
    selected_name: str = ""
    directives: str = ""
    saved_directives: str = ""
    directives_error: str = ""
    directives_meter: str = ""  # their tokens against the output model's context (long_text.context_use)
    directives_level: str = ""
    _context: tuple[int, str] = (0, "")
    notes: list[NoteRow] = []
    note_text: str = ""
    note_reliability: list[int | float] = [80]
    note_error: str = ""
    confirm_forget: bool = False
    _live_started: float = 0.0

    @rx.var
    def user_count(self) -> int:
        return len(self.users)

    @rx.var
    def directives_dirty(self) -> bool:
        return self.directives != self.saved_directives

    async def _reload_users(self) -> None:
        self.users = await asyncio.to_thread(load_users, self.session_token, self.current_bot_id, self.search)

    def _show_detail(self, detail: UserDetail) -> None:
        self.selected_name = detail.display_name
        self.directives = self.saved_directives = detail.directives
        self.notes = detail.notes
        self._context = (detail.context_window, detail.context_model)
        self._measure_directives()

    def _measure_directives(self) -> None:
        self.directives_meter, self.directives_level = context_use(text_tokens(self.directives), *self._context)

    def _url(self, user_id: str = "") -> str:
        """The tab's address with the open user (a link to it survives a reload)."""
        return f"/bots/{self.current_bot_id}/knowledge" + (f"?user={user_id}" if user_id else "")

    @rx.event
    async def load(self):
        """On load: the users, and the user of the address (``?user=<Discord id>``) opened."""
        self.kb_loaded, self.kb_error, self.selected = False, "", ""
        if not self.bot_ready:
            return None
        wanted = str(self.router.url.query_parameters.get("user") or "")
        try:
            await self._reload_users()
            if wanted:
                detail = await asyncio.to_thread(load_detail, self.session_token, self.current_bot_id,
                                                 clean_user_id(wanted))
                self.selected = wanted
                self._show_detail(detail)
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except ValidationError as exc:
            self.kb_error = f"The address names no Discord user ({user_message(exc)})."
        except Exception as exc:
            self.kb_error = user_message(exc)
            return None
        self.kb_loaded = True
        return ReviewState.load_review

    @rx.event(background=True)
    async def refresh_live(self, _tick: str = ""):
        """Keep the list, and the open user's notes, current (every timer tick): what the bot learns
        on Discord shows up without a reload. Directives being typed are kept."""
        async with self:
            now = time.monotonic()
            if not self.kb_loaded or (self._live_started and now - self._live_started < LIVE_STALE_SECONDS):
                return
            self._live_started = now
            token, bot_id, search, selected = self.session_token, self.current_bot_id, self.search, self.selected
        try:
            users = await asyncio.to_thread(load_users, token, bot_id, search)
            detail = await asyncio.to_thread(load_detail, token, bot_id, selected) if selected else None
        except Exception as exc:  # a moment without the database, or the session ended: the next tick says
            logger.debug("Knowledge Base refresh failed: %s", type(exc).__name__)
            users, detail = None, None
        async with self:
            self._live_started = 0.0
            if bot_id != self.current_bot_id or users is None:
                return
            self.users = users
            if detail is not None and selected == self.selected:
                self.selected_name, self.notes = detail.display_name, detail.notes
                if not self.directives_dirty:
                    self.directives = self.saved_directives = detail.directives

    @rx.event
    async def apply_search(self, form_data: dict[str, str]):
        self.search = (form_data.get("search") or "").strip()[:100]
        try:
            await self._reload_users()
        except Exception as exc:
            self.kb_error = user_message(exc)

    @rx.event
    async def select_user(self, user_id: str):
        """Open one user's directives and notes."""
        self.directives_error = self.note_error = ""
        try:
            detail = await asyncio.to_thread(load_detail, self.session_token, self.current_bot_id, user_id)
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        self.selected = user_id
        self._show_detail(detail)
        return replace_url(self._url(user_id))

    @rx.event
    def set_lookup_id(self, value: str) -> None:
        self.lookup_id = value
        self.lookup_error = ""

    @rx.event
    async def open_lookup(self, _form: dict[str, Any] | None = None):
        """Open a user by Discord id (also one the bot knows nothing of yet, to give directives)."""
        try:
            user_id = clean_user_id(self.lookup_id)
        except ValidationError as exc:
            self.lookup_error = user_message(exc)
            return None
        self.lookup_id = ""
        return KnowledgeState.select_user(user_id)

    @rx.event
    def close_user(self):
        self.selected = ""
        return replace_url(self._url())

    @rx.event
    def set_directives(self, value: str) -> None:
        self.directives = value
        self._measure_directives()

    @rx.event
    async def save_directives(self):
        user_id, text = self.selected, self.directives

        def change(session: Session, bot: Bot) -> None:
            discord_users.set_directives(session=session, bot_id=bot.id or 0, discord_user_id=user_id, directives=text)

        try:
            detail = await asyncio.to_thread(change_user, self.session_token, self.current_bot_id, user_id, change)
            await self._reload_users()
        except Exception as exc:
            self.directives_error = user_message(exc)
            return None
        self.directives_error = ""
        self._show_detail(detail)
        return rx.toast.success("Directives saved. The bot follows them from its next message.")

    @rx.event
    def set_note_text(self, value: str) -> None:
        self.note_text = value

    @rx.event
    def set_note_reliability(self, value: list[int | float]) -> None:
        self.note_reliability = value

    @rx.event
    async def add_note(self, _form: dict[str, Any] | None = None):
        user_id, text = self.selected, self.note_text
        reliability = float(self.note_reliability[0] if self.note_reliability else 80) / 100

        def change(session: Session, bot: Bot) -> None:
            user_notes.add_note(session=session, bot_id=bot.id or 0, discord_user_id=user_id, note=text,
                                reliability=reliability, source="admin")

        try:
            detail = await asyncio.to_thread(change_user, self.session_token, self.current_bot_id, user_id, change)
            await self._reload_users()
        except Exception as exc:
            self.note_error = user_message(exc)  # the text stays in the box
            return None
        self.note_error, self.note_text = "", ""
        self._show_detail(detail)
        return None

    @rx.event
    async def delete_note(self, note_id: int):
        user_id = self.selected

        def change(session: Session, bot: Bot) -> None:
            note = user_notes.get_note(session=session, note_id=int(note_id))
            if note.bot_id != bot.id or note.discord_user_id != user_id:
                raise NotFoundError(f"no user note numbered {note_id}")
            user_notes.delete_note(session=session, note_id=int(note_id))

        try:
            detail = await asyncio.to_thread(change_user, self.session_token, self.current_bot_id, user_id, change)
            await self._reload_users()
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        self._show_detail(detail)
        return rx.toast.success("Note deleted.")

    @rx.event
    def set_confirm_forget(self, value: bool) -> None:
        self.confirm_forget = bool(value)

    @rx.event
    async def forget_user(self):
        user_id, self.confirm_forget = self.selected, False
        try:
            counts = await asyncio.to_thread(forget, self.session_token, self.current_bot_id, user_id)
            await self._reload_users()
        except MemoryUnavailable:  # profile and notes are gone; the memories wait for the worker
            await self._reload_users()
            self.selected = ""
            return [replace_url(self._url()), rx.toast.warning(f"Forgot user {user_id}'s profile and notes, but their memories were not "
                                    "deleted: the memory service runs in the bot worker. Forget the user again "
                                    "once the worker runs.", duration=15000)]
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        self.selected = ""
        deleted = f"{counted(counts.get('notes', 0), 'note')} and {counted(counts.get('memories', 0), 'memory', 'memories')}"
        return [replace_url(self._url()), rx.toast.success(f"Forgot user {user_id}: {deleted} deleted.")]


# --------------------------------------------------------------------------- components



SUGGESTION_LIMIT = 100
NOTE, SUGGESTION = "note", "suggestion"


@dataclass
class SuggestionRow:
    """A note the Archivist suggests, waiting for the admin."""

    id: int
    discord_user_id: str
    user_label: str
    note: str
    reliability: float
    percent: str
    created: str


@dataclass
class Review:
    need_approval: bool
    suggestions: list[SuggestionRow]


def _review(session: Session, bot: Bot) -> Review:
    rows = user_notes.suggestions(session=session, bot_id=bot.id or 0, limit=SUGGESTION_LIMIT)
    names = discord_users.display_names(session=session, bot_id=bot.id or 0, user_ids=[r.discord_user_id for r in rows])
    return Review(need_approval=bool(bot.notes_need_approval), suggestions=[
        SuggestionRow(id=r.id or 0, discord_user_id=r.discord_user_id,
                      user_label=names.get(r.discord_user_id) or r.discord_user_id, note=r.note,
                      reliability=r.reliability, percent=f"{round(r.reliability * 100)}%",
                      created=r.created_at.strftime("%Y-%m-%d %H:%M")) for r in rows])


def load_review(token: str, bot_id: int) -> Review:
    return run_for_bot(token, bot_id, lambda session, _user, bot: _review(session, bot), admin=True)


def change_review(token: str, bot_id: int, change: Any) -> Review:
    """``change(session, bot)`` as an admin, then the review again (one transaction)."""

    def work(session: Session, user: AppUser, bot: Bot) -> Review:
        change(session, bot)
        logger.info("User %s reviewed the notes of bot %s", user.username, bot.id)
        return _review(session, bot)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


def _own_note(session: Session, bot: Bot, note_id: int, user_id: str) -> None:
    note = user_notes.get_note(session=session, note_id=note_id)
    if note.bot_id != bot.id or note.discord_user_id != user_id or note.status != user_notes.ACTIVE:
        raise NotFoundError(f"no user note numbered {note_id}")


class ReviewState(KnowledgeState):
    """Suggestions, the approval switch and the note being edited, on the open bot's Knowledge Base."""

    need_approval: bool = False
    suggestions: list[SuggestionRow] = []
    editing_kind: str = ""  # "note" or "suggestion"
    editing_id: int = 0
    edit_text: str = ""
    edit_error: str = ""

    def _show_review(self, review: Review) -> None:
        self.need_approval, self.suggestions = review.need_approval, review.suggestions

    @rx.event
    async def load_review(self):
        if not self.bot_ready:
            return None
        try:
            self._show_review(await asyncio.to_thread(load_review, self.session_token, self.current_bot_id))
        except Exception as exc:
            self.kb_error = user_message(exc)
        return None

    @rx.event
    async def set_need_approval(self, value: bool):
        def change(session: Session, bot: Bot) -> None:
            bots_service.update_bot(bot, {"notes_need_approval": bool(value)}, session=session)

        try:
            self._show_review(await asyncio.to_thread(change_review, self.session_token, self.current_bot_id, change))
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        return rx.toast.success("The Archivist's notes now wait for your approval." if value
                                else "The Archivist's notes are now saved at once.")

    async def _apply(self, change: Any) -> None:
        """``change`` (see :func:`change_review`), then the review, the users and the open user afresh."""
        self._show_review(await asyncio.to_thread(change_review, self.session_token, self.current_bot_id, change))
        await self._reload_users()
        if self.selected:
            self._show_detail(await asyncio.to_thread(load_detail, self.session_token, self.current_bot_id,
                                                      self.selected))

    async def _review_change(self, change: Any, done: str):
        try:
            await self._apply(change)
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        return rx.toast.success(done)

    @rx.event
    async def accept(self, note_id: int):
        def change(session: Session, bot: Bot) -> None:
            user_notes.accept_suggestion(session=session, bot_id=bot.id or 0, note_id=int(note_id))

        return await self._review_change(change, "Note accepted: the bot knows it from its next message.")

    @rx.event
    async def dismiss(self, note_id: int):
        def change(session: Session, bot: Bot) -> None:
            user_notes.dismiss_suggestion(session=session, bot_id=bot.id or 0, note_id=int(note_id))

        return await self._review_change(change, "Suggestion dismissed: it will not be suggested again.")

    @rx.event
    def start_edit(self, kind: str, note_id: int, text: str) -> None:
        self.editing_kind, self.editing_id, self.edit_text, self.edit_error = kind, int(note_id), text, ""

    @rx.event
    def set_edit_text(self, value: str) -> None:
        self.edit_text = value

    @rx.event
    def cancel_edit(self) -> None:
        self.editing_kind, self.editing_id, self.edit_error = "", 0, ""

    @rx.event
    async def save_edit(self, _form: dict[str, Any] | None = None):
        """Save the edited note, or accept the edited suggestion."""
        kind, note_id, text, user_id = self.editing_kind, self.editing_id, self.edit_text, self.selected

        def change(session: Session, bot: Bot) -> None:
            if kind == SUGGESTION:
                user_notes.accept_suggestion(session=session, bot_id=bot.id or 0, note_id=note_id, note=text)
            else:
                _own_note(session, bot, note_id, user_id)
                user_notes.update_note(session=session, note_id=note_id, note=text)

        try:
            await self._apply(change)
        except Exception as exc:
            self.edit_error = user_message(exc)  # the text stays in the box
            return None
        self.editing_kind, self.editing_id, self.edit_error = "", 0, ""
        return rx.toast.success("Suggestion accepted as edited." if kind == SUGGESTION else "Note saved.")


# --------------------------------------------------------------------------- components
