"""The Files tab's documents (admins): each file's state in the bot's index, and the bot's documents
settings (on or off, the threshold, the limits), with "Index again".

The supervisor's indexer does the work; this page shows where each file stands, asks the worker
to index right after an upload or a deletion, and follows the states while any file waits.
"""

from __future__ import annotations

import reflex as rx

from grobot.components.forms import field, section, switch_label
from grobot.components.unsaved import unsaved_guard, unsaved_marker
from grobot.core.services import documents as documents_service
from grobot.pages.bot_documents_state import FOLLOW_MS, DocumentsState

# --------------------------------------------------------------------------- components


def file_state(path: rx.Var) -> rx.Component:
    """The line under a file's name: indexed with how many passages, the error in one line, or waiting."""
    state = DocumentsState.doc_states[path]
    return rx.text(
        rx.cond(state == documents_service.INDEXING, rx.spinner(size="1", display="inline-block",
                                                                 vertical_align="-2px", margin_right="4px")),
        DocumentsState.doc_lines[path],
        size="1",
        color=rx.match(state, (documents_service.FAILED, rx.color("red", 11)),
                       (documents_service.INDEXED, rx.color("grass", 11)), rx.color("gray", 11)),
        data_testid="document-state",
        word_break="break-word",
    )


def documents_card() -> rx.Component:
    """The bot's documents settings, above its files."""
    return section(
        "Answers from documents",
        "The bot answers from its files: each is cut into passages, and those closest to a question go into "
        "the answer's prompt, with their source named in the reply.",
        unsaved_marker(DocumentsState.documents_dirty),
        unsaved_guard(),
        rx.moment(interval=FOLLOW_MS, format="HH:mm:ss", on_change=DocumentsState.follow, display="none"),
        rx.cond(DocumentsState.waiting_without_worker,
                rx.callout("No bot worker is running: the files are indexed when it starts (python -m grobot worker).",
                           icon="info", color_scheme="amber", width="100%", data_testid="documents-no-worker")),
        rx.cond(DocumentsState.documents_error != "",
                rx.callout(DocumentsState.documents_error, icon="triangle-alert", color_scheme="red", width="100%",
                           data_testid="documents-error")),
        rx.cond(
            DocumentsState.enabled,
            rx.flex(
                rx.box(field("Threshold", rx.input(id="documents-threshold", value=DocumentsState.threshold,
                                            on_change=DocumentsState.set_threshold, width="7rem", inputmode="decimal"),
                      input_id="documents-threshold",
                      help_text="0 to 1: how close a passage must be to a question to be used (default 0.3)"),
                       width="15rem", max_width="100%"),
                rx.box(field("Largest file (MB)", rx.input(id="documents-max-file", value=DocumentsState.max_file_mb,
                                                    on_change=DocumentsState.set_max_file_mb, width="7rem",
                                                    inputmode="decimal"),
                      input_id="documents-max-file", help_text="larger files are not indexed"),
                       width="11rem", max_width="100%"),
                rx.box(field("Most passages", rx.input(id="documents-max-passages", value=DocumentsState.max_passages,
                                                on_change=DocumentsState.set_max_passages, width="8rem",
                                                inputmode="numeric"),
                      input_id="documents-max-passages", help_text="the bot keeps at most this many"),
                       width="12rem", max_width="100%"),
                rx.hstack(
                    rx.button("Save", on_click=DocumentsState.save_limits, loading=DocumentsState.saving,
                              disabled=~DocumentsState.documents_dirty),
                    rx.button("Index again", variant="soft", color_scheme="gray", on_click=DocumentsState.reindex),
                    spacing="2",
                    align_self="end",
                ),
                gap="1rem",
                wrap="wrap",
                width="100%",
                align="start",
            ),
        ),
        actions=switch_label(
            rx.switch(checked=DocumentsState.enabled, on_change=DocumentsState.set_documents_enabled,
                      aria_label="Answers from documents"),
            rx.text(rx.cond(DocumentsState.enabled, "On", "Off"), size="2"),
        ),
    )
