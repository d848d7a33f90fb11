"""Database side of the hub: which servers to refresh, and where their tool lists go."""

from __future__ import annotations

import logging
from typing import Any

from grobot.core.db import session_scope
from grobot.core.services import mcp_servers
from grobot.core.tools.mcp_config import McpServerConfig
from grobot.core.tools.mcp_results import tool_as_dict

logger = logging.getLogger(__name__)


def load_enabled_configs() -> list[McpServerConfig]:
    with session_scope(readonly=True) as session:
        return mcp_servers.enabled_configs(session=session)


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
