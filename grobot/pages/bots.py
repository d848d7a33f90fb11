"""The Bots page: the bots a user may see (admins: the whole fleet; testers: the bots granted
to them) with their live status, refreshed every few seconds."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import reflex as rx
from reflex.components.core.banner import has_connection_errors

from grobot.components.empty_state import command_line, empty_state
from grobot.components.layout import page_layout
from grobot.components.status_badge import status_badge
from grobot.core.services.bots import BotSummary
from grobot.core.services.users import NotSignedIn, bots_visible_to
from grobot.state import AppState
from grobot.state.app_state import run_authorized, sign_out_script

logger = logging.getLogger(__name__)

ROUTE = "/"
TITLE = "Bots · GroBot"
REFRESH_MS = 2000
REFRESH_STALE_SECONDS = 30.0
ADD_BOT_COMMAND = "python -m grobot bot add --name NAME --token-stdin"


@dataclass
class BotRow:
    """What the page shows of one bot (never its token: only whether one is set)."""

    id: int
    name: str
    enabled: bool
    has_token: bool
    status: str
    status_detail: str
    discord_user_name: str
    guild_count: int

    @classmethod
    def from_summary(cls, summary: BotSummary) -> "BotRow":
        return cls(
            id=summary.id,
            name=summary.name,
            enabled=summary.enabled,
            has_token=summary.has_token,
            status=summary.status,
            status_detail=summary.status_detail or "",
            discord_user_name=summary.discord_user_name or "",
            guild_count=summary.guild_count,
        )


def load_bot_rows(session_token: str) -> list[BotRow]:
    """The bots the session's user may see, with their status, by name (blocking: run it in a
    thread). Raises ``NotSignedIn`` when the session is no longer valid."""
    return run_authorized(
        session_token,
        lambda session, user: [BotRow.from_summary(summary) for summary in bots_visible_to(user, session=session)],
    )


class BotsState(AppState):
    """The bot list of the Bots page."""

    bots: list[BotRow] = []
    loaded: bool = False
    load_error: str = ""
    # When the refresh in flight started (time.monotonic); 0 when none. A stale value (a
    # refresh that died with its worker) stops counting after REFRESH_STALE_SECONDS.
    _refresh_started: float = 0.0

    @rx.var
    def bot_count(self) -> int:
        return len(self.bots)

    @rx.var
    def online_count(self) -> int:
        return sum(1 for bot in self.bots if bot.status == "online")

    @rx.var
    def error_count(self) -> int:
        return sum(1 for bot in self.bots if bot.status == "error")

    @rx.var
    def summary(self) -> str:
        total = len(self.bots)
        online = sum(1 for bot in self.bots if bot.status == "online")
        return f"{total} bot{'' if total == 1 else 's'} · {online} online"

    @rx.event(background=True)
    async def refresh(self, _tick: str = ""):
        """Reload the bots from the database (on load, then on every timer tick)."""
        async with self:
            if not self.user_id:
                return  # the on-load session check sends the browser to the login page
            now = time.monotonic()
            if self._refresh_started and now - self._refresh_started < REFRESH_STALE_SECONDS:
                return  # the previous tick is still reading
            self._refresh_started = now
            session_token = self.session_token
        rows: list[BotRow] | None = None
        failure: Exception | None = None
        try:
            rows = await asyncio.to_thread(load_bot_rows, session_token)
        except asyncio.CancelledError:  # Reflex ends a page's on-load chain when the browser leaves
            async with self:
                self._refresh_started = 0.0  # else the next ticks would wait for a dead refresh
            raise
        except NotSignedIn:  # expired, or the user was disabled or deleted meanwhile
            async with self:
                self._refresh_started = 0.0
                self._forget_session()
                self.bots = []
            return sign_out_script()
        except Exception as exc:  # the page says so and keeps retrying
            failure = exc
        async with self:
            self._refresh_started = 0.0
            if failure is not None:
                if not self.load_error:  # once per outage with the details, not on every tick
                    logger.warning("Bots page: reading the bots failed", exc_info=failure)
                self.load_error = "The database cannot be read right now. Retrying…"
                return
            self.bots = rows or []
            self.loaded = True
            self.load_error = ""


def stat_card(label: str, value: rx.Var[int], icon: str, color: str) -> rx.Component:
    """A small figure with its label, for the summary above the table."""
    return rx.card(
        rx.hstack(
            rx.center(
                rx.icon(icon, size=18, color=rx.color(color, 11)),
                width="2.25rem",
                height="2.25rem",
                border_radius="8px",
                background=rx.color(color, 3),
            ),
            rx.vstack(
                rx.text(label, size="1", color=rx.color("gray", 11), weight="medium"),
                rx.text(value, size="5", weight="bold"),
                spacing="0",
            ),
            align="center",
            spacing="3",
        ),
        flex="1",
        min_width="10rem",
    )


def bot_row(bot: BotRow) -> rx.Component:
    """One line of the table."""
    muted = rx.color("gray", 10)
    return rx.table.row(
        rx.table.row_header_cell(
            rx.vstack(
                rx.text(bot.name, weight="medium", size="3"),
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
        ),
        rx.table.cell(rx.text(bot.guild_count), text_align="right"),
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
                rx.table.column_header_cell("Discord account", width="20%"),
                rx.table.column_header_cell("Guilds", width="10%", text_align="right"),
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
        "Add your first bot from the command line; it appears here as soon as it is saved. "
        "The Discord token is read from standard input, so it never shows in your shell history.",
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
    """Shows whether the list is live (connected to the server); a hidden timer drives the refresh."""
    return rx.hstack(
        rx.moment(interval=REFRESH_MS, format="HH:mm:ss", on_change=BotsState.refresh, display="none"),
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


def bots_page() -> rx.Component:
    """The Bots page."""
    return page_layout(
        rx.cond(
            BotsState.load_error != "",
            rx.callout(BotsState.load_error, icon="triangle-alert", color_scheme="red", width="100%"),
        ),
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
        actions=live_indicator(),
    )
