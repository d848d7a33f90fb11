"""The frame of a bot's pages: the page layout with the bot's header (name, live status,
Discord identity, enable switch for admins), its tab bar, and the tab's content once the
bot is known to be visible to the user."""

from __future__ import annotations

import logging

import reflex as rx

from grobot.components.bot_tabs import BotTab, tab_bar
from grobot.components.formatting import counted
from grobot.components.forms import switch_label
from grobot.components.layout import ONE_LINE, page_layout, wide_only
from grobot.components.safe_text import safe_text
from grobot.components.status_badge import status_badge
from grobot.state import AppState
from grobot.state.bot_page import BotPageState
from grobot.state.fleet import REFRESH_MS

logger = logging.getLogger(__name__)


def status_details() -> rx.Component:
    """Admins: the whole text of the bot's status (an error's own words) behind "Details"."""
    return rx.cond(
        BotPageState.bot_status_technical != "",
        rx.popover.root(
            rx.popover.trigger(rx.button("Details", variant="ghost", size="1", color_scheme="gray",
                                         data_testid="status-details")),
            rx.popover.content(
                safe_text(BotPageState.bot_status_technical, size="1", font_family="var(--code-font-family)",
                          word_break="break-word"),
                max_width="min(32rem, 90vw)",
            ),
        ),
    )


def bot_identity() -> rx.Component:
    """Status badge, why (in plain words), Discord account and guild count, on one line beside the
    bot's name (what does not fit is cut, and whole in the tooltip)."""
    muted = rx.color("gray", 11)
    return rx.hstack(
        status_badge(BotPageState.bot_status),
        rx.cond(BotPageState.bot_status_detail != "",
                rx.text(BotPageState.bot_status_detail, size="2", color=muted, **ONE_LINE, min_width="0",
                        title=BotPageState.bot_status_detail, data_testid="status-detail")),
        status_details(),
        rx.cond(
            BotPageState.bot_discord_name != "",
            rx.hstack(rx.icon("at-sign", size=14, color=muted),
                      rx.text(BotPageState.bot_discord_name, size="2", **ONE_LINE, max_width="12rem"),
                      rx.cond(BotPageState.bot_status == "online",  # a live count: only while online
                              rx.hstack(rx.text("·", color=muted),
                                        rx.text(counted(BotPageState.bot_guild_count, "guild"), size="2", color=muted,
                                                white_space="nowrap"),
                                        spacing="1", align="center")),
                      spacing="1", align="center", flex_shrink="0", display=wide_only(),
                      data_testid="discord-identity"),
            rx.text("Not connected to Discord yet", size="2", color=muted, white_space="nowrap",
                    display=wide_only("block")),
        ),
        spacing="2",
        align="center",
        wrap="nowrap",
        min_width="0",
        data_testid="bot-status",
    )


def enabled_switch() -> rx.Component:
    """Admins: turn the bot on or off (the worker starts or stops its process)."""
    return rx.cond(
        AppState.is_admin & BotPageState.bot_ready,
        switch_label(
            rx.moment(interval=REFRESH_MS, format="HH:mm:ss", on_change=BotPageState.refresh_header, display="none"),
            rx.text(rx.cond(BotPageState.bot_enabled, "Enabled", "Disabled"), size="2", weight="medium",
                    color=rx.color("gray", 11)),
            rx.switch(checked=BotPageState.bot_enabled, on_change=BotPageState.set_bot_enabled, aria_label="Bot enabled"),
            padding="0.25rem 0.6rem",
            border=f"1px solid {rx.color('gray', 5)}",
            border_radius="8px",
            background=rx.color("gray", 2),
        ),
        rx.moment(interval=REFRESH_MS, format="HH:mm:ss", on_change=BotPageState.refresh_header, display="none"),
    )


def access_refused() -> rx.Component:
    """Shown instead of the tab when the bot is unknown, not visible, or the tab is for admins."""
    return rx.callout(
        BotPageState.access_error,
        icon="shield-alert",
        color_scheme="amber",
        size="2",
        width="100%",
        data_testid="access-error",
    )


def loading_bot() -> rx.Component:
    return rx.center(rx.hstack(rx.spinner(size="3"), rx.text("Loading the bot…", color=rx.color("gray", 11)),
                               spacing="3"), padding="3rem", width="100%")


def bot_page(tab: BotTab, *children: rx.Component, fill: bool = False) -> rx.Component:
    """A bot's page with ``tab`` open and ``children`` as the tab's content (``fill``: the content takes
    the rest of the window's height, see :func:`page_layout`)."""
    return page_layout(
        rx.cond(
            BotPageState.bot_loaded,
            rx.cond(
                BotPageState.access_error != "",
                access_refused(),
                rx.vstack(tab_bar(tab.key), *children, spacing="4", width="100%", flex="1" if fill else "0 0 auto",
                          min_height="0"),
            ),
            loading_bot(),
        ),
        active="bot",
        title=BotPageState.bot_name,
        subtitle=rx.cond(BotPageState.bot_ready, bot_identity(), rx.fragment()),
        actions=enabled_switch(),
        breadcrumb=rx.link(rx.hstack(rx.icon("chevron-left", size=14), rx.text("All bots", size="2", white_space="nowrap"),
                                     spacing="1", align="center"), href="/", color=rx.color("gray", 11), underline="none",
                           title="All bots"),
        compact=True,
        fill=fill,
    )
