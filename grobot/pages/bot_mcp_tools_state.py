"""A bot's MCP tool settings and the check of a server: its state, what it reads and does through the
services with the checks of each event (the view is in :mod:`grobot.pages.bot_mcp_tools`)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.core.errors import GroBotError
from grobot.core.models import Bot, BotMcpServer, McpServer
from grobot.core.services import mcp_servers
from grobot.core.services.mcp_tool_lists import check_and_store
from grobot.core.services.users import NotSignedIn
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import run_for_bot, user_message

logger = logging.getLogger(__name__)

FALLBACK_PREFIX = "tool_fallback:"
ACCESS_PREFIX = "tool_access:"
TEST_TIMEOUT = 15.0  # seconds a test waits for the server to start and list its tools


@dataclass
class McpToolRow:
    """One tool of the server, with the bot's settings for it (names of the form fields included)."""

    tool: str
    fallback: str
    access: str  # "auto", "read_only" or "writes"
    auto_label: str  # what "auto" means for this tool, from its MCP annotations
    fallback_field: str
    access_field: str
    fallback_label: str
    access_label: str


def _annotated(entry: dict[str, Any]) -> str:
    if entry.get("read_only"):
        return "Auto: read-only (annotated)"
    if entry.get("writes"):
        return "Auto: writes (annotated)"
    return "Auto: not annotated, in parallel"


def tool_rows(server: McpServer, link: BotMcpServer | None) -> list[McpToolRow]:
    """A row per tool of the server's last tool list."""
    settings = (link.tool_settings if link else None) or {}
    rows = []
    for entry in server.tools_cache or []:
        name = str(entry.get("name") or "")
        if not name:
            continue
        own = settings.get(name, {})
        rows.append(McpToolRow(
            tool=name, fallback=own.get("fallback", ""), access=own.get("access", "auto"), auto_label=_annotated(entry),
            fallback_field=FALLBACK_PREFIX + name, access_field=ACCESS_PREFIX + name,
            fallback_label=f"Fallback of {name}", access_label=f"Calls of {name}",
        ))
    return rows


def settings_from_form(form_data: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """``(fallbacks, access)`` per tool from the card's submitted fields."""
    fallbacks: dict[str, str] = {}
    access: dict[str, str] = {}
    for key, value in form_data.items():
        if key.startswith(FALLBACK_PREFIX):
            fallbacks[key[len(FALLBACK_PREFIX):]] = str(value or "").strip()
        elif key.startswith(ACCESS_PREFIX):
            access[key[len(ACCESS_PREFIX):]] = str(value or "auto")
    return fallbacks, access


class McpTestMixin(rx.State, mixin=True):
    """The MCP cards' "Test": mixed into the Settings tab's state, which provides ``_reload_mcp``."""

    mcp_testing: int = 0  # the server being tested now
    mcp_test_error: dict[str, str] = {}  # server id -> why the test could not run (not the server's error)

    @rx.event
    async def test_mcp(self, server_id: int):
        """Connect to the server now, as this bot uses it; its card then shows its tools or its error."""
        key = str(server_id)
        try:  # an admin who may see this bot
            await asyncio.to_thread(run_for_bot, self.session_token, self.current_bot_id,  # type: ignore[attr-defined]
                                    lambda _session, _user, _bot: None, admin=True)
        except NotSignedIn:
            self._forget_session()  # type: ignore[attr-defined]
            yield sign_out_script()
            return
        except Exception as exc:
            self.mcp_test_error = {key: user_message(exc)}
            return
        self.mcp_testing, self.mcp_test_error = int(server_id), {}
        yield
        try:
            await check_and_store(int(server_id), timeout=TEST_TIMEOUT, bot_id=self.current_bot_id)  # type: ignore[attr-defined]
        except GroBotError as exc:
            self.mcp_test_error = {key: str(exc)}
        finally:
            self.mcp_testing = 0
        await self._reload_mcp()  # type: ignore[attr-defined]


@dataclass
class McpRow:
    """An MCP server and how this bot may use it."""

    server_id: int
    name: str
    transport: str
    server_enabled: bool
    linked: bool
    allowed_tools: str
    timeout: str
    known_tools: str
    last_error: str
    tools: list[McpToolRow] = field(default_factory=list)  # per tool: fallback and read/write


def mcp_rows(session: Session, bot: Bot) -> list[McpRow]:
    """Every MCP server and how the bot may use it (its link: tools allowed, timeout, per-tool settings)."""
    links = {link.mcp_server_id: link for link, _ in mcp_servers.bot_links(session=session, bot_id=bot.id or 0,
                                                                           enabled_only=False)}
    rows = []
    for server in mcp_servers.list_servers(session=session):
        link = links.get(server.id)
        timeout = link.timeout_seconds if link else 30.0
        rows.append(McpRow(
            server_id=server.id or 0, name=server.name, transport=server.transport, server_enabled=server.enabled,
            linked=bool(link and link.enabled), allowed_tools=", ".join(link.allowed_tools or []) if link else "",
            timeout=str(int(timeout)) if float(timeout).is_integer() else str(timeout),
            known_tools=", ".join(str(t.get("name")) for t in (server.tools_cache or []) if t.get("name")),
            last_error=server.last_error or "", tools=tool_rows(server, link),
        ))
    return rows
