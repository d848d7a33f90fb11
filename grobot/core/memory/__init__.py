"""Long-term memory of a bot: the port the chain uses, and what a stored memory looks like.

The store (:mod:`grobot.core.memory.vector_store`, ChromaDB + the embedder) lives in the bot
worker's supervisor only; other processes reach it over HTTP
(:mod:`grobot.core.memory.remote`). This module stays light: bot processes import it.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

logger = logging.getLogger(__name__)

# Retrieval keeps memories closer than this cosine distance (MiniLM: a related question
# ~0.3, unrelated text 0.7-1.0).
RELEVANT_DISTANCE = 0.6
MAX_MEMORY_CHARS = 4000


@dataclass(frozen=True)
class Memory:
    """One stored memory; ``distance`` (cosine, 0 = same meaning) only in search results."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    distance: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Memory:
        distance = data.get("distance")
        return cls(id=str(data["id"]), text=str(data["text"]), metadata=dict(data.get("metadata") or {}),
                   distance=float(distance) if distance is not None else None)


@runtime_checkable
class MemoryPort(Protocol):
    """What the chain needs of a memory store."""

    async def remember(self, bot_id: int, texts: list[str], metadata: dict[str, Any]) -> None:
        """Store ``texts`` in the bot's memory with ``metadata``."""
        ...

    async def search(self, bot_id: int, query: str, k: int = 5) -> list[str]:
        """The ``k`` stored texts closest to ``query`` (relevant ones only)."""
        ...


class NoopMemory:
    """A memory that stores nothing and finds nothing (no supervisor serves one)."""

    async def remember(self, bot_id: int, texts: list[str], metadata: dict[str, Any]) -> None:
        return None

    async def search(self, bot_id: int, query: str, k: int = 5) -> list[str]:
        return []
