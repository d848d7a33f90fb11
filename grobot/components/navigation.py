"""The entries of the sidebar navigation."""

from __future__ import annotations

import logging
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class NavItem:
    """One link of the sidebar."""

    key: str
    label: str
    route: str
    icon: str  # a lucide icon name
    admin_only: bool = True  # testers see only the entries marked False


# The pages testers may use are the ones with ``admin_only=False``; their on-load check
# (``AppState.require_login`` or ``require_admin``) must say the same.
NAV_ITEMS: tuple[NavItem, ...] = (
    NavItem(key="bots", label="Bots", route="/", icon="bot", admin_only=False),
    NavItem(key="mcp", label="MCP servers", route="/mcp", icon="plug"),
    NavItem(key="usage", label="Usage", route="/usage", icon="chart-no-axes-column"),
    NavItem(key="users", label="Users", route="/users", icon="users"),
    NavItem(key="settings", label="Settings", route="/settings", icon="settings"),
)
