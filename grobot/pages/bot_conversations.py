"""The Conversations tab (admins): what a bot said on Discord. Its guild channels, threads and DMs,
the most recent first, optionally only those one user wrote in; the messages of the one opened,
each person by name, linked to what the bot knows of them. The address holds the user and the
conversation (``?user=<Discord id>&c=<conversation id>``), so a link opens the same view.
"""

from __future__ import annotations

import reflex as rx

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import CONVERSATIONS
from grobot.components.empty_state import empty_state
from grobot.components.formatting import counted
from grobot.components.list_item import list_item
from grobot.components.long_text import clamped_text
from grobot.components.safe_text import safe_markdown, safe_text
from grobot.pages.bot_conversations_state import EVERYONE, ConversationRow, ConversationsState, LineRow

# --------------------------------------------------------------------------- components

MUTED = rx.color("gray", 11)


def people_filter() -> rx.Component:
    return rx.select.root(
        rx.select.trigger(placeholder="Everyone", width="100%", aria_label="Conversations of"),
        rx.select.content(
            rx.select.item("Everyone", value=EVERYONE),
            rx.foreach(ConversationsState.people, lambda p: rx.select.item(p.name, value=p.id)),
        ),
        value=ConversationsState.user_filter,
        on_change=ConversationsState.filter_user,
    )


def conversation_item(row: ConversationRow) -> rx.Component:
    active = ConversationsState.selected == row.id
    return list_item(
        rx.hstack(
            rx.icon(rx.match(row.kind, ("DM", "mail"), ("thread", "messages-square"), "hash"), size=14,
                    color=MUTED, min_width="14px"),
            safe_text(row.title, size="2", weight="medium", truncate=True),
            spacing="2", align="center", min_width="0",
        ),
        rx.text(counted(row.messages, "message"), " · ", counted(row.people, "person", "people"), " · ",
                row.last, size="1", color=MUTED),
        active=active,
        on_click=ConversationsState.open_conversation(row.id),
        data_conversation=row.id,
    )


def conversation_list_card() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.text("Conversations of", size="1", weight="medium"),
            people_filter(),
            rx.cond(
                ConversationsState.conversations.length() > 0,  # type: ignore[attr-defined]
                rx.vstack(rx.foreach(ConversationsState.conversations, conversation_item), spacing="1", width="100%",
                          max_height="32rem", overflow_y="auto"),
                rx.text("No Discord conversations yet. Channels, threads and DMs where the bot was written to "
                        "show up here.", size="2", color=MUTED),
            ),
            spacing="3",
            width="100%",
        ),
        width="100%",
    )


def line_view(line: LineRow) -> rx.Component:
    is_user = line.role == "user"
    author = rx.cond(
        is_user,
        rx.link(safe_text(line.author, size="1", weight="medium"),
                href=f"/bots/{ConversationsState.current_bot_id}/knowledge?user={line.author_id}",
                title="What the bot knows of this person"),
        safe_text(line.author, size="1", weight="medium", color=rx.color("accent", 11)),
    )
    return rx.box(
        rx.hstack(author, rx.text(line.time, size="1", color=MUTED), spacing="2", align="baseline", wrap="wrap"),
        rx.cond(is_user, clamped_text(line.content, size="2", white_space="pre-wrap"), safe_markdown(line.content)),
        padding="0.5rem 0.75rem",
        border_radius="8px",
        background=rx.cond(is_user, "transparent", rx.color("gray", 3)),
        width="100%",
        overflow_wrap="anywhere",
        data_testid="conversation-line",
        data_role=line.role,
    )


def conversation_view() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                safe_text(ConversationsState.selected_title, size="3", weight="medium", truncate=True),
                rx.spacer(),
                rx.icon_button(rx.icon("x", size=14), variant="ghost", size="1", aria_label="Close conversation",
                               on_click=ConversationsState.close_conversation),
                width="100%",
                align="center",
            ),
            rx.divider(),
            rx.vstack(rx.foreach(ConversationsState.lines, line_view), spacing="2", width="100%"),
            spacing="3",
            width="100%",
        ),
        width="100%",
        data_testid="conversation",
    )


def nothing_open() -> rx.Component:
    """Beside the list while no conversation is open: pick one, or (an empty list) nothing to pick yet."""
    return rx.cond(
        ConversationsState.conversations.length() > 0,  # type: ignore[attr-defined]
        empty_state("messages-square", "Pick a conversation",
                    "Choose a channel, thread or DM in the list to read what was said, "
                    "or narrow the list to one person."),
        empty_state("messages-square", "Nothing to read yet",
                    "When people write to the bot on Discord, their conversations can be read here."),
    )


def conversations_tab() -> rx.Component:
    return rx.cond(
        ConversationsState.conv_loaded,
        rx.vstack(
            rx.cond(ConversationsState.conv_error != "",
                    rx.callout(ConversationsState.conv_error, icon="triangle-alert", color_scheme="red", width="100%")),
            rx.grid(
                conversation_list_card(),
                rx.cond(ConversationsState.selected > 0, conversation_view(), nothing_open()),
                columns=rx.breakpoints(initial="minmax(0, 1fr)", md="20rem minmax(0, 1fr)"),
                spacing="5",
                width="100%",
                align_items="start",
            ),
            spacing="4",
            width="100%",
        ),
        rx.center(rx.spinner(size="3"), height="8rem", width="100%"),
    )


def conversations_page() -> rx.Component:
    return bot_page(CONVERSATIONS, conversations_tab())
