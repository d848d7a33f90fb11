"""The MCP servers page's state (admins): the registry of MCP servers, their tools and errors.

Saving a server, and its "Test" button, connect to it from the web app at once (a fresh session,
closed after: :func:`grobot.core.services.mcp_tool_lists.check_and_store`) and store its tool list or its
error where the worker's catalog and this page read them, so a new or edited server shows its
tools or its error within seconds. The worker also refreshes every enabled server's tool list every
``GROBOT_MCP_REFRESH_SECONDS``. Environment variables and headers are secrets: the page shows their
names and whether any are stored, never a value, and accepts a new set that replaces the stored one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import reflex as rx

from grobot.components.formatting import ago, utc_text
from grobot.core.errors import GroBotError
from grobot.core.models import McpTransport
from grobot.core.services import mcp_servers
from grobot.core.services.mcp_tool_lists import check_and_store, report_line, tools_line
from grobot.core.services.validation import field_sentence
from grobot.state.admin_state import AdminState, Refused

logger = logging.getLogger(__name__)

TEST_TIMEOUT = 15.0  # seconds a test from the web app waits for a server to start and list its tools
TRANSPORTS = tuple(t.value for t in McpTransport)
MAX_DESCRIPTION = 400
EDITOR_FIELDS = ("name", "transport", "command", "args", "cwd", "url", "env", "headers")


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
    check: str  # the last test or refresh in one line: "OK: 2 tools (a, b)" or the error


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


def check_line(tools: list[dict[str, Any]] | None, error: str, listed: bool) -> str:
    """What the last test or refresh of a server found, in one line ("" when it never ran)."""
    if error:
        return error
    if not listed:
        return ""
    return tools_line([str(t.get("name")) for t in tools or [] if t.get("name")], max_names=6)


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
                check=check_line(server.tools_cache, server.last_error or "", server.tools_refreshed_at is not None),
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
            errors.setdefault(key, field_sentence(key, problem))
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
    testing_id: int = 0  # the server being tested now (its button spins)

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
        """Create or update the server, then test it (its row shows its tools or its error); errors
        show next to their fields and nothing is lost."""
        creating = self.editor_id == 0
        form = {**form, "transport": self.editor_transport}
        try:
            changes = _changes(form, creating=creating)
        except GroBotError as exc:
            key = "env" if "environment" in str(exc) else "headers"
            self.editor_errors = {key: field_sentence(key, str(exc).partition(": ")[2] or str(exc))}
            return
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
            yield refused.event
            return
        except GroBotError as exc:
            self.saving = False
            self.editor_errors = _field_errors(str(exc))
            return
        self.saving = False
        self._close_editor()
        try:
            await self._reload()
        except Refused as refused:
            yield refused.event
            return
        verb = "added" if creating else "saved"
        yield rx.toast.info(f"MCP server {name} {verb}; connecting to it...")
        yield await self._test(name)

    # ----------------------------------------------------------------- tests

    async def _test(self, ref: int | str) -> Any:
        """Test server ``ref`` now, store what it said, show it in its row; the toast to send."""
        try:
            report = await check_and_store(ref, timeout=TEST_TIMEOUT)
        except GroBotError as exc:  # deleted meanwhile, secrets of another key...
            self.testing_id = 0
            return rx.toast.error(str(exc))
        self.testing_id = 0
        try:
            await self._reload()
        except Refused as refused:
            return refused.event
        line = report_line(report)
        return rx.toast.success(f"{report.name}: {line}") if report.ok else rx.toast.error(line)

    @rx.event
    async def test_server(self, server_id: int):
        """"Test": connect to the server now, list its tools (or say why not) and store the result."""
        if refused := await self._refused():
            yield refused
            return
        self.testing_id = int(server_id)
        yield
        yield await self._test(int(server_id))

    # ----------------------------------------------------------------- row actions

    @rx.event
    async def set_enabled(self, server_id: int, enabled: bool):
        """Enable or disable a server for every bot that uses it; an enabled one is tested at once."""

        def work(session, user) -> None:
            server = mcp_servers.get_server(int(server_id), session=session)
            mcp_servers.update_server(server, {"enabled": bool(enabled)}, session=session)
            logger.info("Admin %s %s MCP server %s", user.username, "enabled" if enabled else "disabled", server.name)

        refused_or_error = await self._act(work)
        if refused_or_error is not None or not enabled:
            yield refused_or_error
            return
        self.testing_id = int(server_id)
        yield
        yield await self._test(int(server_id))

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
