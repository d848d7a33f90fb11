"""The frame of a bot's pages: the page layout with the bot's header (name, live status,
Discord identity, enable switch for admins), its tab bar, and the tab's content once the
bot is known to be visible to the user."""

from __future__ import annotations

import logging

import reflex as rx

from grobot.components.bot_tabs import BotTab, tab_bar
from grobot.components.formatting import counted
from grobot.components.forms import switch_label
from grobot.components.layout import page_layout
from grobot.components.status_badge import status_badge
from grobot.state import AppState
from grobot.state.bot_page import BotPageState
from grobot.state.fleet import REFRESH_MS

logger = logging.getLogger(__name__)


def bot_identity() -> rx.Component:
    """Status badge, Discord account and guild count, under the bot's name."""
    muted = rx.color("gray", 11)
    return rx.hstack(
        status_badge(BotPageState.bot_status),
        rx.cond(BotPageState.bot_status_detail != "", rx.text(BotPageState.bot_status_detail, size="2", color=muted)),
        rx.cond(
            BotPageState.bot_discord_name != "",
            rx.hstack(rx.icon("at-sign", size=14, color=muted), rx.text(BotPageState.bot_discord_name, size="2"),
                      rx.cond(BotPageState.bot_status == "online",  # a live count: only while online
                              rx.hstack(rx.text("·", color=muted),
                                        rx.text(counted(BotPageState.bot_guild_count, "guild"), size="2", color=muted),
                                        spacing="1", align="center")),
                      spacing="1", align="center", data_testid="discord-identity"),
            rx.text("Not connected to Discord yet", size="2", color=muted),
        ),
        spacing="3",
        align="center",
        wrap="wrap",
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
            padding="0.4rem 0.75rem",
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


def bot_page(tab: BotTab, *children: rx.Component) -> rx.Component:
    """A bot's page with ``tab`` open and ``children`` as the tab's content."""
    return page_layout(
        rx.cond(
            BotPageState.bot_loaded,
            rx.cond(
                BotPageState.access_error != "",
                access_refused(),
                rx.vstack(tab_bar(tab.key), *children, spacing="5", width="100%"),
            ),
            loading_bot(),
        ),
        active="bot",
        title=BotPageState.bot_name,
        subtitle=rx.cond(BotPageState.bot_ready, bot_identity(), rx.fragment()),
        actions=enabled_switch(),
        breadcrumb=rx.link(rx.hstack(rx.icon("chevron-left", size=14), rx.text("All bots", size="2"), spacing="1",
                                     align="center"), href="/", color=rx.color("gray", 11), underline="none"),
    )
