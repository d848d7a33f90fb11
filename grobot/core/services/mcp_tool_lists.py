"""Database side of the MCP hub: a bot's MCP servers (`read_links`), which servers to refresh, where
their tool lists go, and trying a server now (`check_and_store`)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from grobot.core.db import session_scope
from grobot.core.errors import GroBotError
from grobot.core.services import mcp_servers
from grobot.core.tools.base import ToolError
from grobot.core.tools.catalog import Link
from grobot.core.tools.mcp_config import McpServerConfig
from grobot.core.tools.mcp_results import tool_as_dict
from grobot.core.wording import counted

if TYPE_CHECKING:
    from grobot.core.tools.mcp_hub import McpHub

logger = logging.getLogger(__name__)


def read_links(bot_id: int, *, session: Any) -> list[Link]:
    """The bot's usable MCP associations, read in ``session`` (the caller's: one session per message)."""
    links: list[Link] = []
    for link, server in mcp_servers.bot_links(session=session, bot_id=bot_id):
        allowed = list(link.allowed_tools) if link.allowed_tools else None
        try:
            config: McpServerConfig | None = mcp_servers.server_config(server, bot_id=bot_id)
            error = ""
        except GroBotError as exc:  # e.g. its secrets were encrypted with another key
            config, error = None, f"MCP server '{server.name}' cannot be used: {exc}"
        links.append(Link(config, server.name, allowed, float(link.timeout_seconds), error,
                          tool_settings=dict(link.tool_settings or {})))
    return links


def load_enabled_configs() -> list[McpServerConfig]:
    with session_scope(readonly=True) as session:
        return mcp_servers.enabled_configs(session=session)


def load_unchecked_configs() -> list[McpServerConfig]:
    with session_scope(readonly=True) as session:
        return mcp_servers.unchecked_configs(session=session)


def store_refresh(outcomes: list[tuple[McpServerConfig, list[Any] | None, str]]) -> None:
    """Write each server's tool list (or its error) to ``mcp_server``."""
    rows = [(cfg, tools, error) for cfg, tools, error in outcomes if cfg.server_id is not None]
    if not rows:
        return
    with session_scope() as session:
        for cfg, tools, error in rows:
            assert cfg.server_id is not None
            cached = [tool_as_dict(t) for t in tools] if tools is not None else None
            mcp_servers.record_tools(session=session, server_id=cfg.server_id, tools=cached, error=error)


def load_config(ref: int | str, bot_id: int | None = None) -> McpServerConfig:
    """The connection settings of the registered server ``ref`` (id or name), as bot ``bot_id`` uses it."""
    with session_scope(readonly=True) as session:
        return mcp_servers.server_config(mcp_servers.get_server(ref, session=session), bot_id=bot_id)


async def check_and_store(ref: int | str, *, timeout: float = 20.0, bot_id: int | None = None) -> Any:
    """Connect to server ``ref`` now (a fresh session, closed after), list its tools, and store the
    list or the error where the registry and the pages read them. Returns the hub's ``TestReport``.
    ``bot_id``: fill the server's placeholders (``{bot_files}``) as for that bot."""
    from grobot.core.tools.mcp_hub import McpHub

    config = await asyncio.to_thread(load_config, ref, bot_id)
    hub = McpHub()
    try:
        report = await hub.test(config, timeout=timeout)
    finally:
        await hub.aclose()
    await asyncio.to_thread(store_refresh, [(config, report.tools if report.ok else None, report.error)])
    logger.info("MCP server %r tested: %s", config.name, "ok" if report.ok else "failed")
    return report


async def refresh(hub: McpHub, configs: list[McpServerConfig]) -> dict[str, str]:
    """Ask each server for its tools again (through ``hub``) and store them, or the error.

    Returns server name -> error ("" when fine). The supervisor calls this periodically.
    """
    async def one(cfg: McpServerConfig) -> tuple[McpServerConfig, list[Any] | None, str]:
        try:
            return cfg, await hub.list_tools(cfg, refresh=True), ""
        except ToolError as exc:
            return cfg, None, str(exc)

    outcomes = await asyncio.gather(*(one(cfg) for cfg in configs))
    await asyncio.to_thread(store_refresh, outcomes)
    return {cfg.name: error for cfg, _, error in outcomes}


async def refresh_all(hub: McpHub) -> dict[str, str]:
    """:func:`refresh` every enabled server of the registry, and close ``hub``'s sessions of the others."""
    configs = await asyncio.to_thread(load_enabled_configs)
    await hub.prune({cfg.name for cfg in configs})
    return await refresh(hub, configs)


async def refresh_new(hub: McpHub) -> dict[str, str]:
    """:func:`refresh` the enabled servers never listed nor failed yet (a cheap query when there are none)."""
    configs = await asyncio.to_thread(load_unchecked_configs)
    return await refresh(hub, configs) if configs else {}


def tools_line(names: list[str], *, max_names: int = 8) -> str:
    """``OK: 2 tools (get_current_time, convert_time)``: a server's tools in one line."""
    if not names:
        return "OK: connected, but the server offers no tools"
    shown = ", ".join(names[:max_names]) + (f", +{len(names) - max_names} more" if len(names) > max_names else "")
    return f"OK: {counted(len(names), 'tool')} ({shown})"


def report_line(report: Any, *, max_names: int = 8) -> str:
    """One line for an admin: the tools (:func:`tools_line`) or the error."""
    return tools_line([tool.name for tool in report.tools], max_names=max_names) if report.ok else report.error
