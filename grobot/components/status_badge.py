"""The badge that shows a bot's live state."""

from __future__ import annotations

import logging

import reflex as rx

logger = logging.getLogger(__name__)

# state -> (label, Radix color). The states are those of ``grobot.core.models.BotState``.
STATUS_STYLES: dict[str, tuple[str, str]] = {
    "online": ("Online", "green"),
    "starting": ("Starting", "amber"),
    "offline": ("Offline", "gray"),
    "error": ("Error", "red"),
    "stopped": ("Stopped", "gray"),
}


def status_color(status: rx.Var[str]) -> rx.Var[str]:
    """The Radix color of a state (for dots and badges)."""
    return rx.match(status, *[(key, col) for key, (_, col) in STATUS_STYLES.items()], "gray")


def status_dot_color(status: rx.Var[str]) -> rx.Var[str]:
    """The CSS color of a state's dot."""
    return rx.match(status, *[(key, f"var(--{col}-9)") for key, (_, col) in STATUS_STYLES.items()], "var(--gray-9)")


def status_badge(status: rx.Var[str]) -> rx.Component:
    """A coloured badge with a dot and the state's label."""
    color = status_color(status)
    label = rx.match(status, *[(key, text) for key, (text, _) in STATUS_STYLES.items()], status)
    return rx.badge(
        rx.box(width="6px", height="6px", border_radius="50%", background="currentColor"),
        label,
        color_scheme=color,
        variant="soft",
        radius="full",
        size="2",
        gap="0.4rem",
        data_status=status,
    )
