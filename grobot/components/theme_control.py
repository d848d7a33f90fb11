"""The header's theme control: light, dark, or the system's (the browser's
``prefers-color-scheme``, followed live). Reflex's color mode keeps the choice in the
browser's ``localStorage`` (key ``theme``), so it is remembered across visits."""

from __future__ import annotations

import logging

import reflex as rx
from reflex.style import color_mode, set_color_mode

logger = logging.getLogger(__name__)

# (mode, label, lucide icon)
THEME_CHOICES: tuple[tuple[str, str, str], ...] = (
    ("light", "Light theme", "sun"),
    ("dark", "Dark theme", "moon"),
    ("system", "System theme", "monitor"),
)


def _choice(mode: str, label: str, icon: str) -> rx.Component:
    chosen = color_mode == mode
    return rx.icon_button(
        rx.icon(icon, size=16),
        variant=rx.cond(chosen, "solid", "ghost"),
        color_scheme=rx.cond(chosen, "indigo", "gray"),
        size="1",
        radius="full",
        aria_label=label,
        aria_pressed=rx.cond(chosen, "true", "false"),
        title=label,
        on_click=set_color_mode(mode),  # type: ignore[arg-type]
        data_theme_choice=mode,
    )


def theme_control() -> rx.Component:
    """Three buttons: light, dark, system (the pressed one is the current choice)."""
    return rx.hstack(
        *[_choice(mode, label, icon) for mode, label, icon in THEME_CHOICES],
        spacing="1",
        padding="3px",
        border_radius="9999px",
        border=f"1px solid {rx.color('gray', 5)}",
        background=rx.color("gray", 2),
        role="group",
        aria_label="Theme",
        align="center",
    )
