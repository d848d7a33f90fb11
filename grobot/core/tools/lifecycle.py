"""The MCP sessions of one host (a bot process, the supervisor, the CLI), opened on first use.

A host owns one :class:`McpSessions` and closes it when it stops. The MCP SDK (~20 MiB and half a
second to import) is loaded only when a bot of the host has an MCP server.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grobot.core.tools.mcp_hub import McpHub

logger = logging.getLogger(__name__)


class McpSessions:
    """One host's :class:`~grobot.core.tools.mcp_hub.McpHub`, created when first asked for."""

    def __init__(self, hub: McpHub | None = None) -> None:
        self._hub = hub

    @property
    def opened(self) -> bool:
        return self._hub is not None

    def hub(self) -> McpHub:
        if self._hub is None:
            from grobot.core.tools.mcp_hub import McpHub

            self._hub = McpHub()
        return self._hub

    async def aclose(self, timeout: float = 5.0) -> None:
        """Close every session opened (a no-op when none was); the host may open new ones after."""
        hub, self._hub = self._hub, None
        if hub is None:
            return
        try:
            await asyncio.wait_for(hub.aclose(), timeout=timeout)
        except Exception as exc:  # shutdown goes on regardless
            logger.warning("Closing MCP sessions failed: %s", type(exc).__name__)
