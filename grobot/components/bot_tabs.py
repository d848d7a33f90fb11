"""The tabs of a bot's pages: one definition per tab (add a tab by adding a ``BotTab``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import reflex as rx

from grobot.components.page_scripts import after_paint
from grobot.state import AppState
from grobot.state.bot_page import BotPageState

logger = logging.getLogger(__name__)

BOT_ROUTE_PREFIX = "/bots/[bot_id]"


@dataclass(frozen=True)
class BotTab:
    """One tab of a bot: its URL segment, label, lucide icon and who may open it."""

    key: str
    label: str
    icon: str
    admin_only: bool = True

    @property
    def route(self) -> str:
        """The route pattern of the tab's page (``/bots/[bot_id]/<key>``)."""
        return f"{BOT_ROUTE_PREFIX}/{self.key}"


CHAT = BotTab("chat", "Test Chat", "message-square", admin_only=False)
LOGS = BotTab("logs", "Logs", "scroll-text")
SETTINGS = BotTab("settings", "Settings", "settings")
FILES = BotTab("files", "Files", "folder")
KNOWLEDGE = BotTab("knowledge", "Knowledge Base", "book-user")
MEMORY = BotTab("memory", "Memory", "brain")
COUNCIL = BotTab("council", "Council", "users")
CONVERSATIONS = BotTab("conversations", "Conversations", "messages-square")
SCHEDULES = BotTab("schedules", "Schedules", "calendar-clock")

# In the order of the tab bar.
BOT_TABS: tuple[BotTab, ...] = (CHAT, LOGS, SETTINGS, SCHEDULES, FILES, KNOWLEDGE, MEMORY, CONVERSATIONS, COUNCIL)


def bot_href(tab_key: str) -> rx.Var:
    """The URL of a tab of the open bot."""
    return f"/bots/{BotPageState.current_bot_id}/{tab_key}"  # type: ignore[return-value]


def tab_link(tab: BotTab, *, active: bool) -> rx.Component:
    """One tab of the bar; the open one is underlined."""
    link = rx.link(
        rx.hstack(
            rx.icon(tab.icon, size=16),
            rx.text(tab.label, size="2", weight="medium"),
            align="center",
            spacing="2",
            padding_x="0.75rem",
            padding_y="0.5rem",
            white_space="nowrap",
            color=rx.color("accent", 11) if active else rx.color("gray", 11),
            border_bottom=f"2px solid {rx.color('accent', 9)}" if active else "2px solid transparent",
            _hover={"color": rx.color("accent", 11)},
        ),
        href=bot_href(tab.key),
        underline="none",
        aria_current="page" if active else None,
        data_tab=tab.key,
    )
    return rx.cond(AppState.is_admin, link) if tab.admin_only else link


# The open tab is scrolled into the bar's view (on a phone the bar scrolls sideways).
SHOW_OPEN_TAB = after_paint("""
  const tab = document.querySelector('nav[aria-label="Bot sections"] a[aria-current="page"]');
  const bar = tab && tab.closest('nav');
  if (bar && bar.scrollWidth > bar.clientWidth) {
    bar.scrollLeft = Math.max(0, tab.offsetLeft - (bar.clientWidth - tab.offsetWidth) / 2);
  }""")


def tab_bar(active: str) -> rx.Component:
    """The bar of the bot's tabs, one row (testers see only the tabs open to them): on a narrow screen
    it scrolls sideways, the open tab in view."""
    return rx.el.nav(
        rx.hstack(*[tab_link(tab, active=tab.key == active) for tab in BOT_TABS], spacing="1", wrap="nowrap",
                  width="max-content"),
        width="100%",
        overflow_x="auto",
        overflow_y="hidden",
        flex_shrink="0",
        style={"scrollbarWidth": "thin"},
        border_bottom=f"1px solid {rx.color('gray', 5)}",
        aria_label="Bot sections",
        on_mount=rx.call_script(SHOW_OPEN_TAB),
    )
