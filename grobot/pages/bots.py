"""The Bots page: the bots a user may see (admins: the whole fleet; testers: the bots granted
to them) with their live status, refreshed every few seconds; admins add bots here."""

from __future__ import annotations

import logging

import reflex as rx
from reflex.components.core.banner import has_connection_errors

from grobot.components.empty_state import command_line, empty_state
from grobot.components.layout import WIDE_CELL, page_layout
from grobot.components.stat_card import stat_card
from grobot.components.status_badge import status_badge
from grobot.pages.add_bot import add_bot_button, add_bot_dialog
from grobot.state import AppState
from grobot.state.fleet import BotRow, BotsState

logger = logging.getLogger(__name__)

ROUTE = "/"
TITLE = "Bots · GroBot"
ADD_BOT_COMMAND = "python -m grobot bot add --name NAME --token-stdin"
WORKER_COMMAND = "python -m grobot worker"


def bot_row(bot: BotRow) -> rx.Component:
    """One line of the table."""
    muted = rx.color("gray", 11)
    return rx.table.row(
        rx.table.row_header_cell(
            rx.vstack(
                rx.link(bot.name, href=f"/bots/{bot.id}/chat", weight="medium", size="3"),
                rx.text(f"#{bot.id}", size="1", color=muted),
                spacing="0",
            ),
        ),
        rx.table.cell(
            rx.vstack(
                status_badge(bot.status),
                rx.cond(bot.status_detail != "", rx.text(bot.status_detail, size="1", color=muted)),
                spacing="1",
                align="start",
            ),
        ),
        rx.table.cell(
            rx.cond(
                bot.discord_user_name != "",
                rx.hstack(rx.icon("at-sign", size=14, color=muted), rx.text(bot.discord_user_name), spacing="1", align="center"),
                rx.text("—", color=muted),
            ),
            display=WIDE_CELL,
        ),
        rx.table.cell(  # a live count: shown only while the bot is online
            rx.cond(bot.status == "online", rx.text(bot.guild_count), rx.text("—", color=muted)),
            text_align="right",
            display=WIDE_CELL,
        ),
        rx.table.cell(
            rx.cond(
                bot.enabled,
                rx.hstack(rx.icon("circle-check", size=16, color=rx.color("green", 10)), rx.text("Enabled"), spacing="1", align="center"),
                rx.hstack(rx.icon("circle-minus", size=16, color=muted), rx.text("Disabled", color=muted), spacing="1", align="center"),
            ),
        ),
        align="center",
        data_bot_id=bot.id,
    )


def bots_table() -> rx.Component:
    """The table of bots."""
    return rx.table.root(
        rx.table.header(
            rx.table.row(
                rx.table.column_header_cell("Bot", width="22%"),
                rx.table.column_header_cell("Status", width="34%"),
                rx.table.column_header_cell("Discord account", width="20%", display=WIDE_CELL),
                rx.table.column_header_cell("Guilds", width="10%", text_align="right", display=WIDE_CELL),
                rx.table.column_header_cell("Enabled", width="14%"),
            ),
        ),
        rx.table.body(rx.foreach(BotsState.bots, bot_row)),
        variant="surface",
        size="2",
        width="100%",
    )


def no_bots() -> rx.Component:
    """What the admin sees before the first bot exists."""
    return empty_state(
        "bot",
        "No bots yet",
        "Add your first bot here, or from the command line (the Discord token is read from standard input, "
        "so it never shows in your shell history).",
        add_bot_button(),
        command_line(ADD_BOT_COMMAND),
    )


def no_shared_bots() -> rx.Component:
    """What a tester sees before an admin has shared a bot with them."""
    return empty_state(
        "bot",
        "No bots shared with you yet",
        "An administrator decides which bots you may test. Ask them to give you access; "
        "the bots appear here as soon as they do.",
    )


def loading() -> rx.Component:
    return rx.center(rx.hstack(rx.spinner(size="3"), rx.text("Loading bots…", color=rx.color("gray", 11))), padding="3rem", width="100%")


def live_indicator() -> rx.Component:
    """Shows whether the list is live (connected to the server); the sidebar's timer drives the refresh."""
    return rx.hstack(
        rx.box(
            width="8px",
            height="8px",
            border_radius="50%",
            background=rx.cond(has_connection_errors, rx.color("amber", 9), rx.color("green", 9)),
        ),
        rx.text(rx.cond(has_connection_errors, "Reconnecting…", "Live"), size="2", color=rx.color("gray", 11)),
        align="center",
        spacing="2",
    )


def no_worker_banner() -> rx.Component:
    """Shown while no bot worker runs: no bot is connected to Discord, whatever its last state."""
    return rx.callout.root(
        rx.callout.icon(rx.icon("power-off")),
        rx.vstack(
            rx.callout.text(
                rx.text.strong("No bot worker is running"),
                ": no bot is connected to Discord, whatever its last status, and Test Chat gets no answers. ",
                rx.cond(AppState.is_admin, "Start it on the server: make run starts it with the web app, or alone:",
                        "Ask an administrator to start it."),
            ),
            rx.cond(AppState.is_admin, command_line(WORKER_COMMAND)),
            spacing="2",
            align="start",
        ),
        color_scheme="amber",
        width="100%",
        role="alert",
        data_testid="no-worker",
    )


def bots_page() -> rx.Component:
    """The Bots page."""
    return page_layout(
        rx.cond(
            BotsState.load_error != "",
            rx.callout(BotsState.load_error, icon="triangle-alert", color_scheme="red", width="100%"),
        ),
        rx.cond(BotsState.loaded & ~BotsState.worker_running, no_worker_banner()),
        rx.cond(AppState.is_admin, add_bot_dialog()),
        rx.cond(
            BotsState.loaded,
            rx.cond(
                BotsState.bot_count > 0,
                rx.vstack(
                    rx.flex(
                        stat_card("Bots", BotsState.bot_count, "bot", "accent"),
                        stat_card("Online", BotsState.online_count, "wifi", "green"),
                        stat_card("Errors", BotsState.error_count, "triangle-alert", "red"),
                        gap="1rem",
                        wrap="wrap",
                        width="100%",
                    ),
                    bots_table(),
                    spacing="5",
                    width="100%",
                ),
                rx.cond(AppState.is_admin, no_bots(), no_shared_bots()),
            ),
            rx.cond(BotsState.load_error == "", loading()),
        ),
        active="bots",
        title="Bots",
        subtitle=rx.cond(BotsState.loaded, BotsState.summary, "The fleet and its live status"),
        actions=rx.hstack(live_indicator(),
                          rx.cond(AppState.is_admin & (BotsState.bot_count > 0), add_bot_button()),
                          spacing="4", align="center"),
    )
