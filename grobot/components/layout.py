"""The page frame: a sidebar with the navigation and the signed-in user (on narrow screens a
menu button in the header instead), a header with the page title and the theme control, the
content. Nothing of a page shows until the session has been checked."""

from __future__ import annotations

import logging

import reflex as rx

from grobot.components.nav_drawer import nav_drawer
from grobot.components.sidebar import brand, sidebar, sign_out_button
from grobot.components.theme_control import theme_control
from grobot.state import AppState

__all__ = ["brand", "compact_header", "header", "page_layout"]  # brand: also the login page's

logger = logging.getLogger(__name__)


def narrow_or_wide(narrow: str, wide: str) -> list[str]:
    """A responsive style value: ``narrow`` on narrow screens (phones, below 48em), ``wide`` from there on."""
    return [narrow, narrow, wide]


def narrow_only(display: str = "flex") -> list[str]:
    """A responsive ``display``: shown (as ``display``) on narrow screens only."""
    return narrow_or_wide(display, "none")


def wide_only(display: str = "flex") -> list[str]:
    """A responsive ``display``: shown (as ``display``) on wide screens only."""
    return narrow_or_wide("none", display)


NARROW_ONLY = narrow_only()
WIDE_ONLY = wide_only()
WIDE_CELL = wide_only("table-cell")  # a table column left out on narrow screens


# A text kept to one line, cut with "…" (Radix's ``truncate`` prop does not reach the page through Reflex).
ONE_LINE = {"white_space": "nowrap", "overflow": "hidden", "text_overflow": "ellipsis"}

MAIN_ID = "main-content"


def skip_link() -> rx.Component:
    """The first stop of the Tab key: "Skip to content", out of sight until it has the focus; it
    moves the focus to the main content, past the sidebar's links (in the browser, no server
    round trip; the URL keeps no ``#``)."""
    return rx.el.a(
        "Skip to content",
        href=f"#{MAIN_ID}",
        on_click=[rx.prevent_default, rx.set_focus(MAIN_ID)],
        position="fixed",
        top="0.5rem",
        left="0.5rem",
        z_index="1000",
        padding="0.5rem 1rem",
        border_radius="var(--radius-3)",
        background=rx.color("accent", 9),
        color="var(--accent-contrast)",
        font_weight="500",
        font_size="0.875rem",
        text_decoration="none",
        box_shadow="var(--shadow-4)",
        transform="translateY(-200%)",  # off screen above the page until focused
        _focus={"transform": "none", "outline": f"2px solid {rx.color('accent', 8)}", "outline_offset": "2px"},
    )


def top_bar(active: str) -> rx.Component:
    """Narrow screens, above the title: the menu button and the brand, the theme control and
    the way out (wide screens have the sidebar, and the theme control beside the actions)."""
    return rx.hstack(
        rx.hstack(nav_drawer(active), brand(), align="center", spacing="3"),
        rx.hstack(theme_control(), sign_out_button(compact=True), align="center", spacing="2"),
        display=NARROW_ONLY,
        justify="between",
        align="center",
        width="100%",
    )


def header(
    title: str | rx.Var,
    subtitle: str | rx.Var | rx.Component | None = None,
    actions: rx.Component | None = None,
    breadcrumb: rx.Component | None = None,
    active: str = "",
) -> rx.Component:
    """The page header: title, an optional subtitle, optional actions and the theme control on
    the right (narrow screens: the top bar with the menu first)."""
    return rx.el.header(
        top_bar(active),
        rx.vstack(
            *([breadcrumb] if breadcrumb is not None else []),
            rx.heading(title, size="7", weight="bold", as_="h1"),
            *([_subtitle(subtitle)] if subtitle is not None else []),
            spacing="1",
            min_width="0",
            max_width="100%",
        ),
        rx.hstack(
            actions if actions is not None else rx.fragment(),
            rx.box(theme_control(), display=WIDE_ONLY),
            align="center",
            spacing="4",
            wrap="wrap",
        ),
        display="flex",
        justify_content="space-between",
        align_items="flex-end",
        flex_wrap="wrap",
        gap="1rem",
        width="100%",
        padding_bottom="1.25rem",
        border_bottom=f"1px solid {rx.color('gray', 4)}",
    )


def compact_header(
    title: str | rx.Var,
    subtitle: rx.Component | None,
    actions: rx.Component | None,
    breadcrumb: rx.Component | None,
    active: str,
) -> rx.Component:
    """A bot's header in one line on wide screens (the way back, the name, its status line, the
    actions and the theme control); on narrow screens the top bar, then the name beside the actions
    and the status line under them, each one line (long texts are cut, whole in their tooltip)."""
    return rx.el.header(
        top_bar(active),
        rx.flex(
            *([rx.box(breadcrumb, display=WIDE_ONLY, flex_shrink="0")] if breadcrumb is not None else []),
            rx.heading(title, size=rx.breakpoints(initial="5", md="6"), weight="bold", as_="h1", **ONE_LINE,
                       min_width="0", flex_shrink=narrow_or_wide("1", "0"), max_width=narrow_or_wide("60%", "20rem"),
                       order="1",
                       title=title),
            rx.box(subtitle if subtitle is not None else rx.fragment(), min_width="0",
                   flex=narrow_or_wide("1 0 100%", "1 1 auto"), order=narrow_or_wide("3", "2")),
            rx.hstack(actions if actions is not None else rx.fragment(), rx.box(theme_control(), display=WIDE_ONLY),
                      align="center", spacing="3", flex_shrink="0", margin_left="auto",
                      order=narrow_or_wide("2", "3")),
            align="center",
            column_gap="0.75rem",
            row_gap="0.5rem",
            wrap=rx.breakpoints(initial="wrap", md="nowrap"),
            width="100%",
            min_width="0",
        ),
        display="flex",
        flex_direction="column",
        gap="0.75rem",
        width="100%",
        data_testid="page-header",
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
    compact: bool = False,
    fill: bool = False,
) -> rx.Component:
    """A whole page: sidebar, header and ``children`` as the main content. ``compact``: the one-line
    header of a bot's pages; ``fill``: the page is exactly the window's height and its last child takes
    what the header leaves (the Test Chat: its history is the one thing that scrolls).

    Shown only to a signed-in user: the page's on-load check (``AppState.require_login``)
    fills in the user or sends the browser to the login page.
    """
    return rx.cond(
        AppState.signed_in,
        _frame(*children, active=active, title=title, subtitle=subtitle, actions=actions, breadcrumb=breadcrumb,
               compact=compact, fill=fill),
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
    compact: bool,
    fill: bool,
) -> rx.Component:
    if compact:
        top = compact_header(title, subtitle if isinstance(subtitle, rx.Component) or subtitle is None
                             else _subtitle(subtitle), actions, breadcrumb, active)
    else:
        top = header(title, subtitle, actions, breadcrumb, active)
    return rx.flex(
        skip_link(),
        sidebar(active),
        rx.el.main(
            rx.vstack(
                top,
                *children,
                spacing="3" if compact else "5",
                width="100%",
                max_width="72rem",
                margin_x="auto",
                flex="1" if fill else "0 0 auto",
                min_height="0",
            ),
            id=MAIN_ID,
            tab_index=-1,  # the skip link's target takes the focus (not reached by Tab itself)
            flex="1",
            min_width="0",
            padding=["0.75rem 1rem", "1rem 1.5rem", "1.25rem 2.5rem" if compact else "2rem 2.5rem"],
            _focus={"outline": "none"},
            display="flex",
            flex_direction="column",
            height="100dvh" if fill else "auto",
            overflow_y="auto" if fill else "visible",  # a window too short for the page: it scrolls as one
        ),
        min_height="100vh",
        width="100%",
        background=rx.color("gray", 1),
    )
