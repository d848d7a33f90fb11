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


NAV_ITEMS: tuple[NavItem, ...] = (NavItem(key="bots", label="Bots", route="/", icon="bot"),)
