"""The MCP servers page (admins): the registry of MCP servers, their cached tools and errors.

The web app never starts an MCP server: it reads and writes the registry only. The worker
(``python -m bot_worker``) connects to each enabled server and stores its tool list every
``GROBOT_MCP_REFRESH_SECONDS``; the page shows when that last happened. Environment
variables and headers are secrets: the page shows their names and whether any are stored,
never a value, and accepts a new set that replaces the stored one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import reflex as rx

from grobot.components.empty_state import command_line, empty_state
from grobot.components.formatting import ago, utc_text
from grobot.components.forms import confirm_dialog, error_text, field, muted_dash, secret_badge, table_header
from grobot.components.layout import page_layout
from grobot.core.errors import GroBotError
from grobot.core.models import McpTransport
from grobot.core.services import mcp_servers
from grobot.state.admin_state import AdminState, Refused

logger = logging.getLogger(__name__)

ROUTE = "/mcp"
TITLE = "MCP servers · GroBot"
TRANSPORTS = tuple(t.value for t in McpTransport)
MAX_DESCRIPTION = 400
EDITOR_FIELDS = ("name", "transport", "command", "args", "cwd", "url", "env", "headers")
ENABLE_COMMAND = "python -m grobot bot mcp BOT enable SERVER"


@dataclass
class McpRow:
    """What the page shows of one server (secrets: names only)."""

    id: int
    name: str
    transport: str
    endpoint: str
    enabled: bool
    tool_count: int
    listed: bool
    last_error: str
    refreshed: str
    refreshed_at: str
    bots: str
    secret_names: str  # "env: A, B" (stdio) or "headers: Authorization" (HTTP): names only


@dataclass
class ToolRow:
    name: str
    description: str


def _endpoint(server) -> str:
    if server.transport == McpTransport.STDIO.value:
        return " ".join([server.command or "", *(server.args or [])]).strip()
    return server.url or ""


def _secret_names(transport: str, summary: dict[str, Any]) -> str:
    kind, names = ("env", summary["env"]) if transport == McpTransport.STDIO.value else ("headers", summary["headers"])
    return f"{kind}: {', '.join(names)}" if names else ""


def load_rows(session, _user) -> list[McpRow]:
    """Every registered server with its tool count and the bots using it (three queries)."""
    using = mcp_servers.bots_using(session=session)
    rows = []
    for server in mcp_servers.list_servers(session=session):
        summary = mcp_servers.server_summary(server)
        rows.append(
            McpRow(
                id=server.id or 0,
                name=server.name,
                transport=server.transport,
                endpoint=_endpoint(server),
                enabled=server.enabled,
                tool_count=len(server.tools_cache or []),
                listed=server.tools_refreshed_at is not None,
                last_error=server.last_error or "",
                refreshed=ago(server.tools_refreshed_at, never="not yet"),
                refreshed_at=utc_text(server.tools_refreshed_at),
                bots=", ".join(using.get(server.id or 0, [])),
                secret_names=_secret_names(server.transport, summary),
            )
        )
    return rows


def _lines(text: Any) -> list[str]:
    return [line.strip() for line in str(text or "").splitlines() if line.strip()]


def _changes(form: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    """The submitted editor as service fields; empty secret boxes keep what is stored."""
    transport = str(form.get("transport", McpTransport.STDIO.value))
    changes: dict[str, Any] = {"name": str(form.get("name", "")).strip(), "transport": transport}
    if transport == McpTransport.STDIO.value:
        changes.update(
            command=str(form.get("command", "")).strip() or None,
            args=_lines(form.get("args")),
            cwd=str(form.get("cwd", "")).strip() or None,
            url=None,
        )
    else:
        changes.update(url=str(form.get("url", "")).strip() or None, command=None, args=[])
    for key, what in (("env", "environment"), ("headers", "headers")):
        lines = _lines(form.get(key))
        if lines:
            changes[key] = mcp_servers.parse_pairs(lines, what)
        elif form.get(f"clear_{key}") and not creating:
            changes[key] = {}
    return changes


def _field_errors(message: str) -> dict[str, str]:
    """``"name: bad; url: bad"`` -> per editor field; anything else under ``form``."""
    errors: dict[str, str] = {}
    for part in message.split("; "):
        key, sep, problem = part.partition(": ")
        key = key.split(".")[0]
        if sep and key in EDITOR_FIELDS:
            errors.setdefault(key, problem)
        else:
            errors["form"] = message
    return errors


class McpState(AdminState):
    """The registry list, the editor, the tools dialog and the delete confirmation."""

    servers: list[McpRow] = []
    loaded: bool = False
    editor_open: bool = False
    editor_id: int = 0
    editor: dict[str, str] = {}
    editor_transport: str = McpTransport.STDIO.value
    editor_errors: dict[str, str] = {}
    editor_version: int = 0
    saving: bool = False
    tools_open: bool = False
    tools_server: str = ""
    tools_refreshed: str = ""
    tools: list[ToolRow] = []
    delete_id: int = 0
    delete_name: str = ""

    @rx.var
    def server_count(self) -> int:
        return len(self.servers)

    async def _reload(self) -> None:
        self.servers = await self._admin(load_rows)
        self.loaded = True

    @rx.event
    async def open(self):
        """On load and on "Refresh": read the registry."""
        return await self._open()

    # ----------------------------------------------------------------- editor

    @rx.event
    async def start_add(self):
        """Open an empty editor (admins only, like every handler that leads to a write)."""
        if refused := await self._refused():
            return refused
        self.editor_id = 0
        self.editor = {"name": "", "command": "", "args": "", "cwd": "", "url": "", "env_names": "", "header_names": ""}
        self.editor_transport = McpTransport.STDIO.value
        self._show_editor()
        return None

    @rx.event
    async def start_edit(self, server_id: int):
        """Open the editor on a stored server (secret values stay on the server)."""

        def work(session, _user) -> dict[str, str]:
            summary = mcp_servers.server_summary(mcp_servers.get_server(int(server_id), session=session))
            return {
                "name": summary["name"],
                "transport": summary["transport"],
                "command": summary["command"] or "",
                "args": "\n".join(summary["args"]),
                "cwd": summary["cwd"] or "",
                "url": summary["url"] or "",
                "env_names": ", ".join(summary["env"]),
                "header_names": ", ".join(summary["headers"]),
            }

        try:
            self.editor = await self._admin(work)
        except Refused as refused:
            return refused.event
        except GroBotError as exc:
            return rx.toast.error(str(exc))
        self.editor_id = int(server_id)
        self.editor_transport = self.editor["transport"]
        self._show_editor()
        return None

    def _show_editor(self) -> None:
        self.editor_errors = {}
        self.editor_version += 1
        self.editor_open = True

    @rx.event
    def set_editor_transport(self, value: str):
        if value in TRANSPORTS:
            self.editor_transport = value

    def _close_editor(self) -> None:
        self.editor_open = False
        self.editor_errors = {}

    @rx.event
    def close_editor(self):
        self._close_editor()

    @rx.event
    def editor_open_change(self, is_open: bool):
        """Escape or a click outside closes the editor."""
        if not is_open:
            self._close_editor()

    @rx.event
    async def save(self, form: dict[str, Any]):
        """Create or update the server; errors show next to their fields and nothing is lost."""
        creating = self.editor_id == 0
        form = {**form, "transport": self.editor_transport}
        try:
            changes = _changes(form, creating=creating)
        except GroBotError as exc:
            key = "env" if "environment" in str(exc) else "headers"
            self.editor_errors = {key: str(exc).partition(": ")[2] or str(exc)}
            return None
        server_id = self.editor_id

        def work(session, user) -> str:
            if creating:
                server = mcp_servers.create_server(session=session, **changes)
            else:
                server = mcp_servers.update_server(mcp_servers.get_server(server_id, session=session), changes, session=session)
            logger.info("Admin %s saved MCP server %s", user.username, server.name)
            return server.name

        self.saving = True
        try:
            name = await self._admin(work, readonly=False)
        except Refused as refused:
            self.saving = False
            return refused.event
        except GroBotError as exc:
            self.saving = False
            self.editor_errors = _field_errors(str(exc))
            return None
        self.saving = False
        self._close_editor()
        try:
            await self._reload()
        except Refused as refused:
            return refused.event
        verb = "added" if creating else "saved"
        return rx.toast.success(f"MCP server {name} {verb}. The worker lists its tools within a few minutes.")

    # ----------------------------------------------------------------- row actions

    @rx.event
    async def set_enabled(self, server_id: int, enabled: bool):
        """Enable or disable a server for every bot that uses it."""

        def work(session, user) -> None:
            server = mcp_servers.get_server(int(server_id), session=session)
            mcp_servers.update_server(server, {"enabled": bool(enabled)}, session=session)
            logger.info("Admin %s %s MCP server %s", user.username, "enabled" if enabled else "disabled", server.name)

        return await self._act(work)

    @rx.event
    async def show_tools(self, server_id: int):
        """The tools the worker found on the server at its last refresh."""

        def work(session, _user) -> tuple[str, str, list[ToolRow]]:
            server = mcp_servers.get_server(int(server_id), session=session)
            tools = [
                ToolRow(name=str(t.get("name", "")), description=str(t.get("description") or "")[:MAX_DESCRIPTION])
                for t in (server.tools_cache or [])
            ]
            refreshed = utc_text(server.tools_refreshed_at)
            return server.name, refreshed, sorted(tools, key=lambda t: t.name)

        try:
            self.tools_server, self.tools_refreshed, self.tools = await self._admin(work)
        except Refused as refused:
            return refused.event
        except GroBotError as exc:
            return rx.toast.error(str(exc))
        self.tools_open = True
        return None

    @rx.event
    def close_tools(self):
        self.tools_open = False

    @rx.event
    def tools_open_change(self, is_open: bool):
        if not is_open:
            self.tools_open = False

    @rx.event
    def ask_delete(self, server_id: int, name: str):
        self.delete_id = int(server_id)
        self.delete_name = name

    @rx.event
    def cancel_delete(self):
        self.delete_id = 0

    @rx.event
    async def confirm_delete(self):
        """Delete the server the admin confirmed (its bot associations go with it)."""
        server_id, self.delete_id = self.delete_id, 0
        if not server_id:
            return None

        def work(session, user) -> str:
            server = mcp_servers.get_server(server_id, session=session)
            name = server.name
            mcp_servers.delete_server(server, session=session)
            logger.info("Admin %s deleted MCP server %s", user.username, name)
            return name

        return await self._act(work, lambda name: f"MCP server {name} deleted")


# --------------------------------------------------------------------------- components


def transport_badge(transport: rx.Var[str]) -> rx.Component:
    return rx.badge(
        rx.match(transport, ("stdio", "stdio"), ("streamable_http", "HTTP"), ("sse", "SSE"), transport),
        color_scheme=rx.match(transport, ("stdio", "gray"), ("streamable_http", "blue"), "violet"),
        variant="soft",
        radius="full",
    )


def server_row(row: McpRow) -> rx.Component:
    muted = rx.color("gray", 10)
    return rx.table.row(
        rx.table.row_header_cell(
            rx.vstack(
                rx.hstack(rx.text(row.name, weight="medium"), transport_badge(row.transport), spacing="2", align="center"),
                rx.text(row.endpoint, size="1", color=muted, font_family="var(--code-font-family, monospace)", truncate=True, max_width="18rem", title=row.endpoint),
                rx.cond(
                    row.secret_names != "",
                    rx.hstack(
                        rx.icon("lock", size=12, color=muted),
                        rx.text(row.secret_names, size="1", color=muted),
                        spacing="1",
                        align="center",
                    ),
                ),
                spacing="1",
                align="start",
            )
        ),
        rx.table.cell(
            rx.switch(
                checked=row.enabled,
                on_change=lambda checked: McpState.set_enabled(row.id, checked),
                aria_label="Enabled",
            )
        ),
        rx.table.cell(
            rx.vstack(
                rx.cond(
                    row.listed,
                    rx.link(
                        rx.text(row.tool_count, " tool", rx.cond(row.tool_count == 1, "", "s")),
                        on_click=McpState.show_tools(row.id),
                        cursor="pointer",
                    ),
                    rx.text("not listed yet", color=muted, size="2"),
                ),
                rx.text("refreshed ", row.refreshed, size="1", color=muted, title=row.refreshed_at),
                spacing="0",
                align="start",
            )
        ),
        rx.table.cell(rx.cond(row.bots != "", rx.text(row.bots, size="2"), rx.text("no bot", size="2", color=muted))),
        rx.table.cell(
            rx.cond(
                row.last_error != "",
                rx.tooltip(
                    rx.badge(rx.icon("triangle-alert", size=12), "Error", color_scheme="red", variant="soft"),
                    content=row.last_error,
                ),
                rx.cond(row.listed, rx.badge(rx.icon("check", size=12), "OK", color_scheme="green", variant="soft"), muted_dash()),
            ),
            rx.cond(
                row.last_error != "",
                rx.text(row.last_error, size="1", color=rx.color("red", 11), max_width="16rem", truncate=True, title=row.last_error),
            ),
        ),
        rx.table.cell(
            rx.hstack(
                rx.icon_button(rx.icon("pencil", size=14), variant="ghost", color_scheme="gray", title="Edit", aria_label="Edit", on_click=McpState.start_edit(row.id)),
                rx.icon_button(rx.icon("trash-2", size=14), variant="ghost", color_scheme="red", title="Delete", aria_label="Delete", on_click=McpState.ask_delete(row.id, row.name)),
                spacing="3",
                justify="end",
            ),
        ),
        align="center",
        data_server_name=row.name,
    )


def servers_table() -> rx.Component:
    return rx.table.root(
        table_header(("Server", "30%"), ("Enabled", "9%"), ("Tools", "15%"), ("Used by", "18%"), ("Last check", "18%"), ("", "10%")),
        rx.table.body(rx.foreach(McpState.servers, server_row)),
        variant="surface",
        size="2",
        width="100%",
    )


def _editor_input(name: str, label: str, *, placeholder: str = "", help_text: str | None = None, area: bool = False, mono: bool = False) -> rx.Component:
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
            rx.cond(stored, rx.text(names, size="1", color=rx.color("gray", 10))),
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
            rx.cond(stored, "Values are never shown. Type a full new set to replace the stored one; empty keeps it.", "KEY=value, one per line. Stored encrypted, never shown again."),
            size="1",
            color=rx.color("gray", 11),
        ),
        rx.cond(
            stored & (McpState.editor_id != 0),
            rx.el.label(rx.hstack(rx.checkbox(name=f"clear_{name}"), rx.text("Remove the stored values", size="2"), spacing="2", align="center")),
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
                "The worker connects to the server; this page only saves its settings.",
                size="2",
                color=rx.color("gray", 11),
                margin_bottom="1rem",
            ),
            rx.form(
                rx.vstack(
                    _editor_input("name", "Name", placeholder="time", help_text="Letters, digits, '_' and '-'; tools are named name__tool."),
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
                            _editor_input("args", "Arguments", placeholder="mcp-server-time\n--local-timezone=UTC", help_text="One per line.", area=True, mono=True),
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
                        rx.button(rx.cond(McpState.saving, rx.spinner(size="2"), rx.icon("save", size=16)), "Save", type="submit", disabled=McpState.saving),
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
                rx.cond(McpState.tools_refreshed != "", "As listed by the worker at " + McpState.tools_refreshed + ".", "Not listed yet."),
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
            rx.hstack(rx.dialog.close(rx.button("Close", variant="soft", color_scheme="gray", on_click=McpState.close_tools)), justify="end", margin_top="1rem"),
            max_width="36rem",
        ),
        open=McpState.tools_open,
        on_open_change=McpState.tools_open_change,
    )


def no_servers() -> rx.Component:
    return empty_state(
        "plug",
        "No MCP servers yet",
        "MCP servers give your bots tools: a clock, web fetch, your own APIs. Add one here, then enable it for "
        "the bots that should use it (on the bot's page, or from a shell):",
        command_line(ENABLE_COMMAND),
        rx.button(rx.icon("plus", size=16), "Add an MCP server", on_click=McpState.start_add),
    )


def refresh_note() -> rx.Component:
    return rx.callout(
        "The worker (python -m bot_worker) connects to every enabled server and refreshes its tool list every "
        "GROBOT_MCP_REFRESH_SECONDS (5 minutes by default). The web app never starts a server itself.",
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
                rx.vstack(refresh_note(), servers_table(), spacing="4", width="100%"),
                no_servers(),
            ),
            rx.center(rx.spinner(size="3"), padding="3rem", width="100%"),
        ),
        editor_dialog(),
        tools_dialog(),
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
            rx.button(rx.icon("plus", size=16), "Add server", on_click=McpState.start_add),
            spacing="2",
        ),
    )
