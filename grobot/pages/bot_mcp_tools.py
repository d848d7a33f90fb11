"""Per tool of an MCP server the bot uses: its fallback tool and whether its calls write.

Part of the MCP card of the Settings tab (:mod:`grobot.pages.bot_settings`): the rows are built
from the server's cached tool list and the bot's ``BotMcpServer.tool_settings``, the fields are
sent with the card's form, and :func:`settings_from_form` turns them back into what
:func:`grobot.core.services.mcp_servers.enable_for_bot` takes (it validates them).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import reflex as rx

from grobot.core.models import BotMcpServer, McpServer

logger = logging.getLogger(__name__)

FALLBACK_PREFIX = "tool_fallback:"
ACCESS_PREFIX = "tool_access:"
ACCESS_LABELS = {"read_only": "Read-only: in parallel", "writes": "Writes: alone, in order"}


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


def _tool_line(row: McpToolRow, list_id: Any) -> rx.Component:
    return rx.fragment(
        rx.text(row.tool, size="2", weight="medium", data_testid="mcp-tool-name"),
        rx.input(name=row.fallback_field, default_value=row.fallback, placeholder="No fallback", size="1",
                 width="100%", aria_label=row.fallback_label, custom_attrs={"list": list_id}),
        rx.el.select(
            rx.el.option(row.auto_label, value="auto"),
            rx.el.option(ACCESS_LABELS["read_only"], value="read_only"),
            rx.el.option(ACCESS_LABELS["writes"], value="writes"),
            name=row.access_field, default_value=row.access, aria_label=row.access_label,
            style={"font_size": "var(--font-size-1)", "padding": "0.2rem", "width": "100%",
                   "border_radius": "var(--radius-2)", "border": f"1px solid {rx.color('gray', 7)}",
                   "background": "transparent"},
        ),
    )


def tool_settings(tools: Any, server_id: Any) -> rx.Component:
    """The per-tool fields of one MCP card (``tools``: the row's ``list[McpToolRow]`` var)."""
    list_id = "mcp-fallbacks-" + server_id.to_string()
    return rx.cond(
        tools.length() > 0,
        rx.vstack(
            rx.text("Per tool: the tool to call when it fails (same arguments), and whether its calls change things.",
                    size="1", color=rx.color("gray", 10)),
            rx.el.datalist(rx.foreach(tools, lambda row: rx.el.option(value=row.tool)), id=list_id),
            rx.grid(
                rx.text("Tool", size="1", weight="medium"),
                rx.text("Fallback", size="1", weight="medium"),
                rx.text("Calls", size="1", weight="medium"),
                rx.foreach(tools, lambda row: _tool_line(row, list_id)),
                columns="minmax(6rem, 1fr) 2fr 2fr", spacing="2", width="100%", align="center",
            ),
            spacing="2",
            width="100%",
            data_testid="mcp-tool-settings",
        ),
    )
