"""A small figure with its label and icon, for the summaries above the tables."""

from __future__ import annotations

import logging

import reflex as rx

logger = logging.getLogger(__name__)


def stat_card(label: str, value: rx.Var, icon: str, color: str) -> rx.Component:
    """A small figure with its label, for the summary above the table."""
    return rx.card(
        rx.hstack(
            rx.center(
                rx.icon(icon, size=18, color=rx.color(color, 11)),
                width="2.25rem",
                height="2.25rem",
                border_radius="8px",
                background=rx.color(color, 3),
            ),
            rx.vstack(
                rx.text(label, size="1", color=rx.color("gray", 11), weight="medium"),
                rx.text(value, size="5", weight="bold"),
                spacing="0",
            ),
            align="center",
            spacing="3",
        ),
        flex="1",
        min_width="10rem",
    )
