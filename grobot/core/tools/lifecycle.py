"""Closing this process's MCP sessions at shutdown, without importing the MCP SDK needlessly."""

from __future__ import annotations

import asyncio
import logging
import sys

logger = logging.getLogger(__name__)


async def close_process_hub(timeout: float = 5.0) -> None:
    """Close every MCP session this process opened (a no-op when none was ever opened)."""
    if "grobot.core.tools.mcp_hub" not in sys.modules:
        return
    from grobot.core.tools.mcp_hub import get_hub

    try:
        await asyncio.wait_for(get_hub().aclose(), timeout=timeout)
    except Exception as exc:  # shutdown goes on regardless
        logger.warning("Closing MCP sessions failed: %s", type(exc).__name__)
