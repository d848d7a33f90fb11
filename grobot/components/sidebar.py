"""The navigation column: the brand, the pages, the bots with live status dots and the
signed-in user. The same contents fill the desktop sidebar (resizable: its width is the CSS
variable ``--grobot-sidebar-width``, dragged and remembered by ``assets/grobot_shell.js``) and
the menu of narrow screens (``grobot.components.nav_drawer``)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import reflex as rx

from grobot.components.navigation import NAV_ITEMS, NavItem
from grobot.components.page_scripts import after_paint
from grobot.components.status_badge import status_dot_color
from grobot.state import AppState
from grobot.state.app_state import SIGN_OUT_HINT
from grobot.state.bot_page import BotPageState
from grobot.state.fleet import REFRESH_MS, BotRow, BotsState

logger = logging.getLogger(__name__)

SIDEBAR_WIDTH_VAR = "--grobot-sidebar-width"
DEFAULT_SIDEBAR_WIDTH = "15rem"
SIDEBAR_WIDTH = f"var({SIDEBAR_WIDTH_VAR}, {DEFAULT_SIDEBAR_WIDTH})"
BOT_PAGES = "bot"  # the ``active`` key of a bot's pages: only there is a bot highlighted

Wrap = Callable[[rx.Component], rx.Component]

# Bring the open bot's link into the bot list's view (run when its highlight appears): a bot
# far down a long list is otherwise hidden below the fold of the sidebar.
SCROLL_TO_CURRENT_BOT = """
document.querySelectorAll('[data-bot-list] a[aria-current="page"][data-bot-id]').forEach((link) => {
  const list = link.closest('[data-bot-list]');
  const box = list.getBoundingClientRect(), row = link.getBoundingClientRect();
  if (row.top < box.top || row.bottom > box.bottom) {
    list.scrollTop += row.top - box.top - (box.height - row.height) / 2;
  }
});
"""


def _as_is(component: rx.Component) -> rx.Component:
    return component


def brand() -> rx.Component:
    """The product mark shown at the top of the sidebar."""
    return rx.hstack(
        rx.center(
            rx.icon("bot", size=20, color="white"),
            width="2rem",
            height="2rem",
            min_width="2rem",
            border_radius="8px",
            background=rx.color("accent", 9),
        ),
        rx.text("GroBot", size="5", weight="bold", color=rx.color("gray", 12)),
        align="center",
        spacing="3",
    )


def nav_link(item: NavItem, *, active: bool) -> rx.Component:
    """One navigation entry; the active one is highlighted."""
    return rx.link(
        rx.hstack(
            rx.icon(item.icon, size=18),
            rx.text(item.label, size="3", weight="medium", truncate=True),
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
        data_nav=item.key,
    )


def nav_entry(item: NavItem, *, active: bool, wrap: Wrap = _as_is) -> rx.Component:
    """A navigation entry, left out for testers when the page is for admins only."""
    link = wrap(nav_link(item, active=active))
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
    """Log out: it ends every session of the user (each browser and device), and says so."""
    if compact:
        return rx.icon_button(
            rx.icon("log-out", size=16), variant="soft", color_scheme="gray",
            aria_label=f"Log out ({SIGN_OUT_HINT.lower()})", title=f"Log out: {SIGN_OUT_HINT.lower()}",
            on_click=AppState.sign_out,
        )  # fmt: skip
    return rx.vstack(
        rx.button(
            rx.icon("log-out", size=16),
            "Log out everywhere",
            variant="soft",
            color_scheme="gray",
            width="100%",
            title=f"{SIGN_OUT_HINT}.",
            on_click=AppState.sign_out,
        ),
        rx.text(f"{SIGN_OUT_HINT}.", size="1", color=rx.color("gray", 11), text_align="center", width="100%",
                data_testid="sign-out-hint"),
        spacing="1",
        width="100%",
    )


def user_panel() -> rx.Component:
    """Who is signed in, with their role, and the way out (bottom of the navigation)."""
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
                rx.text(AppState.username, size="2", weight="medium", truncate=True, max_width="100%",
                        data_testid="user-name"),
                role_badge(),
                spacing="1",
                align="start",
                min_width="0",
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


def sidebar_bot(bot: BotRow, *, highlight: bool, wrap: Wrap = _as_is) -> rx.Component:
    """A bot in the navigation: a live status dot and its name. On a bot's pages the open bot
    is highlighted; on the global pages (``highlight`` False) none is."""
    active = (BotPageState.current_bot_id == bot.id) if highlight else False
    return wrap(rx.link(
        rx.hstack(
            rx.box(width="8px", height="8px", min_width="8px", border_radius="50%",
                   background=status_dot_color(bot.status), data_status=bot.status, title=bot.status),
            # min_width 0: a flex child shrinks below its text, so a long name ends in an ellipsis
            # (spelled out: ``truncate=True`` sets none of these here).
            rx.text(bot.name, size="2", weight="medium", min_width="0", flex="1", overflow="hidden",
                    text_overflow="ellipsis", white_space="nowrap"),
            *([rx.cond(active, rx.box(display="none", on_mount=rx.call_script(after_paint(SCROLL_TO_CURRENT_BOT))))] if highlight else []),
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
        title=bot.name,  # the full name, when it is cut
        data_bot_id=bot.id,
        aria_current=rx.cond(active, "page", None),
    ))


def sidebar_bots(*, highlight: bool, wrap: Wrap = _as_is, timer: bool = True) -> rx.Component:
    """The bots the user may see, with live status dots (refreshed by a hidden timer)."""
    return rx.vstack(
        *([rx.moment(interval=REFRESH_MS, format="HH:mm:ss", on_change=BotsState.refresh, display="none")]
          if timer else []),
        rx.text("BOTS", size="1", weight="bold", color=rx.color("gray", 11), padding_x="0.75rem", letter_spacing="0.05em"),
        rx.cond(
            BotsState.bot_count > 0,
            rx.vstack(rx.foreach(BotsState.bots, lambda bot: sidebar_bot(bot, highlight=highlight, wrap=wrap)),
                      spacing="0", width="100%"),
            rx.text(rx.cond(BotsState.loaded, "No bots yet", "Loading…"), size="2", color=rx.color("gray", 11),
                    padding_x="0.75rem"),
        ),
        spacing="1",
        width="100%",
        overflow_y="auto",
        min_height="0",
        flex="1",
        aria_label="Bots",
        data_bot_list="true",
    )


def nav_contents(active: str, *, wrap: Wrap = _as_is, timer: bool = True) -> rx.Component:
    """Brand, pages and bots (what both the sidebar and the narrow-screen menu list)."""
    return rx.vstack(
        brand(),
        rx.vstack(
            *[nav_entry(item, active=item.key == active, wrap=wrap) for item in NAV_ITEMS],
            spacing="1",
            width="100%",
        ),
        sidebar_bots(highlight=active == BOT_PAGES, wrap=wrap, timer=timer),
        spacing="6",
        width="100%",
        flex="1",
        min_height="0",
    )


def resize_handle() -> rx.Component:
    """The sidebar's right edge: drag it (or focus it and press the arrow keys) to resize;
    double-click resets. The behaviour lives in ``assets/grobot_shell.js``."""
    return rx.el.div(
        role="separator",
        aria_orientation="vertical",
        aria_label="Resize the sidebar",
        title="Drag to resize the sidebar (double-click to reset)",
        tab_index=0,
        data_sidebar_handle="true",
        position="absolute",
        top="0",
        right="-4px",
        width="8px",
        height="100%",
        cursor="col-resize",
        z_index="2",
        background="transparent",
        _hover={"background": rx.color("accent", 6)},
        _focus_visible={"background": rx.color("accent", 8), "outline": "none"},
    )


def sidebar(active: str) -> rx.Component:
    """The navigation column of wide screens (narrow screens open ``nav_drawer`` instead)."""
    return rx.el.nav(
        nav_contents(active),
        user_panel(),
        resize_handle(),
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
        data_sidebar="true",
    )
