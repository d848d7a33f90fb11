"""Long-term memory of the bots in ChromaDB: one collection per bot.

Embedded Chroma in ``<data dir>/chroma`` by default, or a Chroma server at ``CHROMA_URL``.
Vectors are computed here (:mod:`grobot.core.embeddings`), so Chroma never
downloads a model. Every method blocks: only the bot worker's supervisor opens the store
(:mod:`grobot.core.memory.local` runs it off the event loop); everyone else goes through
its link.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import threading
import time
import uuid
from typing import Any
from urllib.parse import urlparse

from grobot.core.embeddings import get_embedder
from grobot.core.memory import MAX_MEMORY_CHARS, Memory
from grobot.core.models import utcnow
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

# Cosine distances of MiniLM: a paraphrase ~0.02-0.07, a related question ~0.3, unrelated 0.7-1.0.
DUPLICATE_DISTANCE = 0.1
COLLECTION_PREFIX = "grobot_bot_"
_COLLECTION = re.compile(rf"^{COLLECTION_PREFIX}(\d+)$")


def collection_name(bot_id: int) -> str:
    return f"{COLLECTION_PREFIX}{bot_id}"


def _clean_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """Chroma takes scalar values only; None and empty strings are left out."""
    return {str(k): v for k, v in (metadata or {}).items()
            if isinstance(v, (str, int, float, bool)) and v != ""}


def _user_filter(user_id: str | None) -> dict[str, Any] | None:
    return {"user_id": str(user_id)} if user_id else None


class ChromaMemory:
    """The bots' memories in ChromaDB (blocking API, thread-safe)."""

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

    def _existing(self, bot_id: int) -> Any | None:
        """The bot's collection, or None when it has none (reads never create one)."""
        try:
            return self.client().get_collection(collection_name(bot_id))
        except Exception:  # chromadb raises NotFoundError (ValueError in older versions)
            return None

    # -- writing ---------------------------------------------------------------------------
    def add(self, bot_id: int, texts: list[str], metadata: dict[str, Any] | None = None, *,
            dedupe: bool = False) -> list[str]:
        """Store ``texts``; returns the new ids. ``dedupe``: skip a text whose meaning is already stored."""
        texts = [t.strip()[:MAX_MEMORY_CHARS] for t in texts if t and t.strip()]
        if not texts:
            return []
        vectors = get_embedder().embed(texts)
        collection = self._collection(bot_id)
        if dedupe:
            texts, vectors = self._new_only(collection, texts, vectors)
            if not texts:
                return []
        ids = [uuid.uuid4().hex for _ in texts]
        meta = _clean_metadata(metadata)
        meta.setdefault("created_at", utcnow().isoformat(timespec="seconds"))
        now = float(meta.pop("created_ts", None) or time.time())
        # A batch keeps its order when listed newest first (the last text is the newest).
        metadatas = [{**meta, "created_ts": now + index * 1e-6} for index in range(len(texts))]
        collection.add(ids=ids, documents=texts, embeddings=vectors, metadatas=metadatas)
        return ids

    @staticmethod
    def _new_only(collection: Any, texts: list[str], vectors: list[list[float]]) -> tuple[list[str], list[list[float]]]:
        """The texts that are neither stored already nor repeated in this batch (by meaning)."""
        keep_texts: list[str] = []
        keep_vectors: list[list[float]] = []
        stored = collection.count()
        nearest = collection.query(query_embeddings=vectors, n_results=1, include=["distances"]) if stored else None
        for index, (text, vector) in enumerate(zip(texts, vectors)):
            if nearest is not None and nearest["distances"][index] and nearest["distances"][index][0] < DUPLICATE_DISTANCE:
                continue
            if any(1.0 - sum(a * b for a, b in zip(vector, kept)) < DUPLICATE_DISTANCE for kept in keep_vectors):
                continue
            keep_texts.append(text)
            keep_vectors.append(vector)
        return keep_texts, keep_vectors

    def delete(self, bot_id: int, ids: list[str] | None = None, where: dict[str, Any] | None = None) -> int:
        """Delete by ids and/or metadata filter; returns how many were deleted."""
        collection = self._existing(bot_id)
        if collection is None or (not ids and not where):
            return 0
        found = collection.get(ids=ids, where=where, include=[])["ids"]
        if found:
            collection.delete(ids=found)
        return len(found)

    def forget_user(self, bot_id: int, user_id: str) -> int:
        """Delete the memories whose ``user_id`` metadata is this Discord user."""
        return self.delete(bot_id, where=_user_filter(user_id))

    def drop_bot(self, bot_id: int) -> None:
        """Delete the whole collection of a bot (when the bot is deleted)."""
        try:
            self.client().delete_collection(collection_name(bot_id))
        except Exception as exc:  # missing collection: nothing to do
            logger.debug("No memory collection to drop for bot %s: %s", bot_id, exc)

    def trim(self, bot_id: int, keep: int) -> int:
        """Delete the oldest memories beyond the newest ``keep``; returns how many were deleted."""
        collection = self._existing(bot_id)
        if collection is None or keep <= 0 or collection.count() <= keep:
            return 0
        everything = collection.get(include=["metadatas"])
        order = sorted(zip(everything["ids"], everything["metadatas"]),
                       key=lambda pair: float((pair[1] or {}).get("created_ts") or 0.0))
        oldest = [i for i, _ in order[: max(0, len(order) - keep)]]
        for start in range(0, len(oldest), 5000):  # Chroma bounds the size of one delete
            collection.delete(ids=oldest[start:start + 5000])
        return len(oldest)

    def bot_ids(self) -> list[int]:
        """The bots that have a collection."""
        names = [getattr(c, "name", c) for c in self.client().list_collections()]
        return sorted(int(m.group(1)) for m in (_COLLECTION.match(str(n)) for n in names) if m)

    # -- reading ---------------------------------------------------------------------------
    def query(self, bot_id: int, query: str, k: int = 5, where: dict[str, Any] | None = None,
              max_distance: float | None = None, *, embedding: Any = None) -> list[Memory]:
        """The ``k`` memories closest to ``query`` (closer than ``max_distance`` when given);
        ``embedding``: the query's vector when it is known already, or a future of it."""
        return self.lookup(bot_id, query, k, where, max_distance, embedding=embedding) or []

    def lookup(self, bot_id: int, query: str, k: int = 5, where: dict[str, Any] | None = None,
               max_distance: float | None = None, *, embedding: Any = None) -> list[Memory] | None:
        """:meth:`query`, and None when the bot has no memory at all."""
        collection = self._existing(bot_id)
        count = collection.count() if collection is not None else 0
        if collection is None or count == 0:
            return None
        if not query.strip():
            return []
        vector = _known_vector(embedding)
        result = collection.query(
            query_embeddings=[vector] if vector is not None else get_embedder().embed([query]),
            n_results=min(max(1, k), count), where=where or None,
            include=["documents", "metadatas", "distances"],
        )
        hits = [
            Memory(id=i, text=d, metadata=m or {}, distance=dist)
            for i, d, m, dist in zip(result["ids"][0], result["documents"][0], result["metadatas"][0],
                                     result["distances"][0])
        ]
        return [h for h in hits if max_distance is None or (h.distance or 0.0) <= max_distance]

    def count(self, bot_id: int, user_id: str | None = None) -> int:
        collection = self._existing(bot_id)
        if collection is None:
            return 0
        if not user_id:
            return int(collection.count())
        return len(collection.get(where=_user_filter(user_id), include=[])["ids"])

    # -- MemoryPort (async; tests and single-process use) -----------------------------------
    async def remember(self, bot_id: int, texts: list[str], metadata: dict[str, Any]) -> None:
        await asyncio.to_thread(self.add, bot_id, texts, metadata)

    async def search(self, bot_id: int, query: str, k: int = 5) -> list[str]:
        return [m.text for m in await asyncio.to_thread(self.query, bot_id, query, k)]

    # Last in the class: a method named ``list`` would shadow the builtin in annotations below it.
    def list(self, bot_id: int, *, limit: int = 100, offset: int = 0, user_id: str | None = None) -> list[Memory]:
        """Memories newest first (one page)."""
        collection = self._existing(bot_id)
        if collection is None:
            return []
        everything = collection.get(where=_user_filter(user_id), include=["metadatas"])
        order = sorted(zip(everything["ids"], everything["metadatas"]),
                       key=lambda pair: float((pair[1] or {}).get("created_ts") or 0.0), reverse=True)
        page = [i for i, _ in order[max(0, offset): max(0, offset) + max(0, limit)]]
        if not page:
            return []
        got = collection.get(ids=page, include=["documents", "metadatas"])
        by_id = {i: Memory(id=i, text=d, metadata=m or {}) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])}
        return [by_id[i] for i in page if i in by_id]


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
    """The process-wide memory store (the supervisor's; see :mod:`grobot.core.memory.local`)."""
    return ChromaMemory()


def _known_vector(embedding: Any) -> list[float] | None:
    """A vector given as such or as a future of it (None: none, or its computation failed)."""
    if embedding is None:
        return None
    try:
        vector = embedding.result() if hasattr(embedding, "result") else embedding
    except Exception:
        return None
    return [float(v) for v in vector]
