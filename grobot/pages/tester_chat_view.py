"""The Test Chat tab's building blocks that hold no state: bubbles, the chain's steps, the LLM
calls of a run, notices."""

from __future__ import annotations

import logging

import reflex as rx

from grobot.components.empty_state import command_line
from grobot.components.safe_text import safe_text
from grobot.components.technical_details import technical_details
from grobot.pages.tester_chat_runs import ChatCall, ChatStep

logger = logging.getLogger(__name__)

WORKER_COMMAND = "python -m grobot worker"


def step_row(step: ChatStep) -> rx.Component:
    """One step of the chain, its details folded away."""
    icon = rx.match(step.kind, ("tool_call", "wrench"), ("tool_result", "circle-check"), ("thinking", "lightbulb"),
                    "activity")
    return rx.el.details(
        rx.el.summary(
            rx.hstack(
                rx.cond(step.failed, rx.icon("circle-x", size=14, color=rx.color("red", 10)),
                        rx.icon(icon, size=14, color=rx.color("gray", 11))),
                safe_text(step.title, size="1", weight="medium", color=rx.cond(step.failed, rx.color("red", 11),
                                                                               rx.color("gray", 11))),
                spacing="2", align="center", display="inline-flex",
                max_width="calc(100% - 1.25rem)", vertical_align="top",  # a long title wraps beside its marker
            ),
            cursor="pointer",
        ),
        rx.cond(step.detail != "", rx.code_block(step.detail, language="json", wrap_long_lines=True, font_size="12px",
                                                 margin_top="0.25rem", custom_style={"maxHeight": "16rem"})),
        data_step=step.kind,
    )


def call_row(call: ChatCall) -> rx.Component:
    """An agent's LLM calls in a run: model, tokens in and out, time."""
    muted = rx.color("gray", 11)
    return rx.hstack(
        rx.icon("cpu", size=14, color=rx.color("gray", 11)),
        rx.text(call.role, size="1", weight="medium", color=muted),
        safe_text(call.model, size="1", color=muted, font_family="monospace"),
        rx.text(f"{call.tokens_in} → {call.tokens_out} tokens", size="1", color=muted),
        rx.text(call.seconds, size="1", color=muted),
        rx.cond(call.calls > 1, rx.text(f"({call.calls} calls)", size="1", color=muted)),
        spacing="2",
        align="center",
        wrap="wrap",
        data_testid="llm-call",
    )


def steps_panel(steps: rx.Var[list[ChatStep]], calls: rx.Var[list[ChatCall]] | None = None, *,
                open_: bool = False) -> rx.Component:
    """The chain's steps of a run and its LLM calls per agent, collapsible as a whole."""
    count = steps.length() + (calls.length() if calls is not None else 0)  # type: ignore[attr-defined]
    return rx.cond(
        count > 0,
        rx.el.details(
            rx.el.summary(rx.text(f"Steps ({steps.length()})", size="1", color=rx.color("gray", 11), as_="span"),  # type: ignore[attr-defined]
                          cursor="pointer"),
            rx.vstack(rx.foreach(steps, step_row),
                      *([rx.foreach(calls, call_row)] if calls is not None else []),
                      spacing="1", padding_left="0.75rem", margin_top="0.25rem",
                      border_left=f"2px solid {rx.color('gray', 5)}"),
            open=open_,
            data_testid="chain-steps",
            width="100%",
        ),
    )


def image_preview(url: rx.Var[str], testid: str = "answer-image") -> rx.Component:
    """An image of a run, loaded from the web app itself (never another host); a click opens it whole."""
    return rx.link(
        rx.image(src=url, alt="An image of this conversation", max_width="min(100%, 24rem)", max_height="20rem",
                 border_radius="8px", loading="lazy", display="block", data_testid=testid),
        href=url,
        is_external=True,
        title="Open the image",
    )


def images_row(urls: rx.Var[list[str]], testid: str = "answer-image") -> rx.Component:
    return rx.cond(urls.length() > 0,  # type: ignore[attr-defined]
                   rx.flex(rx.foreach(urls, lambda url: image_preview(url, testid)), gap="0.5rem", wrap="wrap"))


def user_bubble(text: rx.Var[str], author: rx.Var[str] | str, sent: rx.Var[list[str]] | None = None) -> rx.Component:
    return rx.hstack(
        rx.box(
            *([images_row(sent, "sent-image")] if sent is not None else []),
            safe_text(text, size="2"),
            padding="0.6rem 0.9rem",
            border_radius="12px 12px 2px 12px",
            background=rx.color("accent", 9),
            color="white",
            max_width="75%",
            overflow_wrap="anywhere",
            data_testid="user-message",
        ),
        justify="end",
        width="100%",
        title=author,
    )


def bot_bubble(*children: rx.Component, testid: str = "bot-answer") -> rx.Component:
    return rx.hstack(
        rx.center(rx.icon("bot", size=16, color=rx.color("accent", 11)), width="2rem", height="2rem", min_width="2rem",
                  border_radius="50%", background=rx.color("accent", 3)),
        rx.vstack(*children, spacing="2", padding="0.6rem 0.9rem", border_radius="12px 12px 12px 2px",
                  background=rx.color("gray", 3), max_width="min(75%, 48rem)", min_width="6rem", align="start",
                  overflow_wrap="anywhere", data_testid=testid),
        align="start",
        spacing="2",
        width="100%",
    )


def error_text(text: rx.Var[str], detail: rx.Var[str]) -> rx.Component:
    """Why the bot could not answer, in plain words; for admins the whole error behind "Details"."""
    return rx.vstack(
        rx.hstack(rx.icon("circle-alert", size=16, color=rx.color("red", 10)),
                  safe_text("The bot could not answer: ", text, size="2", color=rx.color("red", 11)),
                  spacing="2", align="start", data_testid="answer-error"),
        technical_details(detail),
        spacing="1",
    )


def stopped_text(reason: rx.Var[str]) -> rx.Component:
    """A run that was cancelled, and why (the tester's Stop, or the worker stopping)."""
    return rx.hstack(rx.icon("circle-stop", size=16, color=rx.color("gray", 11)),
                     rx.text("Stopped: ", reason, size="2", color=rx.color("gray", 11)),
                     spacing="2", align="center", data_testid="answer-stopped")


def waiting_notice() -> rx.Component:
    return rx.callout(
        rx.vstack(
            rx.text("No bot worker is running: the message is waiting for the bot worker. "
                    "It will be answered as soon as a worker starts:", size="2"),
            command_line(WORKER_COMMAND),
            spacing="2",
        ),
        icon="clock",
        color_scheme="amber",
        width="100%",
        data_testid="waiting-for-worker",
    )


def no_messages() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.icon("messages-square", size=32, color=rx.color("gray", 8)),
            rx.text("Say hello", weight="medium"),
            rx.text("Messages you send here go through the bot's whole agent chain, with its tools, "
                    "as if you wrote to it on Discord. Only you see this conversation.",
                    size="2", color=rx.color("gray", 11), text_align="center", max_width="28rem"),
            align="center",
            spacing="2",
        ),
        padding="3rem 1rem",
        width="100%",
    )
