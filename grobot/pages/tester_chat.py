"""The Test Chat tab: talk to a bot from the web app (admins and testers).

A message is stored as ``pending``; the page then wakes a bot worker's Test Chat runner, which
claims it at once and streams the run's events back (thinking, tool calls and results, answer
text, done or error) while the chain runs: the answer grows on screen as the model writes it.
Without a reachable runner the page reads the stored events instead (a worker that starts later,
one that died). Stop ends the run (the chain closes the model's stream and abandons a running
tool call); Retry sends a failed message again. Each user has their own conversation with each bot.
"""

from __future__ import annotations

import reflex as rx

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import CHAT
from grobot.components.chat_history import COVER_TESTID, chat_history
from grobot.components.forms import confirm_dialog
from grobot.components.safe_text import safe_markdown, safe_text
from grobot.pages.tester_chat_model import ChatModelState, model_line
from grobot.pages.tester_chat_runs import ChatTurn
from grobot.pages.tester_chat_state import IMAGE_UPLOAD_ID, NO_CHANNEL, ChatState, LiveState
from grobot.pages.tester_chat_view import (
    bot_bubble,
    error_text,
    images_row,
    no_messages,
    steps_panel,
    stopped_text,
    user_bubble,
    waiting_notice,
)

__all__ = ["ChatModelState", "ChatState", "LiveState", "chat_page"]

# --------------------------------------------------------------------------- components


def turn_view(turn: ChatTurn) -> rx.Component:
    """A finished exchange (the last one, when it failed or was stopped, offers Retry)."""
    return rx.vstack(
        user_bubble(turn.question, turn.author, turn.sent),
        rx.cond(
            (turn.answer != "") | (turn.error != "") | (turn.steps.length() > 0),  # type: ignore[attr-defined]
            bot_bubble(
                steps_panel(turn.steps, turn.calls),
                rx.cond(turn.answer != "", safe_markdown(turn.answer)),
                images_row(turn.images),
                rx.cond(turn.status == "cancelled", stopped_text(turn.error),
                        rx.cond(turn.error != "", error_text(turn.error, turn.error_detail))),
                rx.cond(ChatState.can_retry & (turn.id == ChatState.last_turn_id),
                        rx.button(rx.icon("rotate-cw", size=14), "Retry", size="1", variant="soft",
                                  on_click=ChatState.retry, loading=ChatState.sending)),
            ),
        ),
        spacing="3",
        width="100%",
        data_turn=turn.id,
    )


def live_turn() -> rx.Component:
    """The message being answered, with the answer as it streams."""
    return rx.cond(
        LiveState.live_id > 0,
        rx.vstack(
            user_bubble(LiveState.live_question, LiveState.username, LiveState.live_sent),
            bot_bubble(
                steps_panel(LiveState.live_steps, open_=True),
                rx.cond(LiveState.live_answer != "", safe_markdown(LiveState.live_answer)),
                images_row(LiveState.live_images),
                rx.cond(
                    LiveState.live_error == "",
                    rx.hstack(rx.spinner(size="1"),
                              rx.text(LiveState.progress_text, size="2", color=rx.color("gray", 11)),
                              spacing="2", align="center", data_testid="answer-progress"),
                    rx.cond(LiveState.live_stopped, stopped_text(LiveState.live_error),
                            error_text(LiveState.live_error, LiveState.live_error_detail)),
                ),
                testid="live-answer",
            ),
            rx.cond(LiveState.waiting_for_worker, waiting_notice()),
            spacing="3",
            width="100%",
        ),
    )


def image_picker() -> rx.Component:
    """Attach an image to the next message: for a model that reads images; for one that does not, the
    button says plainly that it cannot."""
    button = rx.icon_button(rx.icon("image-plus", size=18), type="button", variant="soft", color_scheme="gray",
                            size="3", title="Attach an image", aria_label="Attach an image",
                            loading=ChatState.attaching)
    return rx.cond(
        ChatState.reads_images,
        rx.upload.root(button, id=IMAGE_UPLOAD_ID, multiple=False, max_files=1, no_drag=True,
                       accept={"image/png": [".png"], "image/jpeg": [".jpg", ".jpeg"], "image/gif": [".gif"],
                               "image/webp": [".webp"]},
                       on_drop=ChatState.attach_image(rx.upload_files(upload_id=IMAGE_UPLOAD_ID))),
        rx.icon_button(rx.icon("image-plus", size=18), type="button", variant="soft", color_scheme="gray", size="3",
                       title="Attach an image", aria_label="Attach an image", on_click=ChatState.explain_no_images),
    )


def attached_image() -> rx.Component:
    """The image chosen for the next message (with a way to take it off), or why one cannot be sent."""
    return rx.fragment(
        rx.cond(ChatState.image_name != "",
                rx.hstack(rx.icon("image", size=14, color=rx.color("gray", 11)),
                          safe_text(ChatState.image_name, size="1", color=rx.color("gray", 11)),
                          rx.icon_button(rx.icon("x", size=12), size="1", variant="ghost", color_scheme="gray",
                                         type="button", aria_label="Remove the image", on_click=ChatState.remove_image),
                          spacing="2", align="center", data_testid="attached-image")),
        rx.cond(ChatState.image_error != "",
                rx.callout(ChatState.image_error, icon="image-off", color_scheme="amber", size="1", width="100%",
                           data_testid="image-refused")),
    )


def composer() -> rx.Component:
    """The message box with Send, or Stop while an answer runs (Enter sends, Shift+Enter starts a new
    line); it stays at the bottom of the window, whatever the length of the conversation."""
    return rx.form(
        attached_image(),
        rx.hstack(
            image_picker(),
            rx.text_area(
                value=ChatState.draft,
                on_change=ChatState.set_draft,
                placeholder=f"Message {ChatState.bot_name}…",
                name="message",
                aria_label="Message",
                rows="2",
                resize="vertical",
                width="100%",
                enter_key_submit=True,
            ),
            rx.cond(
                ChatState.live_id > 0,
                rx.button(rx.icon("square", size=14), "Stop", type="button", color_scheme="red", variant="soft",
                          size="3", on_click=LiveState.stop, loading=LiveState.stopping),
                rx.button(rx.icon("send-horizontal", size=16), "Send", type="submit", loading=ChatState.sending,
                          size="3"),
            ),
            align="end",
            spacing="3",
            width="100%",
        ),
        on_submit=ChatState.send,
        width="100%",
        position="sticky",
        bottom="0",
        z_index="1",
        padding_y="0.75rem",
        background="var(--color-panel-solid)",
        data_testid=COVER_TESTID,
    )


def reset_button() -> rx.Component:
    """"Reset conversation", after a confirmation."""
    return rx.fragment(
        rx.button(rx.icon("rotate-ccw", size=14), "Reset conversation", variant="soft", color_scheme="gray", size="1",
                  on_click=ChatState.set_confirm_reset(True)),
        confirm_dialog(open_=ChatState.confirm_reset, title="Reset this conversation?",
                       message="Your messages with this bot and its answers are deleted; the bot forgets this "
                               "conversation. This cannot be undone.",
                       confirm_label="Reset", on_confirm=ChatState.reset_chat,
                       on_cancel=ChatState.set_confirm_reset(False)),
    )


def channel_choice() -> rx.Component:
    """"Test as": no channel (the bot's own persona), or a channel with a persona (shown when it has any)."""
    return rx.cond(
        ChatState.test_channels.length() > 0,  # type: ignore[attr-defined]
        rx.select.root(
            rx.select.trigger(aria_label="Test as channel", data_testid="test-channel"),
            rx.select.content(rx.select.item("No channel (the bot's own)", value=NO_CHANNEL),
                              rx.foreach(ChatState.test_channels,
                                         lambda c: rx.select.item("As in " + c[1], value=c[0]))),
            value=ChatState.test_channel, on_change=ChatState.choose_test_channel, size="1"),
    )


def chat_tab() -> rx.Component:
    """The Test Chat tab's content."""
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.hstack(rx.icon("flask-conical", size=16, color=rx.color("gray", 11)),
                          rx.text("Test conversation", weight="medium", size="2"), spacing="2", align="center"),
                rx.hstack(channel_choice(), reset_button(), spacing="2", align="center", wrap="wrap", justify="end"),
                justify="between",
                align="center",
                wrap="wrap",
                width="100%",
            ),
            rx.divider(),
            rx.cond(ChatState.test_channel_line[0] != "",
                    rx.hstack(rx.icon("hash", size=14, color=rx.color("gray", 11), flex_shrink="0", margin_top="0.15rem"),
                              rx.text("Answers as in ", rx.text.strong(ChatState.test_channel_line[0]), ", with ",
                                      rx.text.strong(ChatState.test_channel_line[1]), " · that channel's persona",
                                      size="1", color=rx.color("gray", 11)),
                              spacing="2", align="start", data_testid="chat-channel"),
                    model_line()),
            rx.cond(
                ChatState.chat_loaded,
                chat_history(
                    rx.cond(
                        ChatState.has_turns,
                        rx.vstack(rx.foreach(ChatState.turns, turn_view), live_turn(), spacing="4", width="100%"),
                        no_messages(),
                    ),
                    empty=~ChatState.has_turns,
                    flex="1",
                    min_height="12rem",
                    width="100%",
                    padding_right="0.5rem",
                    data_testid="chat-history",
                ),
                rx.center(rx.spinner(size="3"), flex="1", min_height="12rem", width="100%"),
            ),
            rx.cond(ChatState.chat_error != "",
                    rx.callout(ChatState.chat_error, icon="triangle-alert", color_scheme="red", width="100%")),
            composer(),
            spacing="3",
            width="100%",
            height="100%",
        ),
        width="100%",
        size=rx.breakpoints(initial="2", md="3"),
        overflow="visible",
        flex="1",
        min_height="0",
        data_testid="chat-card",
    )


def chat_page() -> rx.Component:
    """The tab fills the window: the conversation is the one thing that scrolls, the message box stays
    at the bottom."""
    return bot_page(CHAT, chat_tab(), fill=True)
