"""Long-term memory of the bots in ChromaDB: one collection per bot.

Embedded Chroma in ``<data dir>/chroma`` by default, or a Chroma server at ``CHROMA_URL``.
Vectors are computed here (:mod:`grobot.core.memory.embeddings`), so Chroma never
downloads a model. Chroma calls are blocking: the async methods run them in a thread.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from grobot.core.memory.embeddings import get_embedder
from grobot.core.models import utcnow
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

MAX_MEMORY_CHARS = 4000


@dataclass(frozen=True)
class Memory:
    id: str
    text: str
    metadata: dict[str, Any]
    distance: float | None = None


def collection_name(bot_id: int) -> str:
    return f"grobot_bot_{bot_id}"


class ChromaMemory:
    """The :class:`grobot.core.memory.MemoryPort` on ChromaDB."""

    def __init__(self, client: Any | None = None) -> None:
        self._client = client
        self._lock = threading.Lock()

    # -- client -----------------------------------------------------------------------
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = _make_client()
            return self._client

    def _collection(self, bot_id: int) -> Any:
        return self.client().get_or_create_collection(
            collection_name(bot_id), embedding_function=None, metadata={"hnsw:space": "cosine"}
        )

    # -- blocking API -------------------------------------------------------------------
    def add(self, bot_id: int, texts: list[str], metadata: dict[str, Any] | None = None) -> list[str]:
        texts = [t.strip()[:MAX_MEMORY_CHARS] for t in texts if t and t.strip()]
        if not texts:
            return []
        ids = [uuid.uuid4().hex for _ in texts]
        meta = {k: v for k, v in (metadata or {}).items() if isinstance(v, (str, int, float, bool))}
        meta.setdefault("created_at", utcnow().isoformat(timespec="seconds"))
        self._collection(bot_id).add(
            ids=ids, documents=texts, embeddings=get_embedder().embed(texts), metadatas=[dict(meta) for _ in texts]
        )
        return ids

    def query(self, bot_id: int, query: str, k: int = 5, where: dict[str, Any] | None = None) -> list[Memory]:
        collection = self._collection(bot_id)
        count = collection.count()
        if count == 0 or not query.strip():
            return []
        result = collection.query(
            query_embeddings=get_embedder().embed([query]), n_results=min(k, count), where=where or None,
            include=["documents", "metadatas", "distances"],
        )
        return [
            Memory(id=i, text=d, metadata=m or {}, distance=dist)
            for i, d, m, dist in zip(result["ids"][0], result["documents"][0], result["metadatas"][0],
                                     result["distances"][0])
        ]

    def list(self, bot_id: int, *, limit: int = 100, offset: int = 0) -> list[Memory]:
        got = self._collection(bot_id).get(limit=limit, offset=offset, include=["documents", "metadatas"])
        return [Memory(id=i, text=d, metadata=m or {}) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])]

    def count(self, bot_id: int) -> int:
        return self._collection(bot_id).count()

    def delete(self, bot_id: int, ids: list[str] | None = None, where: dict[str, Any] | None = None) -> None:
        if ids or where:
            self._collection(bot_id).delete(ids=ids, where=where)

    def drop_bot(self, bot_id: int) -> None:
        """Delete the whole collection of a bot (when the bot is deleted)."""
        try:
            self.client().delete_collection(collection_name(bot_id))
        except Exception as exc:  # missing collection: nothing to do
            logger.debug("No memory collection to drop for bot %s: %s", bot_id, exc)

    # -- MemoryPort (async) --------------------------------------------------------------
    async def remember(self, bot_id: int, texts: list[str], metadata: dict[str, Any]) -> None:
        await asyncio.to_thread(self.add, bot_id, texts, metadata)

    async def search(self, bot_id: int, query: str, k: int = 5) -> list[str]:
        return [m.text for m in await asyncio.to_thread(self.query, bot_id, query, k)]


def _make_client() -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    settings = get_settings()
    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if settings.chroma_url:
        url = urlparse(settings.chroma_url)
        return chromadb.HttpClient(
            host=url.hostname or "localhost",
            port=url.port or (443 if url.scheme == "https" else 8000),
            ssl=url.scheme == "https",
            settings=chroma_settings,
        )
    settings.chroma_dir.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(settings.chroma_dir), settings=chroma_settings)


@functools.lru_cache(maxsize=1)
def get_memory() -> ChromaMemory:
    """The process-wide memory store."""
    return ChromaMemory()
