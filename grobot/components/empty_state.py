"""A friendly placeholder for a list with nothing in it yet."""

from __future__ import annotations

import logging

import reflex as rx

logger = logging.getLogger(__name__)


def empty_state(icon: str, title: str, description: str, *children: rx.Component) -> rx.Component:
    """An icon, a title, a line of explanation and what to do next (``children``)."""
    return rx.center(
        rx.vstack(
            rx.center(
                rx.icon(icon, size=28, color=rx.color("accent", 11)),
                width="3.5rem",
                height="3.5rem",
                border_radius="50%",
                background=rx.color("accent", 3),
            ),
            rx.heading(title, size="5", as_="h2"),
            rx.text(description, size="2", color=rx.color("gray", 11), text_align="center", max_width="32rem"),
            *children,
            align="center",
            spacing="3",
        ),
        width="100%",
        padding="3rem 1.5rem",
        border=f"1px dashed {rx.color('gray', 6)}",
        border_radius="12px",
        background=rx.color("gray", 2),
    )


def command_line(command: str) -> rx.Component:
    """A shell command, set in a monospace block."""
    return rx.box(
        rx.text("$ ", as_="span", color=rx.color("gray", 9), user_select="none"),
        rx.text(command, as_="span"),
        font_family="var(--code-font-family, ui-monospace, SFMono-Regular, Menlo, monospace)",
        font_size="0.875rem",
        padding="0.75rem 1rem",
        border_radius="8px",
        border=f"1px solid {rx.color('gray', 5)}",
        background=rx.color("gray", 1),
        color=rx.color("gray", 12),
        white_space="pre-wrap",
        word_break="break-all",
    )
