"""The page of an address the app does not know (``/bots/2/nonexistent``, ``/bots/``): the usual
frame (sidebar, header), a line saying the page does not exist and a way back to the bot list,
which is the home page."""

from __future__ import annotations

import logging

import reflex as rx

from grobot.components.empty_state import empty_state
from grobot.components.layout import page_layout
from grobot.state import AppState

__all__ = ["ROUTE", "TITLE", "not_found_page"]

logger = logging.getLogger(__name__)

ROUTE = "404"  # Reflex's slug of the page it shows for every unknown address
TITLE = "Page not found · GroBot"
HOME = "/"  # the home page is the list of all bots
# A link that looks like the app's solid buttons (a link, not a button: it goes somewhere).
LINK_BUTTON = {
    "display": "inline-flex",
    "align_items": "center",
    "gap": "0.5rem",
    "padding": "0.5rem 1rem",
    "border_radius": "var(--radius-3)",
    "background": rx.color("accent", 9),
    "color": "var(--accent-contrast)",
    "font_weight": "500",
    "text_decoration": "none",
    "_hover": {"background": rx.color("accent", 10), "text_decoration": "none"},
}


def not_found_page() -> rx.Component:
    """The page does not exist: the address that was asked for, and links to the bot list."""
    return page_layout(
        empty_state(
            "map-pin-off",
            "This page does not exist",
            "The address may be mistyped, or the page was moved. Your bots are all on the bot list, "
            "which is also the home page.",
            rx.text(
                "Address: ",
                rx.code(AppState.router.url.path, data_testid="missing-path"),
                size="2",
                color=rx.color("gray", 11),
                text_align="center",
                word_break="break-all",
            ),
            rx.hstack(
                rx.link(rx.icon("bot", size=16), "All bots", href=HOME, **LINK_BUTTON),
                spacing="3",
                wrap="wrap",
                justify="center",
            ),
        ),
        active="",
        title="Page not found",
        subtitle="There is no page at this address.",
    )
