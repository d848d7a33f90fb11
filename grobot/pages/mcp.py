"""The MCP servers page (admins): the registry of MCP servers, each with its tools or its error,
a "Test" button that connects now, an editor, and the catalogue of presets (:mod:`grobot.pages.mcp_presets`).

The state and its rules are in :mod:`grobot.pages.mcp_state`.
"""

from __future__ import annotations

import logging
from typing import Any

import reflex as rx

from grobot.components.empty_state import command_line, empty_state
from grobot.components.forms import confirm_dialog, error_text, field, secret_badge, table_header
from grobot.components.layout import page_layout
from grobot.core.models import McpTransport
from grobot.pages.mcp_presets import presets_dialog
from grobot.pages.mcp_presets_state import McpPresetState
from grobot.pages.mcp_state import McpRow, McpState

logger = logging.getLogger(__name__)

ROUTE = "/mcp"
TITLE = "MCP servers · GroBot"
ENABLE_COMMAND = "python -m grobot bot mcp BOT enable SERVER"

__all__ = ["ROUTE", "TITLE", "McpState", "mcp_page"]

# --------------------------------------------------------------------------- components


def transport_badge(transport: rx.Var[str]) -> rx.Component:
    return rx.badge(
        rx.match(transport, ("stdio", "stdio"), ("streamable_http", "HTTP"), ("sse", "SSE"), transport),
        color_scheme=rx.match(transport, ("stdio", "gray"), ("streamable_http", "blue"), "violet"),
        variant="soft",
        radius="full",
    )


def _server_title(row: McpRow) -> rx.Component:
    muted = rx.color("gray", 11)
    return rx.vstack(
        rx.hstack(rx.text(row.name, weight="medium"), transport_badge(row.transport), spacing="2", align="center"),
        rx.text(row.endpoint, size="1", color=muted, font_family="var(--code-font-family, monospace)", truncate=True,
                max_width="18rem", title=row.endpoint),
        rx.cond(
            row.secret_names != "",
            rx.hstack(rx.icon("lock", size=12, color=muted), rx.text(row.secret_names, size="1", color=muted),
                      spacing="1", align="center"),
        ),
        spacing="1",
        align="start",
        min_width="0",
    )


def _enabled_switch(row: McpRow) -> rx.Component:
    return rx.switch(checked=row.enabled, on_change=lambda checked: McpState.set_enabled(row.id, checked),
                     aria_label="Enabled")


def _tools(row: McpRow) -> rx.Component:
    muted = rx.color("gray", 11)
    return rx.cond(
        row.listed,
        rx.vstack(
            rx.link(rx.text(row.tool_count, " tool", rx.cond(row.tool_count == 1, "", "s")),
                    on_click=McpState.show_tools(row.id), cursor="pointer"),
            rx.text("listed ", row.refreshed, size="1", color=muted, title=row.refreshed_at),
            spacing="0",
            align="start",
        ),
        rx.text("not listed yet", color=muted, size="2"),
    )


def _bots(row: McpRow) -> rx.Component:
    return rx.cond(row.bots != "", rx.text(row.bots, size="2"), rx.text("no bot", size="2", color=rx.color("gray", 11)))


def _actions(row: McpRow) -> rx.Component:
    return rx.hstack(
        rx.button(
            rx.cond(McpState.testing_id == row.id, rx.spinner(size="1"), rx.icon("plug-zap", size=14)),
            "Test", size="1", variant="soft", on_click=McpState.test_server(row.id),
            disabled=McpState.testing_id != 0, title="Connect now and list the tools",
        ),
        rx.icon_button(rx.icon("pencil", size=14), variant="ghost", color_scheme="gray", title="Edit", aria_label="Edit",
                       on_click=McpState.start_edit(row.id)),
        rx.icon_button(rx.icon("trash-2", size=14), variant="ghost", color_scheme="red", title="Delete",
                       aria_label="Delete", on_click=McpState.ask_delete(row.id, row.name)),
        spacing="3",
        justify="end",
        align="center",
    )


def server_row(row: McpRow) -> rx.Component:
    """A server in the table (wide screens)."""
    return rx.table.row(
        rx.table.row_header_cell(_server_title(row)),
        rx.table.cell(_enabled_switch(row)),
        rx.table.cell(_tools(row)),
        rx.table.cell(_bots(row)),
        rx.table.cell(check_cell(row)),
        rx.table.cell(_actions(row)),
        align="center",
        data_server_name=row.name,
    )


def server_card(row: McpRow) -> rx.Component:
    """A server as a card (narrow screens)."""
    return rx.card(
        rx.vstack(
            rx.hstack(_server_title(row), rx.spacer(), _enabled_switch(row), align="start", width="100%"),
            rx.hstack(_tools(row), rx.text("·", color=rx.color("gray", 9)), _bots(row), spacing="2", align="center",
                      wrap="wrap"),
            check_cell(row),
            _actions(row),
            spacing="2",
            width="100%",
        ),
        width="100%",
        data_server_card=row.name,
    )


def check_cell(row: McpRow) -> rx.Component:
    """The last test or refresh: OK with the tools, or the error, in one line."""
    return rx.cond(
        row.check != "",
        rx.hstack(
            rx.cond(
                row.last_error != "",
                rx.icon("triangle-alert", size=14, color=rx.color("red", 10), flex_shrink="0"),
                rx.icon("check", size=14, color=rx.color("green", 10), flex_shrink="0"),
            ),
            rx.text(row.check, size="1", color=rx.cond(row.last_error != "", rx.color("red", 11), rx.color("gray", 11)),
                    title=row.check, style={"overflow_wrap": "anywhere"}),
            spacing="1",
            align="start",
            data_testid="mcp-check",
        ),
        rx.text("not tested yet", size="1", color=rx.color("gray", 11), data_testid="mcp-check"),
    )


def servers_table() -> rx.Component:
    return rx.table.root(
        table_header(("Server", "26%"), ("Enabled", "8%"), ("Tools", "12%"), ("Used by", "14%"), ("Last check", "24%"), ("", "16%")),
        rx.table.body(rx.foreach(McpState.servers, server_row)),
        variant="surface",
        size="2",
        width="100%",
    )


def _editor_input(name: str, label: str, *, placeholder: str = "", help_text: str | None = None, area: bool = False,
                  mono: bool = False) -> rx.Component:
    ident = f"mcp-{name}"
    props: dict[str, Any] = dict(id=ident, name=name, placeholder=placeholder, width="100%")
    if mono:
        props["font_family"] = "var(--code-font-family, monospace)"
    control = (
        rx.text_area(default_value=McpState.editor.get(name, ""), rows="3", **props)
        if area
        else rx.input(default_value=McpState.editor.get(name, ""), **props)
    )
    return field(label, control, input_id=ident, error=McpState.editor_errors.get(name, ""), help_text=help_text)


def _secret_input(name: str, label: str, names: rx.Var, placeholder: str) -> rx.Component:
    """A secret mapping: which names are stored, a box for a new set, and a way to remove it."""
    ident = f"mcp-{name}"
    stored = names != ""
    return rx.vstack(
        rx.hstack(
            rx.el.label(rx.text(label, size="2", weight="medium"), html_for=ident),
            secret_badge(stored, testid=f"mcp-{name}-state"),
            rx.cond(stored, rx.text(names, size="1", color=rx.color("gray", 11))),
            spacing="2",
            align="center",
            wrap="wrap",
        ),
        rx.text_area(
            id=ident,
            name=name,
            rows="3",
            placeholder=placeholder,
            width="100%",
            font_family="var(--code-font-family, monospace)",
            auto_complete=False,
            spell_check=False,
        ),
        rx.text(
            rx.cond(stored, "Values are never shown. Type a full new set to replace the stored one; empty keeps it.",
                    "KEY=value, one per line. Stored encrypted, never shown again."),
            size="1",
            color=rx.color("gray", 11),
        ),
        rx.cond(
            stored & (McpState.editor_id != 0),
            rx.el.label(rx.hstack(rx.checkbox(name=f"clear_{name}"), rx.text("Remove the stored values", size="2"), spacing="2",
                                  align="center")),
        ),
        rx.cond(
            McpState.editor_errors.contains(name),
            error_text(McpState.editor_errors.get(name, ""), size="1"),
        ),
        spacing="1",
        width="100%",
    )


def editor_dialog() -> rx.Component:
    stdio = McpState.editor_transport == McpTransport.STDIO.value
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(rx.cond(McpState.editor_id == 0, "Add an MCP server", "Edit MCP server")),
            rx.dialog.description(
                "Saving connects to the server and lists its tools (or shows why it cannot).",
                size="2",
                color=rx.color("gray", 11),
                margin_bottom="1rem",
            ),
            rx.form(
                rx.vstack(
                    _editor_input("name", "Name", placeholder="time",
                                  help_text="Letters, digits, '_' and '-'; tools are named name__tool."),
                    field(
                        "Transport",
                        rx.select(
                            ["stdio", "streamable_http", "sse"],
                            value=McpState.editor_transport,
                            on_change=McpState.set_editor_transport,
                            id="mcp-transport",
                            width="100%",
                        ),
                        input_id="mcp-transport",
                        error=McpState.editor_errors.get("transport", ""),
                        help_text=rx.cond(stdio, "A local program the worker starts (stdin/stdout).", "A remote server reached over HTTP."),
                    ),
                    rx.cond(
                        stdio,
                        rx.vstack(
                            _editor_input("command", "Command", placeholder="uvx", mono=True),
                            _editor_input("args", "Arguments", placeholder="mcp-server-time\n--local-timezone=UTC",
                                          help_text="One per line. {bot_files} stands for the folder of the bot that uses the server.",
                                          area=True, mono=True),
                            _editor_input("cwd", "Working directory", placeholder="Optional", mono=True),
                            _secret_input("env", "Environment variables", McpState.editor.get("env_names", ""), "API_TOKEN=…"),
                            spacing="3",
                            width="100%",
                        ),
                        rx.vstack(
                            _editor_input("url", "URL", placeholder="https://mcp.example.com/mcp", mono=True),
                            _secret_input("headers", "HTTP headers", McpState.editor.get("header_names", ""), "Authorization=Bearer …"),
                            spacing="3",
                            width="100%",
                        ),
                    ),
                    rx.cond(
                        McpState.editor_errors.contains("form"),
                        rx.callout(McpState.editor_errors.get("form", ""), icon="triangle-alert", color_scheme="red", width="100%"),
                    ),
                    rx.hstack(
                        rx.button("Cancel", type="button", variant="soft", color_scheme="gray", on_click=McpState.close_editor),
                        rx.button(rx.cond(McpState.saving, rx.spinner(size="2"), rx.icon("save", size=16)), "Save", type="submit",
                                  disabled=McpState.saving),
                        spacing="3",
                        justify="end",
                        width="100%",
                    ),
                    spacing="4",
                    width="100%",
                ),
                on_submit=McpState.save,
                reset_on_submit=False,
                key=f"mcp-editor-{McpState.editor_version}",
                width="100%",
            ),
            max_width="36rem",
        ),
        open=McpState.editor_open,
        on_open_change=McpState.editor_open_change,
    )


def tools_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title("Tools of ", McpState.tools_server),
            rx.dialog.description(
                rx.cond(McpState.tools_refreshed != "", "As listed at " + McpState.tools_refreshed + ".", "Not listed yet."),
                size="2",
                color=rx.color("gray", 11),
            ),
            rx.scroll_area(
                rx.vstack(
                    rx.foreach(
                        McpState.tools,
                        lambda tool: rx.box(
                            rx.code(tool.name, size="2"),
                            rx.text(tool.description, size="2", color=rx.color("gray", 11), margin_top="0.25rem"),
                            padding_y="0.6rem",
                            border_bottom=f"1px solid {rx.color('gray', 4)}",
                            width="100%",
                        ),
                    ),
                    spacing="0",
                    width="100%",
                ),
                max_height="24rem",
                type="auto",
                margin_top="0.75rem",
            ),
            rx.hstack(rx.dialog.close(rx.button("Close", variant="soft", color_scheme="gray", on_click=McpState.close_tools)),
                      justify="end", margin_top="1rem"),
            max_width="36rem",
        ),
        open=McpState.tools_open,
        on_open_change=McpState.tools_open_change,
    )


def no_servers() -> rx.Component:
    return empty_state(
        "plug",
        "No MCP servers yet",
        "MCP servers give your bots tools: a clock, web fetch, files, your own APIs. Add a known one from the "
        "presets or any server of your own, then enable it for the bots that should use it (on the bot's "
        "Settings tab, or from a shell):",
        command_line(ENABLE_COMMAND),
        rx.hstack(
            rx.button(rx.icon("package-plus", size=16), "Add from preset", on_click=McpPresetState.open_presets),
            rx.button(rx.icon("plus", size=16), "Add an MCP server", variant="soft", on_click=McpState.start_add),
            spacing="2",
            wrap="wrap",
        ),
    )


def refresh_note() -> rx.Component:
    return rx.callout(
        "Saving a server and its Test button connect to it now and list its tools (or show why they cannot). "
        "The worker (python -m grobot worker) also refreshes every enabled server's tools every "
        "GROBOT_MCP_REFRESH_SECONDS (5 minutes by default).",
        icon="info",
        variant="surface",
        width="100%",
    )


def mcp_page() -> rx.Component:
    """The MCP servers page."""
    return page_layout(
        rx.cond(
            McpState.loaded,
            rx.cond(
                McpState.server_count > 0,
                rx.vstack(
                    refresh_note(),
                    rx.box(servers_table(), width="100%", display=rx.breakpoints(initial="none", md="block")),
                    rx.vstack(rx.foreach(McpState.servers, server_card), spacing="3", width="100%",
                              display=rx.breakpoints(initial="flex", md="none")),
                    spacing="4",
                    width="100%",
                ),
                no_servers(),
            ),
            rx.center(rx.spinner(size="3"), padding="3rem", width="100%"),
        ),
        editor_dialog(),
        tools_dialog(),
        presets_dialog(),
        confirm_dialog(
            open_=McpState.delete_id != 0,
            title="Delete MCP server?",
            message="Delete " + McpState.delete_name + "? Bots that use it lose its tools at their next message.",
            confirm_label="Delete",
            on_confirm=McpState.confirm_delete,
            on_cancel=McpState.cancel_delete,
        ),
        active="mcp",
        title="MCP servers",
        subtitle=rx.cond(McpState.loaded, McpState.server_count.to_string() + " registered", "Tool servers your bots can use"),
        actions=rx.hstack(
            rx.button(rx.icon("refresh-cw", size=16), "Refresh", variant="soft", color_scheme="gray", on_click=McpState.open),
            rx.button(rx.icon("package-plus", size=16), "Add from preset", variant="soft", on_click=McpPresetState.open_presets),
            rx.button(rx.icon("plus", size=16), "Add server", on_click=McpState.start_add),
            spacing="2",
            wrap="wrap",
        ),
    )
