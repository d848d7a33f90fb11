"""The page frame: a sidebar with the navigation and the signed-in user, a header with the
page title, the content. Nothing of a page shows until the session has been checked."""

from __future__ import annotations

import logging

import reflex as rx

from grobot.components.navigation import NAV_ITEMS, NavItem
from grobot.components.status_badge import status_dot_color
from grobot.state import AppState
from grobot.state.bot_page import BotPageState
from grobot.state.fleet import REFRESH_MS, BotRow, BotsState

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


def nav_entry(item: NavItem, *, active: bool) -> rx.Component:
    """A sidebar entry, left out for testers when the page is for admins only."""
    link = nav_link(item, active=active)
    return rx.cond(AppState.is_admin, link) if item.admin_only else link


def role_badge() -> rx.Component:
    return rx.badge(
        rx.cond(AppState.is_admin, "Admin", "Tester"),
        color_scheme=rx.cond(AppState.is_admin, "indigo", "teal"),
        variant="soft",
        size="1",
        data_testid="user-role",
    )


def sign_out_button(*, compact: bool = False) -> rx.Component:
    if compact:
        return rx.icon_button(
            rx.icon("log-out", size=16), variant="soft", color_scheme="gray", aria_label="Log out",
            title="Log out", on_click=AppState.sign_out,
        )  # fmt: skip
    return rx.button(
        rx.icon("log-out", size=16),
        "Log out",
        variant="soft",
        color_scheme="gray",
        width="100%",
        on_click=AppState.sign_out,
    )


def user_panel() -> rx.Component:
    """Who is signed in, with their role, and the way out (bottom of the sidebar)."""
    return rx.vstack(
        rx.hstack(
            rx.center(
                rx.icon("user-round", size=16, color=rx.color("gray", 11)),
                width="2rem",
                height="2rem",
                min_width="2rem",
                border_radius="50%",
                background=rx.color("gray", 4),
            ),
            rx.vstack(
                rx.text(AppState.username, size="2", weight="medium", truncate=True, max_width="9rem", data_testid="user-name"),
                role_badge(),
                spacing="1",
                align="start",
            ),
            align="center",
            spacing="3",
            width="100%",
        ),
        sign_out_button(),
        spacing="3",
        width="100%",
        padding_top="1rem",
        border_top=f"1px solid {rx.color('gray', 5)}",
        aria_label="Signed-in user",
    )


def sidebar_bot(bot: BotRow) -> rx.Component:
    """A bot in the sidebar: a live status dot and its name; the open bot is highlighted."""
    active = BotPageState.current_bot_id == bot.id
    return rx.link(
        rx.hstack(
            rx.box(width="8px", height="8px", min_width="8px", border_radius="50%",
                   background=status_dot_color(bot.status), data_status=bot.status, title=bot.status),
            rx.text(bot.name, size="2", weight="medium", truncate=True),
            align="center",
            spacing="3",
            padding_x="0.75rem",
            padding_y="0.4rem",
            border_radius="6px",
            width="100%",
            color=rx.cond(active, rx.color("accent", 11), rx.color("gray", 11)),
            background=rx.cond(active, rx.color("accent", 3), "transparent"),
            _hover={"background": rx.color("gray", 3)},
            opacity=rx.cond(bot.enabled, "1", "0.6"),
        ),
        href=f"/bots/{bot.id}/chat",
        underline="none",
        width="100%",
        data_bot_id=bot.id,
    )


def sidebar_bots() -> rx.Component:
    """The bots the user may see, with live status dots (refreshed by a hidden timer)."""
    return rx.vstack(
        rx.moment(interval=REFRESH_MS, format="HH:mm:ss", on_change=BotsState.refresh, display="none"),
        rx.text("BOTS", size="1", weight="bold", color=rx.color("gray", 10), padding_x="0.75rem", letter_spacing="0.05em"),
        rx.cond(
            BotsState.bot_count > 0,
            rx.vstack(rx.foreach(BotsState.bots, sidebar_bot), spacing="0", width="100%"),
            rx.text(rx.cond(BotsState.loaded, "No bots yet", "Loading…"), size="2", color=rx.color("gray", 10),
                    padding_x="0.75rem"),
        ),
        spacing="1",
        width="100%",
        overflow_y="auto",
        min_height="0",
        flex="1",
        aria_label="Bots",
    )


def sidebar(active: str) -> rx.Component:
    """The navigation column (hidden on narrow screens, where the header shows the brand)."""
    return rx.el.nav(
        rx.vstack(
            brand(),
            rx.vstack(
                *[nav_entry(item, active=item.key == active) for item in NAV_ITEMS],
                spacing="1",
                width="100%",
            ),
            sidebar_bots(),
            spacing="6",
            width="100%",
            flex="1",
            min_height="0",
        ),
        user_panel(),
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


def header(
    title: str | rx.Var,
    subtitle: str | rx.Var | rx.Component | None = None,
    actions: rx.Component | None = None,
    breadcrumb: rx.Component | None = None,
) -> rx.Component:
    """The page header: title, an optional subtitle and optional actions on the right."""
    return rx.el.header(
        rx.vstack(
            rx.hstack(
                brand(),
                rx.hstack(rx.text(AppState.username, size="2", color=rx.color("gray", 11)), sign_out_button(compact=True), align="center", spacing="2"),
                display=["flex", "flex", "none"],
                justify="between",
                align="center",
                width="100%",
                margin_bottom="0.75rem",
            ),
            *([breadcrumb] if breadcrumb is not None else []),
            rx.heading(title, size="7", weight="bold", as_="h1"),
            *([_subtitle(subtitle)] if subtitle is not None else []),
            spacing="1",
            width=["100%", "100%", "auto"],  # narrow screens: the brand row spans the width
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


def _subtitle(subtitle: str | rx.Var | rx.Component) -> rx.Component:
    if isinstance(subtitle, rx.Component):
        return subtitle
    return rx.text(subtitle, size="2", color=rx.color("gray", 11))


def page_layout(
    *children: rx.Component,
    active: str,
    title: str | rx.Var,
    subtitle: str | rx.Var | rx.Component | None = None,
    actions: rx.Component | None = None,
    breadcrumb: rx.Component | None = None,
) -> rx.Component:
    """A whole page: sidebar, header and ``children`` as the main content.

    Shown only to a signed-in user: the page's on-load check (``AppState.require_login``)
    fills in the user or sends the browser to the login page.
    """
    return rx.cond(
        AppState.signed_in,
        _frame(*children, active=active, title=title, subtitle=subtitle, actions=actions, breadcrumb=breadcrumb),
        checking_session(),
    )


def checking_session() -> rx.Component:
    """What shows while the session is being checked (a moment, before the page or the login)."""
    return rx.center(
        rx.hstack(rx.spinner(size="3"), rx.text("Checking your session…", color=rx.color("gray", 11)), align="center", spacing="3"),
        min_height="100vh",
        width="100%",
        background=rx.color("gray", 1),
    )


def _frame(
    *children: rx.Component,
    active: str,
    title: str | rx.Var,
    subtitle: str | rx.Var | rx.Component | None,
    actions: rx.Component | None,
    breadcrumb: rx.Component | None,
) -> rx.Component:
    return rx.flex(
        sidebar(active),
        rx.el.main(
            rx.vstack(
                header(title, subtitle, actions, breadcrumb),
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
