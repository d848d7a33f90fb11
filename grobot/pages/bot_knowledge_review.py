"""The Knowledge Base's review parts: the Archivist's suggestions and editing notes.

With the bot's "notes wait for approval" switch on, the notes its Archivist takes are
suggestions: the admin accepts them (as they are, or edited) or dismisses them (they are
never suggested again). Any note the bot knows can be edited in place.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.components.forms import error_text, switch_label
from grobot.components.long_text import clamped_text
from grobot.components.safe_text import safe_text
from grobot.core.errors import NotFoundError
from grobot.core.models import AppUser, Bot
from grobot.core.services import bots as bots_service
from grobot.core.services import discord_users, user_notes
from grobot.pages.bot_knowledge_state import KnowledgeState, NoteRow, load_detail
from grobot.state.bot_page import run_for_bot, user_message

logger = logging.getLogger(__name__)

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


def _editor(kind: str, note_id: Any) -> rx.Component:
    return rx.form(
        rx.vstack(
            rx.input(value=ReviewState.edit_text, on_change=ReviewState.set_edit_text, aria_label="Edit note",
                     width="100%", auto_focus=True),
            rx.cond(ReviewState.edit_error != "", error_text(ReviewState.edit_error, size="1")),
            rx.hstack(rx.button("Save" if kind == NOTE else "Accept edited", type="submit", size="1"),
                      rx.button("Cancel", type="button", size="1", variant="soft", color_scheme="gray",
                                on_click=ReviewState.cancel_edit), spacing="2"),
            spacing="1", width="100%",
        ),
        on_submit=ReviewState.save_edit, reset_on_submit=False, width="100%",
    )


def _editing(kind: str, note_id: Any) -> Any:
    return (ReviewState.editing_kind == kind) & (ReviewState.editing_id == note_id)


def note_text(note: NoteRow) -> rx.Component:
    """A note's text, or its editor while the admin edits it."""
    return rx.cond(_editing(NOTE, note.id), _editor(NOTE, note.id), clamped_text(note.note, size="2", data_note_text=""))


def note_edit_button(note: NoteRow) -> rx.Component:
    return rx.icon_button(rx.icon("pencil", size=14), variant="ghost", size="1", aria_label="Edit note",
                          title="Edit note", on_click=ReviewState.start_edit(NOTE, note.id, note.note))


def suggestion_item(row: SuggestionRow) -> rx.Component:
    return rx.hstack(
        rx.badge(row.percent, variant="soft", color_scheme="gray", min_width="3.25rem", justify_content="center",
                 title="Reliability"),
        rx.vstack(
            rx.cond(_editing(SUGGESTION, row.id), _editor(SUGGESTION, row.id),
                    clamped_text(row.note, size="2", data_suggestion_text="")),
            rx.hstack(rx.text("about ", size="1", color=rx.color("gray", 11)),
                      safe_text(row.user_label, size="1", color=rx.color("gray", 11)),
                      rx.text(f"· {row.created}", size="1", color=rx.color("gray", 11)), spacing="1"),
            spacing="0", flex="1", min_width="0", overflow_wrap="anywhere",
        ),
        rx.icon_button(rx.icon("check", size=14), variant="soft", color_scheme="green", size="1",
                       aria_label="Accept note", title="Accept", on_click=ReviewState.accept(row.id)),
        rx.icon_button(rx.icon("pencil", size=14), variant="soft", size="1", aria_label="Edit and accept note",
                       title="Edit, then accept", on_click=ReviewState.start_edit(SUGGESTION, row.id, row.note)),
        rx.icon_button(rx.icon("x", size=14), variant="soft", color_scheme="red", size="1",
                       aria_label="Dismiss note", title="Dismiss", on_click=ReviewState.dismiss(row.id)),
        align="start", spacing="2", width="100%", padding="0.4rem 0",
        border_bottom=f"1px solid {rx.color('gray', 4)}", data_suggestion=row.id,
    )


def review_card() -> rx.Component:
    """The approval switch and, when there are any, the suggestions waiting for the admin."""
    return rx.card(
        rx.vstack(
            switch_label(
                rx.vstack(
                    rx.text("Notes wait for approval", weight="medium"),
                    rx.text("When on, the notes the bot takes about people are suggestions here until you accept "
                            "them; when off, they are saved at once.", size="1", color=rx.color("gray", 11)),
                    spacing="0", flex="1",
                ),
                rx.switch(checked=ReviewState.need_approval, on_change=ReviewState.set_need_approval,
                          aria_label="Notes wait for approval"),
                width="100%",
            ),
            rx.cond(
                ReviewState.suggestions.length() > 0,  # type: ignore[attr-defined]
                rx.vstack(
                    rx.hstack(rx.text("Suggested notes", weight="medium"),
                              rx.badge(ReviewState.suggestions.length(), variant="soft",  # type: ignore[attr-defined]
                                       color_scheme="amber"), spacing="2", align="center"),
                    rx.vstack(rx.foreach(ReviewState.suggestions, suggestion_item), spacing="0", width="100%",
                              max_height="20rem", overflow_y="auto"),
                    spacing="2", width="100%",
                ),
            ),
            spacing="3", width="100%",
        ),
        width="100%",
    )
