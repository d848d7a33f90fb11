"""The Memory tab (admins): the bot's long-term memories, newest first with "load more", a
semantic search, a filter by Discord user, adding a memory by hand and deleting memories.

The memories live in the bot worker (served on its link) (``grobot.core.services.memories``).
Without a running worker the tab says how to start it, and stays usable otherwise.
"""

from __future__ import annotations

import reflex as rx

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import MEMORY
from grobot.components.empty_state import empty_state
from grobot.components.forms import confirm_dialog, error_text
from grobot.components.layout import narrow_or_wide
from grobot.components.long_text import clamped_text
from grobot.core.memory import MAX_MEMORY_CHARS
from grobot.pages.bot_memory_state import MemoryRow, MemoryState

WORKER_COMMAND = "python -m grobot worker"
UNAVAILABLE_TEXT = "The memory service runs in the bot worker: start it with"


# --------------------------------------------------------------------------- components

MUTED = rx.color("gray", 11)


def meta_item(icon: str, value: rx.Var, title: str) -> rx.Component:
    return rx.cond(
        value != "",
        rx.hstack(rx.icon(icon, size=12), rx.text(value, size="1"), spacing="1", align="center", color=MUTED,
                  title=title),
    )


def memory_item(row: MemoryRow) -> rx.Component:
    return rx.hstack(
        rx.vstack(
            clamped_text(row.text, size="2", word_break="break-word"),
            rx.hstack(
                rx.cond(row.kind != "", rx.badge(row.kind, size="1", variant="soft", color_scheme="indigo")),
                rx.cond(row.relevance != "", rx.badge(row.relevance, " relevant", size="1", variant="soft",
                                                      color_scheme="green", data_testid="relevance")),
                rx.cond(row.user_id != "",
                        rx.link(meta_item("user-round", row.user, "What the bot knows of this Discord user"),
                                href=f"/bots/{MemoryState.current_bot_id}/knowledge?user={row.user_id}",
                                underline="hover")),
                meta_item("hash", row.channel_id, "Channel"),
                meta_item("clock", row.time, "Time (UTC)"),
                meta_item("pen-line", row.source, "Source"),
                spacing="3",
                align="center",
                wrap="wrap",
            ),
            spacing="1",
            flex="1",
            min_width="0",
        ),
        rx.icon_button(rx.icon("trash-2", size=14), variant="ghost", color_scheme="red", size="1",
                       aria_label="Delete memory", title="Delete memory",
                       on_click=MemoryState.ask_delete(row.id, row.text)),
        align="start",
        spacing="3",
        width="100%",
        padding="0.6rem 0",
        border_bottom=f"1px solid {rx.color('gray', 4)}",
        data_memory=row.id,
    )


def unavailable_callout() -> rx.Component:
    """The worker is unreachable: what to start, and Try again. High contrast (amber 12 text):
    amber 11 on the amber background measures below 4.5:1 in light mode."""
    return rx.callout.root(
        rx.callout.icon(rx.icon("plug-zap")),
        rx.vstack(
            rx.callout.text(UNAVAILABLE_TEXT, " ", rx.code(WORKER_COMMAND, high_contrast=True), "."),
            rx.callout.text("The bot's memories are kept by the worker; the rest of this page works without it.",
                            size="1"),
            rx.button(rx.icon("refresh-cw", size=14), "Try again", variant="soft", size="1", high_contrast=True,
                      on_click=MemoryState.retry),
            spacing="2",
            align="start",
        ),
        color_scheme="amber",
        high_contrast=True,
        width="100%",
        data_testid="memory-unavailable",
    )


# Narrow screens: each form takes a line, its box shares it with the buttons (which wrap when they must);
# wide screens: the forms side by side, the boxes at their own width.
FILTER_FORM = {"width": rx.breakpoints(initial="100%", md="auto"), "max_width": "100%"}


def shrinking_input(wide: str) -> dict[str, object]:
    return {"flex": rx.breakpoints(initial="1 1 12rem", md="0 0 auto"), "min_width": "0",
            "width": rx.breakpoints(initial="auto", md=wide)}


def filter_bar() -> rx.Component:
    return rx.flex(
        rx.form(
            rx.hstack(
                rx.input(rx.input.slot(rx.icon("sparkles", size=14)), value=MemoryState.query,
                         on_change=MemoryState.set_query, placeholder="Search by meaning…",
                         aria_label="Search memories", **shrinking_input("20rem")),
                rx.button("Search", type="submit", variant="soft"),
                rx.cond(MemoryState.searched, rx.button("Clear search", type="button", variant="ghost",
                                                        color_scheme="gray", on_click=MemoryState.clear_search)),
                spacing="2",
                align="center",
                wrap="wrap",
            ),
            on_submit=MemoryState.run_search,
            reset_on_submit=False,
            **FILTER_FORM,
        ),
        rx.form(
            rx.hstack(
                rx.input(rx.input.slot(rx.icon("user-round", size=14)), value=MemoryState.filter_input,
                         on_change=MemoryState.set_filter_input, placeholder="Discord user id",
                         aria_label="Filter by Discord user id", **shrinking_input("14rem")),
                rx.button("Filter", type="submit", variant="soft"),
                rx.cond(MemoryState.user_filter != "",
                        rx.button("All users", type="button", variant="ghost", color_scheme="gray",
                                  on_click=MemoryState.clear_filter)),
                spacing="2",
                align="center",
                wrap="wrap",
            ),
            on_submit=MemoryState.apply_filter,
            reset_on_submit=False,
            **FILTER_FORM,
        ),
        rx.cond(MemoryState.filter_error != "",
                error_text(MemoryState.filter_error, size="1", width="100%")),
        rx.cond(MemoryState.search_error != "",
                error_text(MemoryState.search_error, size="1", width="100%")),
        gap="0.75rem",
        wrap="wrap",
        align="center",
        width="100%",
    )


def search_results() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(rx.text("Closest in meaning to “", MemoryState.query, "”", weight="medium"),
                      rx.badge(MemoryState.result_count, variant="soft", color_scheme="gray"),
                      spacing="2", align="center"),
            rx.cond(MemoryState.result_count > 0,
                    rx.vstack(rx.foreach(MemoryState.results, memory_item), spacing="0", width="100%"),
                    rx.text("No memory is close enough in meaning.", size="2", color=MUTED)),
            spacing="3",
            width="100%",
        ),
        width="100%",
        data_testid="search-results",
    )


def memory_list() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.cond(MemoryState.user_filter != "",
                        rx.text("Memories of user ", MemoryState.user_filter, weight="medium"),
                        rx.text("All memories", weight="medium")),
                rx.badge(MemoryState.total, variant="soft", color_scheme="gray", data_testid="memory-count"),
                rx.spacer(),
                rx.cond(MemoryState.user_filter != "",
                        rx.button(rx.icon("user-x", size=14), "Delete all of this user's memories", variant="soft",
                                  color_scheme="red", size="1", on_click=MemoryState.ask_delete_user)),
                spacing="2",
                align="center",
                width="100%",
            ),
            rx.cond(
                MemoryState.shown_count > 0,
                rx.vstack(rx.foreach(MemoryState.rows, memory_item), spacing="0", width="100%"),
                rx.cond(MemoryState.user_filter != "",
                        rx.text("The bot keeps no memory of this user.", size="2", color=MUTED),
                        empty_state("brain", "No memories yet",
                                    "The bot remembers what matters from its conversations. You can also add a "
                                    "memory by hand below.")),
            ),
            rx.hstack(
                rx.text(f"{MemoryState.shown_count} of {MemoryState.total} shown, newest first", size="1",
                        color=MUTED),
                rx.cond(MemoryState.has_more,
                        rx.button("Load more", variant="soft", size="1", on_click=MemoryState.load_more)),
                justify="between",
                align="center",
                width="100%",
            ),
            spacing="3",
            width="100%",
        ),
        width="100%",
    )


def add_form_actions() -> rx.Component:
    """The user id box and Add memory: side by side on wide screens; on a phone the box takes the
    whole width (its placeholder reads in full) with the button under it, on the right."""
    return rx.flex(
        rx.input(value=MemoryState.add_user_id, on_change=MemoryState.set_add_user_id,
                 placeholder="Discord user id (optional)", aria_label="Memory user id",
                 width=narrow_or_wide("100%", "16rem"), max_width="100%"),
        rx.button(rx.icon("plus", size=14), "Add memory", type="submit", variant="soft"),
        flex_direction=narrow_or_wide("column", "row"),
        align_items=narrow_or_wide("end", "center"),
        justify_content="space-between",
        spacing="2",
        width="100%",
    )


def add_form() -> rx.Component:
    return rx.card(
        rx.form(
            rx.vstack(
                rx.text("Add a memory", weight="medium"),
                rx.text_area(value=MemoryState.add_text, on_change=MemoryState.set_add_text, rows="2", width="100%",
                             max_length=MAX_MEMORY_CHARS, aria_label="New memory",
                             placeholder="A fact the bot should remember, e.g. The team meets on Mondays at 10"),
                add_form_actions(),
                rx.cond(MemoryState.add_error != "",
                        error_text(MemoryState.add_error, size="2")),
                spacing="2",
                width="100%",
            ),
            on_submit=MemoryState.add_memory,
            reset_on_submit=False,
            width="100%",
        ),
        width="100%",
    )


def dialogs() -> rx.Component:
    return rx.fragment(
        confirm_dialog(open_=MemoryState.confirm_id != "", title="Delete this memory?",
                       message=MemoryState.confirm_text, confirm_label="Delete memory",
                       on_confirm=MemoryState.delete_memory, on_cancel=MemoryState.cancel_delete),
        confirm_dialog(open_=MemoryState.confirm_user, title="Delete all memories of this user?",
                       message=f"Every memory the bot keeps of Discord user {MemoryState.user_filter} is deleted. "
                       "This cannot be undone.",
                       confirm_label="Delete all", on_confirm=MemoryState.delete_user_memories,
                       on_cancel=MemoryState.cancel_delete_user),
    )


def memory_tab() -> rx.Component:
    return rx.cond(
        MemoryState.mem_loaded,
        rx.vstack(
            rx.cond(MemoryState.unavailable, unavailable_callout()),
            rx.cond(MemoryState.mem_error != "",
                    rx.callout(MemoryState.mem_error, icon="triangle-alert", color_scheme="red", width="100%")),
            filter_bar(),
            rx.cond(MemoryState.searched, search_results()),
            rx.cond(~MemoryState.unavailable, memory_list()),
            add_form(),
            dialogs(),
            spacing="4",
            width="100%",
        ),
        rx.center(rx.spinner(size="3"), height="8rem", width="100%"),
    )


def memory_page() -> rx.Component:
    return bot_page(MEMORY, memory_tab())
