"""Long-term memory of a bot: the port the chain uses (the store itself is a later issue)."""

from __future__ import annotations

import logging
from typing import Any, Protocol, runtime_checkable

logger = logging.getLogger(__name__)


@runtime_checkable
class MemoryPort(Protocol):
    """What the chain needs of a memory store."""

    async def remember(self, bot_id: int, texts: list[str], metadata: dict[str, Any]) -> None:
        """Store ``texts`` in the bot's memory with ``metadata``."""
        ...

    async def search(self, bot_id: int, query: str, k: int = 5) -> list[str]:
        """The ``k`` stored texts closest to ``query``."""
        ...


class NoopMemory:
    """A memory that stores nothing and finds nothing (until the memory store lands)."""

    async def remember(self, bot_id: int, texts: list[str], metadata: dict[str, Any]) -> None:
        return None

    async def search(self, bot_id: int, query: str, k: int = 5) -> list[str]:
        return []
