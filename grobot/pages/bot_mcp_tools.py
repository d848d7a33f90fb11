"""The MCP cards of the Settings tab (:mod:`grobot.pages.bot_settings`): per tool of a server the
bot uses, its fallback tool and whether its calls write; and the card's "Test" button.

The rows are built from the server's cached tool list and the bot's ``BotMcpServer.tool_settings``,
the fields are sent with the card's form, and :func:`settings_from_form` turns them back into what
:func:`grobot.core.services.mcp_servers.enable_for_bot` takes (it validates them). "Test" connects to
the server now, as this bot uses it (its ``{bot_files}`` folder), stores its tools or its error, and
shows them on the card (:class:`McpTestMixin`, mixed into the tab's state).
"""

from __future__ import annotations

from typing import Any

import reflex as rx

from grobot.components.empty_state import command_line
from grobot.components.unsaved import guard_attrs
from grobot.pages.bot_mcp_tools_state import McpRow, McpToolRow
from grobot.pages.bot_settings_cards import card_section
from grobot.pages.bot_settings_state import BotSettingsState

ACCESS_LABELS = {"read_only": "Read-only: in parallel", "writes": "Writes: alone, in order"}


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
                    size="1", color=rx.color("gray", 11)),
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


def mcp_check(state: Any, server_id: Any, known_tools: Any, last_error: Any) -> rx.Component:
    """The card's "Test" button and what the last test or refresh found, in one line."""
    key = server_id.to_string()
    failed = (last_error != "") | state.mcp_test_error.contains(key)
    line = rx.cond(
        state.mcp_test_error.contains(key), state.mcp_test_error[key],
        rx.cond(last_error != "", last_error,
                rx.cond(known_tools != "", "OK: " + known_tools, "Not tested yet: Test connects and lists its tools.")),
    )
    return rx.hstack(
        rx.button(
            rx.cond(state.mcp_testing == server_id, rx.spinner(size="1"), rx.icon("plug-zap", size=14)),
            "Test", type="button", size="1", variant="soft", on_click=state.test_mcp(server_id),
            disabled=state.mcp_testing != 0, title="Connect now and list the tools",
        ),
        rx.text(line, size="1", color=rx.cond(failed, rx.color("red", 11), rx.color("gray", 11)),
                style={"overflow_wrap": "anywhere"}, data_testid="mcp-check"),
        spacing="2",
        align="center",
        width="100%",
    )


ADD_MCP_COMMAND = "python -m grobot mcp add --preset time"


def mcp_row(row: McpRow) -> rx.Component:
    stop = rx.cond(row.linked, "Stop using " + row.name + " for this bot?", "")
    return rx.card(
        rx.form(
            rx.vstack(
                rx.hstack(
                    rx.el.label(rx.hstack(
                        rx.checkbox(name="enabled", default_checked=row.linked, disabled=~row.server_enabled,
                                    custom_attrs={"data-confirm-when-unchecked": stop}),
                        rx.text(row.name, weight="medium"), spacing="2", align="center")),
                    rx.badge(row.transport, variant="surface", color_scheme="gray", size="1"),
                    rx.cond(~row.server_enabled, rx.badge("server disabled", color_scheme="amber", size="1")),
                    rx.spacer(),
                    rx.button("Save", type="submit", variant="soft", size="1"),
                    align="center",
                    spacing="3",
                    width="100%",
                ),
                rx.el.input(type="hidden", name="server_id", value=row.server_id),
                rx.grid(
                    rx.el.label(rx.text("Allowed tools", size="1", weight="medium"),
                                rx.input(name="allowed_tools", default_value=row.allowed_tools,
                                         placeholder="All tools of the server", size="2", width="100%"),
                                display="flex", flex_direction="column", gap="0.25rem"),
                    rx.el.label(rx.text("Timeout (s)", size="1", weight="medium"),
                                rx.input(name="timeout", default_value=row.timeout, type="number", size="2",
                                         width="100%"),
                                display="flex", flex_direction="column", gap="0.25rem"),
                    columns="3fr 1fr", spacing="3", width="100%",
                ),
                mcp_check(BotSettingsState, row.server_id, row.known_tools, row.last_error),
                rx.cond(row.known_tools != "", tool_settings(row.tools, row.server_id)),
                rx.cond(BotSettingsState.mcp_errors.contains(row.server_id.to_string()),  # type: ignore[attr-defined]
                        rx.text(BotSettingsState.mcp_errors[row.server_id.to_string()], size="2",
                                color=rx.color("red", 11), role="alert")),
                spacing="2",
                width="100%",
            ),
            on_submit=BotSettingsState.save_mcp,
            reset_on_submit=False,
            key=f"mcp-{row.server_id}-{BotSettingsState.revision}-"
                f"{BotSettingsState.versions.get('mcp-' + row.server_id.to_string(), 0)}",
            **guard_attrs(),
        ),
        width="100%",
        data_server=row.name,
    )


def mcp_section() -> rx.Component:
    return card_section(
        "MCP servers", "The tool servers this bot may use, which of their tools, how long a call may take, "
                       "and per tool its fallback and whether it changes things.",
        rx.cond(
            BotSettingsState.mcp.length() > 0,  # type: ignore[attr-defined]
            rx.vstack(rx.foreach(BotSettingsState.mcp, mcp_row), spacing="3", width="100%"),
            rx.vstack(rx.text("No MCP servers are registered yet. Add one on the ",
                              rx.link("MCP servers page", href="/mcp"),
                              " (known servers are one click: Add from preset), or from the command line:", size="2",
                              color=rx.color("gray", 11)), command_line(ADD_MCP_COMMAND), spacing="2", width="100%"),
        ),
        saves="Each server saves on its own",
    )
