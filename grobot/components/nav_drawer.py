"""The menu of narrow screens: a button in the header opens the navigation (every page and
the bots) as a panel from the left; choosing an entry goes there and closes it."""

from __future__ import annotations

import logging

import reflex as rx

from grobot.components.sidebar import nav_contents, user_panel

logger = logging.getLogger(__name__)

DRAWER_WIDTH = "min(20rem, 86vw)"


def menu_button() -> rx.Component:
    """The hamburger button (shown below desktop width only)."""
    return rx.icon_button(rx.icon("menu", size=20), variant="soft", color_scheme="gray", size="3",
                          aria_label="Open the menu", title="Menu", data_testid="menu-button")


def nav_drawer(active: str) -> rx.Component:
    """The header's menu button and the navigation panel it opens."""
    return rx.dialog.root(
        rx.dialog.trigger(menu_button()),
        rx.dialog.content(
            rx.hstack(
                rx.dialog.title("Menu", size="2", color=rx.color("gray", 11), margin="0"),
                rx.dialog.close(rx.icon_button(rx.icon("x", size=18), variant="ghost", color_scheme="gray",
                                               aria_label="Close the menu", title="Close")),
                justify="between",
                align="center",
                width="100%",
            ),
            rx.dialog.description("Pages and bots", style=_VISUALLY_HIDDEN),
            rx.el.nav(nav_contents(active, wrap=rx.dialog.close, timer=False), aria_label="Pages and bots",
                      display="flex", flex_direction="column", flex="1", min_height="0"),
            user_panel(),
            position="fixed",
            top="0",
            left="0",
            height="100dvh",
            max_height="100dvh",
            width=DRAWER_WIDTH,
            max_width=DRAWER_WIDTH,
            border_radius="0",
            padding="1rem",
            display="flex",
            flex_direction="column",
            gap="1rem",
            overflow_y="auto",
            data_testid="nav-drawer",
        ),
    )


# Read by screen readers, not shown.
_VISUALLY_HIDDEN = {
    "position": "absolute", "width": "1px", "height": "1px", "padding": "0", "margin": "-1px",
    "overflow": "hidden", "clip": "rect(0, 0, 0, 0)", "whiteSpace": "nowrap", "border": "0",
}
