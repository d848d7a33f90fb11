"""The Knowledge Base tab (admins): what the bot knows of its Discord users.

Everyone who wrote to the bot on Discord is listed, with anyone it has directives or notes
for. Per user: the admin's directives (how the bot should treat them) and the notes (facts
with a reliability, written by the bot's tools, its Archivist, or an admin; editable); "forget
this user" deletes all of it, memories included. The Archivist's suggestions and the switch
that makes its notes wait for approval live in ``bot_knowledge_review``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import KNOWLEDGE
from grobot.components.empty_state import empty_state
from grobot.components.forms import error_text
from grobot.components.list_item import list_item
from grobot.components.long_text import context_use, token_meter
from grobot.components.safe_text import safe_text
from grobot.components.url_state import replace_url
from grobot.core.errors import MemoryUnavailable, NotFoundError, ValidationError
from grobot.core.llm.budget import text_tokens
from grobot.core.models import Bot
from grobot.core.services import discord_users, user_notes
from grobot.core.services.users import NotSignedIn
from grobot.core.wording import counted
from grobot.pages.bot_knowledge_users import NoteRow, UserDetail, UserRow, change_user, clean_user_id, forget, load_detail, load_users
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, user_message

logger = logging.getLogger(__name__)

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
        from grobot.pages.bot_knowledge_review import ReviewState

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


def user_item(row: UserRow) -> rx.Component:
    active = KnowledgeState.selected == row.discord_user_id
    return list_item(
        rx.hstack(
            rx.center(rx.icon("user-round", size=14, color=rx.color("gray", 11)), width="1.75rem", height="1.75rem",
                      min_width="1.75rem", border_radius="50%", background=rx.color("gray", 4)),
            rx.vstack(
                safe_text(rx.cond(row.display_name != "", row.display_name, row.discord_user_id), size="2",
                        weight="medium", truncate=True),
                rx.hstack(
                    rx.text(row.note_count, rx.cond(row.note_count == 1, " note", " notes"), size="1", color=rx.color("gray", 11)),
                    rx.cond(row.message_count > 0,
                            rx.text(row.message_count, rx.cond(row.message_count == 1, " message", " messages"), size="1",
                                    color=rx.color("gray", 11))),
                    rx.cond(row.suggestion_count > 0, rx.badge(row.suggestion_count, " suggested", size="1",
                                                               variant="soft", color_scheme="amber")),
                    rx.cond(row.has_directives, rx.badge("directives", size="1", variant="soft", color_scheme="indigo")),
                    spacing="2",
                    align="center",
                ),
                spacing="0",
                min_width="0",
            ),
            spacing="2",
            align="center",
        ),
        active=active,
        on_click=KnowledgeState.select_user(row.discord_user_id),
        data_user=row.discord_user_id,
    )


def user_list() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.form(rx.input(rx.input.slot(rx.icon("search", size=14)), name="search", placeholder="Search users…",
                             aria_label="Search users", width="100%"),
                    on_submit=KnowledgeState.apply_search, width="100%"),
            rx.cond(
                KnowledgeState.user_count > 0,
                rx.vstack(rx.foreach(KnowledgeState.users, user_item), spacing="1", width="100%", max_height="28rem",
                          overflow_y="auto"),
                rx.text("Nobody yet. Everyone who writes to the bot on Discord is listed here; you can also open a "
                        "user by id below.",
                        size="2", color=rx.color("gray", 11)),
            ),
            rx.divider(),
            rx.form(
                rx.vstack(
                    rx.text("Open a user by Discord id", size="1", weight="medium"),
                    rx.hstack(rx.input(value=KnowledgeState.lookup_id, on_change=KnowledgeState.set_lookup_id,
                                       placeholder="e.g. 123456789012345678", aria_label="Discord user id",
                                       width="100%"),
                              rx.button("Open", type="submit", variant="soft"), spacing="2", width="100%"),
                    rx.cond(KnowledgeState.lookup_error != "",
                            error_text(KnowledgeState.lookup_error, size="1")),
                    spacing="1",
                    width="100%",
                ),
                on_submit=KnowledgeState.open_lookup,
                width="100%",
            ),
            spacing="3",
            width="100%",
        ),
        width="100%",
    )


def note_item(note: NoteRow) -> rx.Component:
    from grobot.pages.bot_knowledge_review import note_edit_button, note_text

    color = rx.cond(note.reliability >= 0.75, "green", rx.cond(note.reliability >= 0.4, "amber", "red"))
    return rx.hstack(
        rx.badge(note.percent, color_scheme=color, variant="soft", min_width="3.25rem", justify_content="center",
                 title="Reliability"),
        rx.vstack(
            note_text(note),
            rx.text(f"{note.source} · {note.updated}", size="1", color=rx.color("gray", 11)),
            spacing="0",
            flex="1",
            min_width="0",
            overflow_wrap="anywhere",
        ),
        note_edit_button(note),
        rx.icon_button(rx.icon("trash-2", size=14), variant="ghost", color_scheme="red", size="1",
                       aria_label="Delete note", title="Delete note", on_click=KnowledgeState.delete_note(note.id)),
        align="start",
        spacing="3",
        width="100%",
        padding="0.5rem 0",
        border_bottom=f"1px solid {rx.color('gray', 4)}",
        data_note=note.id,
    )


def forget_dialog() -> rx.Component:
    return rx.alert_dialog.root(
        rx.alert_dialog.trigger(rx.button(rx.icon("user-x", size=14), "Forget this user", variant="soft",
                                          color_scheme="red", size="2")),
        rx.alert_dialog.content(
            rx.alert_dialog.title("Forget this user?"),
            rx.alert_dialog.description(
                "The directives, every note and the bot's memories about user ", KnowledgeState.selected,
                " are deleted. Conversations stay. This cannot be undone.", size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button("Forget user", color_scheme="red",
                                                 on_click=KnowledgeState.forget_user)),
                spacing="3", justify="end", margin_top="1rem",
            ),
        ),
        open=KnowledgeState.confirm_forget,
        on_open_change=KnowledgeState.set_confirm_forget,
    )


def user_detail() -> rx.Component:
    return rx.vstack(
        rx.hstack(
            rx.vstack(
                rx.heading(rx.cond(KnowledgeState.selected_name != "", KnowledgeState.selected_name,
                                   "Discord user"), size="4", as_="h2"),
                rx.text("Discord id ", KnowledgeState.selected, size="1", color=rx.color("gray", 11)),
                spacing="0",
                min_width="0",
            ),
            rx.spacer(),
            forget_dialog(),
            align="start",
            width="100%",
            wrap="wrap",
        ),
        rx.card(
            rx.vstack(
                rx.text("Directives", weight="medium"),
                rx.text("How the bot should treat this person. Added to its context whenever they write.", size="1",
                        color=rx.color("gray", 11)),
                rx.text_area(value=KnowledgeState.directives, on_change=KnowledgeState.set_directives, rows="4",
                             width="100%", placeholder="e.g. Answer in French. They are a premium customer.",
                             aria_label="Directives"),
                token_meter(KnowledgeState.directives_meter, KnowledgeState.directives_level,
                            testid="directives-tokens"),
                rx.cond(KnowledgeState.directives_error != "",
                        error_text(KnowledgeState.directives_error, size="2")),
                rx.hstack(rx.spacer(), rx.button("Save directives", on_click=KnowledgeState.save_directives,
                                                 disabled=~KnowledgeState.directives_dirty), width="100%"),
                spacing="2",
                width="100%",
            ),
            width="100%",
        ),
        rx.card(
            rx.vstack(
                rx.hstack(rx.text("Notes", weight="medium"),
                          rx.badge(KnowledgeState.notes.length(), variant="soft", color_scheme="gray"),  # type: ignore[attr-defined]
                          spacing="2", align="center"),
                rx.cond(
                    KnowledgeState.notes.length() > 0,  # type: ignore[attr-defined]
                    rx.vstack(rx.foreach(KnowledgeState.notes, note_item), spacing="0", width="100%"),
                    rx.text("No notes about this user yet.", size="2", color=rx.color("gray", 11)),
                ),
                rx.form(
                    rx.vstack(
                        rx.input(value=KnowledgeState.note_text, on_change=KnowledgeState.set_note_text,
                                 placeholder="A fact about this user, e.g. Prefers short answers",
                                 aria_label="New note", width="100%"),
                        rx.hstack(
                            rx.text("Reliability", size="1", weight="medium", white_space="nowrap"),
                            rx.slider(value=KnowledgeState.note_reliability, on_change=KnowledgeState.set_note_reliability,
                                      min=0, max=100, step=5, flex="1", min_width="6rem", max_width="12rem",
                                      aria_label="Reliability"),
                            rx.text(KnowledgeState.note_reliability[0], "%", size="1", min_width="2.5rem"),
                            rx.button(rx.icon("plus", size=14), "Add note", type="submit", variant="soft",
                                      margin_left="auto"),
                            align="center",
                            spacing="3",
                            width="100%",
                            wrap="wrap",
                        ),
                        rx.cond(KnowledgeState.note_error != "",
                                error_text(KnowledgeState.note_error, size="2")),
                        spacing="2",
                        width="100%",
                    ),
                    on_submit=KnowledgeState.add_note,
                    reset_on_submit=False,
                    width="100%",
                ),
                spacing="3",
                width="100%",
            ),
            width="100%",
        ),
        spacing="4",
        width="100%",
    )


def knowledge_tab() -> rx.Component:
    from grobot.pages.bot_knowledge_review import ReviewState, review_card

    return rx.cond(
        KnowledgeState.kb_loaded,
        rx.vstack(rx.moment(interval=LIVE_REFRESH_MS, format="HH:mm:ss", display="none",
                            on_change=[KnowledgeState.refresh_live, ReviewState.load_review]),
                  review_card(), rx.grid(
            user_list(),
            rx.cond(
                KnowledgeState.selected != "",
                user_detail(),
                empty_state("book-user", "Pick a user",
                            "Choose someone in the list to see what the bot knows about them, give the bot directives "
                            "for them, or make it forget them."),
            ),
            columns=rx.breakpoints(initial="minmax(0, 1fr)", md="18rem minmax(0, 1fr)"),
            spacing="5",
            width="100%",
            align_items="start",
        ), spacing="4", width="100%"),
        rx.cond(KnowledgeState.kb_error != "",
                rx.callout(KnowledgeState.kb_error, icon="triangle-alert", color_scheme="red", width="100%"),
                rx.center(rx.spinner(size="3"), height="8rem", width="100%")),
    )


def knowledge_page() -> rx.Component:
    return bot_page(KNOWLEDGE, knowledge_tab())
