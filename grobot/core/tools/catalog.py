"""The catalog of one bot: its built-in tools + the tools of its enabled MCP servers.

(Stub until the tools issue lands: no tools.)
"""

from __future__ import annotations

import logging
from typing import Any

from grobot.core.tools.base import EmptyCatalog, ToolCatalog

logger = logging.getLogger(__name__)


async def catalog_for_bot(bot_id: int, *, hub: Any = None, discord: Any = None) -> ToolCatalog:
    """The tools bot ``bot_id`` may use now."""
    return EmptyCatalog()
