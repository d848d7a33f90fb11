"""The Knowledge Base tab (admins): what the bot knows of its Discord users
(the view; its state: :mod:`grobot.pages.bot_knowledge_state`).

Everyone who wrote to the bot on Discord is listed, with anyone it has directives or notes
for. Per user: the admin's directives (how the bot should treat them) and the notes (facts
with a reliability, written by the bot's tools, its Archivist, or an admin; editable); "forget
this user" deletes all of it, memories included. With the bot's "notes wait for approval" switch
on, the notes its Archivist takes are suggestions: the admin accepts them (as they are, or edited)
or dismisses them (they are never suggested again). Any note the bot knows can be edited in place.
"""

from __future__ import annotations

from typing import Any

import reflex as rx

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import KNOWLEDGE
from grobot.components.empty_state import empty_state
from grobot.components.forms import error_text, switch_label
from grobot.components.list_item import list_item
from grobot.components.long_text import clamped_text, token_meter
from grobot.components.safe_text import safe_text
from grobot.pages.bot_knowledge_state import LIVE_REFRESH_MS, NOTE, SUGGESTION, KnowledgeState, NoteRow, ReviewState, SuggestionRow, UserRow


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
