"""What answering a message needs, passed in by its host (no process globals).

A host builds one :class:`ChainDeps` and hands it to every run: the bot process (its
supervisor's store over the bot link, the memory's client, its own MCP sessions and
Discord actions), the supervisor (the database, its local memory, its MCP sessions) for Test
Chat, and the CLI (the database: :func:`grobot.core.store.local.local_deps`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grobot.core.agents.run_store import RunStore
from grobot.core.agents.types import BotConfig
from grobot.core.memory import MemoryPort, NoopMemory
from grobot.core.tools.base import ToolCatalog
from grobot.core.tools.lifecycle import McpSessions


@dataclass
class ChainDeps:
    """The store of the bot's data, its long-term memory, the host's MCP sessions and, in a bot
    process, its Discord actions (which add the Discord tools)."""

    store: RunStore
    memory: MemoryPort = field(default_factory=NoopMemory)
    mcp: McpSessions = field(default_factory=McpSessions)
    discord: Any = None

    def memory_or_none(self) -> MemoryPort | None:
        """The memory, or None when there is none (the memory tools are then left out)."""
        return None if isinstance(self.memory, NoopMemory) else self.memory

    async def catalog(self, bot_id: int, links: list[Any] | None = None, *, bot: BotConfig | None = None) -> ToolCatalog:
        """The tools bot ``bot_id`` may use now (``links``: its MCP associations, when just read;
        ``bot``: its settings as read for this message, which say whether it has the web tools)."""
        from grobot.core.tools.catalog import catalog_for_bot

        return await catalog_for_bot(bot_id, store=self.store, hub=self.mcp, discord=self.discord,
                                     memory=self.memory_or_none(), links=links, web=web_access(bot))

    async def aclose(self) -> None:
        """Close what the host opened for its runs (the MCP sessions); the host closes its memory."""
        await self.mcp.aclose()


def web_access(bot: BotConfig | None) -> Any:
    """How the bot's web tools reach the web (None: it has them off, or its settings are unknown)."""
    if bot is None or not bot.web_search:
        return None
    from grobot.core.tools.web import WebAccess

    return WebAccess.for_bot(bot.web_search_url)
