"""One entry of a list the admin picks from (a conversation, a Discord user): a real button, so the
Tab key reaches it and Enter or Space opens it, styled as a row of the list."""

from __future__ import annotations

import logging

import reflex as rx

logger = logging.getLogger(__name__)


def list_item(*children: rx.Component, active: rx.Var[bool], on_click: rx.EventHandler,
              **props: object) -> rx.Component:
    """A row of a pick list: ``children`` inside a button, highlighted (and ``aria-current``) when ``active``."""
    return rx.el.button(
        *children,
        type="button",
        on_click=on_click,
        aria_current=rx.cond(active, "true", "false"),
        display="block",
        width="100%",
        padding="0.5rem 0.6rem",
        border="none",
        border_radius="8px",
        cursor="pointer",
        text_align="left",
        font="inherit",
        color="inherit",
        background=rx.cond(active, rx.color("accent", 3), "transparent"),
        _hover={"background": rx.color("gray", 3)},
        _focus_visible={"outline": f"2px solid {rx.color('accent', 8)}", "outline_offset": "-2px"},
        **props,
    )
