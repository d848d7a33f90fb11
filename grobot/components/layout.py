"""The page frame: a sidebar with the navigation, a header with the page title, the content."""

from __future__ import annotations

import logging

import reflex as rx

from grobot.components.navigation import NAV_ITEMS, NavItem

logger = logging.getLogger(__name__)

SIDEBAR_WIDTH = "15rem"


def brand() -> rx.Component:
    """The product mark shown at the top of the sidebar."""
    return rx.hstack(
        rx.center(
            rx.icon("bot", size=20, color="white"),
            width="2rem",
            height="2rem",
            border_radius="8px",
            background=rx.color("accent", 9),
        ),
        rx.text("GroBot", size="5", weight="bold", color=rx.color("gray", 12)),
        align="center",
        spacing="3",
    )


def nav_link(item: NavItem, *, active: bool) -> rx.Component:
    """One sidebar entry; the active one is highlighted."""
    return rx.link(
        rx.hstack(
            rx.icon(item.icon, size=18),
            rx.text(item.label, size="3", weight="medium"),
            align="center",
            spacing="3",
            padding_x="0.75rem",
            padding_y="0.5rem",
            border_radius="6px",
            width="100%",
            color=rx.color("accent", 11) if active else rx.color("gray", 11),
            background=rx.color("accent", 3) if active else "transparent",
            _hover={"background": rx.color("accent", 4) if active else rx.color("gray", 3)},
        ),
        href=item.route,
        underline="none",
        width="100%",
        aria_current="page" if active else None,
    )


def sidebar(active: str) -> rx.Component:
    """The navigation column (hidden on narrow screens, where the header shows the brand)."""
    return rx.el.nav(
        rx.vstack(
            brand(),
            rx.vstack(
                *[nav_link(item, active=item.key == active) for item in NAV_ITEMS],
                spacing="1",
                width="100%",
            ),
            spacing="6",
            width="100%",
        ),
        rx.text("Self-hosted Discord bot fleet", size="1", color=rx.color("gray", 10)),
        display=["none", "none", "flex"],
        flex_direction="column",
        justify_content="space-between",
        width=SIDEBAR_WIDTH,
        min_width=SIDEBAR_WIDTH,
        height="100vh",
        position="sticky",
        top="0",
        padding="1.25rem 1rem",
        border_right=f"1px solid {rx.color('gray', 5)}",
        background=rx.color("gray", 2),
        aria_label="Main navigation",
    )


def header(title: str, subtitle: str | rx.Var | None = None, actions: rx.Component | None = None) -> rx.Component:
    """The page header: title, an optional subtitle and optional actions on the right."""
    return rx.el.header(
        rx.vstack(
            rx.box(brand(), display=["block", "block", "none"], margin_bottom="0.75rem"),
            rx.heading(title, size="7", weight="bold", as_="h1"),
            *([rx.text(subtitle, size="2", color=rx.color("gray", 11))] if subtitle is not None else []),
            spacing="1",
        ),
        actions if actions is not None else rx.fragment(),
        display="flex",
        justify_content="space-between",
        align_items="flex-end",
        flex_wrap="wrap",
        gap="1rem",
        width="100%",
        padding_bottom="1.25rem",
        border_bottom=f"1px solid {rx.color('gray', 4)}",
    )


def page_layout(
    *children: rx.Component,
    active: str,
    title: str,
    subtitle: str | rx.Var | None = None,
    actions: rx.Component | None = None,
) -> rx.Component:
    """A whole page: sidebar, header and ``children`` as the main content."""
    return rx.flex(
        sidebar(active),
        rx.el.main(
            rx.vstack(
                header(title, subtitle, actions),
                *children,
                spacing="5",
                width="100%",
                max_width="72rem",
                margin_x="auto",
            ),
            flex="1",
            min_width="0",
            padding=["1rem", "1.5rem", "2rem 2.5rem"],
        ),
        min_height="100vh",
        width="100%",
        background=rx.color("gray", 1),
    )
