"""The catalog of one bot: its built-in tools + the tools of its enabled MCP servers.

MCP tools are named ``<server>__<tool>``, filtered by the association's allowed list and
given its timeout. A server that cannot be reached is left out and reported by
:meth:`BotCatalog.unavailable`, so the chain can tell the model.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any

from grobot.core.tools.base import SERVER_FAILED, ToolContext, ToolError, ToolResult, ToolSpec
from grobot.core.tools.builtins import BuiltinTool, builtin_tools
from grobot.core.tools.lifecycle import McpSessions
from grobot.core.tools.mcp_config import McpServerConfig

# The MCP SDK (``mcp_results`` imports it: ~20 MiB and half a second) is imported only when a
# bot has MCP servers, so a bot process without any never loads it.

logger = logging.getLogger(__name__)

LIST_TIMEOUT = 30.0  # at most this long for all servers to list their tools


@dataclass(frozen=True)
class _McpEntry:
    spec: ToolSpec
    config: McpServerConfig
    tool: str  # the tool's own name on its server


@dataclass(frozen=True)
class Link:
    """One MCP server a bot uses: how to reach it (None: it cannot be used, ``error`` says why)."""

    config: McpServerConfig | None
    name: str
    allowed_tools: list[str] | None
    timeout_seconds: float
    error: str = ""
    # Per tool (its own name): {"fallback": ..., "access": "read_only" | "writes"} (BotMcpServer.tool_settings).
    tool_settings: dict[str, dict[str, str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """With the server's secrets (for the supervisor's link to its own bots only)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Link:
        config = data.get("config")
        if config is not None:
            config = McpServerConfig(**{**config, "args": tuple(config.get("args") or ())})
        return cls(config=config, name=data["name"], allowed_tools=data.get("allowed_tools"),
                   timeout_seconds=float(data["timeout_seconds"]), error=data.get("error") or "",
                   tool_settings=dict(data.get("tool_settings") or {}))


class BotCatalog:
    """The tools one bot may use now (implements :class:`grobot.core.tools.base.ToolCatalog`)."""

    def __init__(
        self,
        bot_id: int,
        *,
        builtins: list[BuiltinTool],
        mcp: list[_McpEntry],
        unavailable: dict[str, str],
        hub: Any,
        discord: Any = None,
    ) -> None:
        self.bot_id = bot_id
        self._builtins = {t.spec.name: t for t in builtins}
        self._mcp = {e.spec.name: e for e in mcp}
        self._unavailable = dict(unavailable)
        self._hub = hub
        self._discord = discord

    @property
    def discord(self) -> Any:
        """The bot process's DiscordActions, or None (the chain passes it on in ToolContext)."""
        return self._discord

    async def list_tools(self) -> list[ToolSpec]:
        return [t.spec for t in self._builtins.values()] + [e.spec for e in self._mcp.values()]

    def spec(self, name: str) -> ToolSpec | None:
        if name in self._builtins:
            return self._builtins[name].spec
        entry = self._mcp.get(name)
        return entry.spec if entry else None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, context: ToolContext, timeout: float
    ) -> ToolResult:
        """Run a tool; failures raise :class:`ToolError` (``transient`` for timeouts and lost connections)."""
        arguments = dict(arguments or {})
        builtin = self._builtins.get(name)
        if builtin is not None:
            if context.discord is None and self._discord is not None:
                context = dataclasses.replace(context, discord=self._discord)
            try:
                return await asyncio.wait_for(builtin.call(arguments, context), timeout)
            except TimeoutError:
                raise ToolError(f"tool {name} did not finish within {timeout:g} s", may_have_run=True) from None
        entry = self._mcp.get(name)
        if entry is None:
            reason = next((r for server, r in self._unavailable.items() if name.startswith(f"{server}__")), None)
            raise ToolError(reason, told=SERVER_FAILED) if reason else ToolError(f"unknown tool {name!r}")
        return await self._hub.call_tool(entry.config, entry.tool, arguments, timeout=timeout)

    def unavailable(self) -> dict[str, str]:
        return dict(self._unavailable)


def _unique(name: str, used: set[str], server: str, tool: str) -> str:
    from grobot.core.tools.mcp_results import MAX_NAME

    if name not in used:
        return name
    digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


async def catalog_for_bot(bot_id: int, *, store: Any, hub: Any = None, discord: Any = None, memory: Any = None,
                          links: list[Link] | None = None, web: Any = None) -> BotCatalog:
    """The tools bot ``bot_id`` may use now.

    ``store``: where its data is (a :class:`~grobot.core.agents.run_store.RunStore`); ``hub``: the
    host's :class:`~grobot.core.tools.lifecycle.McpSessions` (or an ``McpHub``; None: no MCP
    sessions); ``discord``: a ``DiscordActions`` inside a bot process (adds the
    Discord tools); ``memory``: a ``MemoryPort`` (adds memory search/remember); ``links``: the
    bot's MCP associations when the caller has just read them (:func:`grobot.core.services.mcp_tool_lists.read_links`); ``web``: a
    :class:`~grobot.core.tools.web.WebAccess` when the bot has the web tools on.
    """
    builtins = builtin_tools(bot_id, store=store, discord=discord, memory=memory, web=web)
    if links is None:
        links = await store.mcp_links(bot_id)
    unavailable: dict[str, str] = {link.name: link.error for link in links if link.error}
    usable = [link for link in links if link.config is not None]
    if usable:
        from grobot.core.tools.mcp_results import tool_spec
    if isinstance(hub, McpSessions):
        hub = hub.hub() if usable else None
    if hub is None:  # a host without MCP sessions
        for link in usable:
            unavailable[link.name] = f"MCP server '{link.name}' cannot be used here (no MCP sessions in this process)"
        usable = []

    async def tools_of(link: Link) -> Any:
        assert link.config is not None
        try:
            return await asyncio.wait_for(hub.list_tools(link.config), LIST_TIMEOUT)
        except TimeoutError:
            return ToolError(f"MCP server '{link.name}' did not list its tools within {LIST_TIMEOUT:g} s")
        except ToolError as exc:
            return exc

    outcomes = await asyncio.gather(*(tools_of(link) for link in usable))
    used = {t.spec.name for t in builtins}
    entries: list[_McpEntry] = []
    for link, outcome in zip(usable, outcomes):
        assert link.config is not None
        if isinstance(outcome, BaseException):
            unavailable[link.name] = str(outcome)
            logger.warning("Bot %s: %s", bot_id, outcome)
            continue
        allowed = set(link.allowed_tools) if link.allowed_tools is not None else None
        for tool in outcome:
            if allowed is not None and tool.name not in allowed:
                continue
            spec = _with_access(tool_spec(link.name, tool, timeout=link.timeout_seconds),
                                link.tool_settings.get(tool.name, {}).get("access"))
            name = _unique(spec.name, used, link.name, tool.name)
            if name != spec.name:
                spec = dataclasses.replace(spec, name=name)
            used.add(name)
            entries.append(_McpEntry(spec=spec, config=link.config, tool=tool.name))
        missing = sorted((allowed or set()) - {t.name for t in outcome})
        if missing:
            logger.warning("Bot %s: MCP server %r has no tool %s", bot_id, link.name, ", ".join(missing))
    entries = _with_fallbacks(entries, {link.name: link for link in usable}, {t.spec.name for t in builtins})
    return BotCatalog(bot_id, builtins=builtins, mcp=entries, unavailable=unavailable, hub=hub, discord=discord)


def _with_access(spec: ToolSpec, access: str | None) -> ToolSpec:
    """``spec`` with the admin's override of its annotations: ``read_only`` or ``writes``."""
    if access == "read_only":
        return dataclasses.replace(spec, read_only=True, writes=False)
    if access == "writes":
        return dataclasses.replace(spec, read_only=False, writes=True)
    return spec


def _with_fallbacks(entries: list[_McpEntry], links: dict[str, Link], builtin_names: set[str]) -> list[_McpEntry]:
    """Each MCP tool with the catalog name of its fallback, as the admin set it for the bot.

    A stored fallback is a tool of the same server (its own name), ``<server>__<tool>`` of another
    server, or a built-in; one that is not in this catalog now (server down, tool gone) is kept by
    name, and the executor says it is not available when it is needed.
    """
    by_tool = {(e.config.name, e.tool): e.spec.name for e in entries}
    result = []
    for entry in entries:
        link = links.get(entry.config.name)
        wanted = (link.tool_settings.get(entry.tool, {}).get("fallback") if link else None) or ""
        if not wanted:
            result.append(entry)
            continue
        server, sep, tool = wanted.partition("__")
        if (entry.config.name, wanted) in by_tool:
            name = by_tool[(entry.config.name, wanted)]
        elif sep and (server, tool) in by_tool:
            name = by_tool[(server, tool)]
        elif wanted in builtin_names:
            name = wanted
        elif sep:
            name = wanted  # another server's tool, not in the catalog now
        else:
            from grobot.core.tools.mcp_results import namespaced

            name = namespaced(entry.config.name, wanted)  # a tool of this server it no longer lists
        result.append(dataclasses.replace(entry, spec=dataclasses.replace(entry.spec, fallback=name)))
    return result


__all__ = ["BotCatalog", "Link", "catalog_for_bot"]
