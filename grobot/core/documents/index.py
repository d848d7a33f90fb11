"""The bots' passages in ChromaDB: one collection per bot (``grobot_docs_<id>``) beside its memories.

Vectors come from the memory's embedder (:mod:`grobot.core.embeddings`); Chroma never
loads a model. A passage's id is derived from its file's path, content hash and position, so
indexing the same file twice (two supervisors on one Chroma server) stores it once. Every
method blocks: only the bot worker's supervisor opens the store.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from grobot.core.documents import Passage
from grobot.core.documents.chunks import Chunk

logger = logging.getLogger(__name__)

COLLECTION_PREFIX = "grobot_docs_"
_COLLECTION = re.compile(rf"^{COLLECTION_PREFIX}(\d+)$")
WRITE_BATCH = 1000  # passages per Chroma write
# A bot found without passages is not asked again for this long (every message of a bot asks first;
# most bots have none). This process's own writes end it at once; another supervisor's on a shared
# Chroma server are seen within it.
EMPTY_RECHECK_SECONDS = 10.0


def collection_name(bot_id: int) -> str:
    return f"{COLLECTION_PREFIX}{bot_id}"


def passage_id(path: str, sha256: str, index: int) -> str:
    return hashlib.sha1(f"{path}\0{sha256}\0{index}".encode()).hexdigest()


class DocumentIndex:
    """The passages of every bot (blocking API); ``client``: the Chroma client of the memory store."""

    def __init__(self, client: Callable[[], Any]) -> None:
        self._client = client
        self._empty: dict[int, float] = {}  # bot id -> when it was found without passages (monotonic)

    def _collection(self, bot_id: int) -> Any:
        return self._client().get_or_create_collection(
            collection_name(bot_id), embedding_function=None, metadata={"hnsw:space": "cosine"})

    def _existing(self, bot_id: int) -> Any | None:
        try:
            return self._client().get_collection(collection_name(bot_id))
        except Exception:  # chromadb raises NotFoundError (ValueError in older versions)
            return None

    # -- writing ---------------------------------------------------------------------------
    def replace_file(self, bot_id: int, path: str, sha256: str, chunks: list[Chunk], vectors: list[Any]) -> int:
        """Store the passages of ``path`` at content ``sha256`` and drop those of its other versions."""
        collection = self._collection(bot_id)
        self._empty.pop(bot_id, None)
        ids = [passage_id(path, sha256, i) for i in range(len(chunks))]
        metadatas: list[dict[str, Any]] = []
        for index, chunk in enumerate(chunks):
            meta: dict[str, Any] = {"path": path, "sha256": sha256, "section": chunk.section, "index": index}
            if chunk.page:
                meta["page"] = int(chunk.page)
            metadatas.append(meta)
        for start in range(0, len(ids), WRITE_BATCH):
            end = start + WRITE_BATCH
            collection.upsert(ids=ids[start:end], documents=[c.text for c in chunks[start:end]],
                              embeddings=[list(map(float, v)) for v in vectors[start:end]], metadatas=metadatas[start:end])
        self._delete(collection, {"$and": [{"path": path}, {"sha256": {"$ne": sha256}}]})
        return len(ids)

    def delete_file(self, bot_id: int, path: str) -> int:
        """Drop every passage of ``path``; returns how many."""
        collection = self._existing(bot_id)
        return self._delete(collection, {"path": path}) if collection is not None else 0

    @staticmethod
    def _delete(collection: Any, where: dict[str, Any]) -> int:
        found = collection.get(where=where, include=[])["ids"]
        for start in range(0, len(found), 5000):  # Chroma bounds the size of one delete
            collection.delete(ids=found[start:start + 5000])
        return len(found)

    def drop_bot(self, bot_id: int) -> None:
        try:
            self._client().delete_collection(collection_name(bot_id))
        except Exception as exc:  # no collection: nothing to do
            logger.debug("No document collection to drop for bot %s: %s", bot_id, exc)

    def bot_ids(self) -> list[int]:
        """The bots that have a collection of passages."""
        names = [getattr(c, "name", c) for c in self._client().list_collections()]
        return sorted(int(m.group(1)) for m in (_COLLECTION.match(str(n)) for n in names) if m)

    # -- reading ---------------------------------------------------------------------------
    def known_empty(self, bot_id: int) -> bool:
        """Whether the bot was found without passages less than :data:`EMPTY_RECHECK_SECONDS` ago
        (answered without asking Chroma)."""
        since = self._empty.get(bot_id)
        return since is not None and time.monotonic() - since < EMPTY_RECHECK_SECONDS

    def has_passages(self, bot_id: int) -> bool:
        """Whether the bot has any passage (asks Chroma unless :meth:`known_empty`)."""
        if self.known_empty(bot_id):
            return False
        if self.count(bot_id):
            self._empty.pop(bot_id, None)
            return True
        self._empty[bot_id] = time.monotonic()
        return False

    def count(self, bot_id: int, path: str | None = None) -> int:
        collection = self._existing(bot_id)
        if collection is None:
            return 0
        if path is None:
            return int(collection.count())
        return len(collection.get(where={"path": path}, include=[])["ids"])

    def search(self, bot_id: int, vector: Any, k: int, *, threshold: float | None = None) -> list[Passage] | None:
        """The ``k`` passages closest to ``vector`` (at least ``threshold`` similar when given), closest
        first; None when the bot has no passage at all."""
        collection = self._existing(bot_id)
        count = int(collection.count()) if collection is not None else 0
        if collection is None or count == 0:
            return None
        result = collection.query(query_embeddings=[list(map(float, vector))], n_results=min(max(1, k), count),
                                  include=["documents", "metadatas", "distances"])
        found: list[Passage] = []
        for text, meta, distance in zip(result["documents"][0], result["metadatas"][0], result["distances"][0]):
            meta = meta or {}
            score = 1.0 - float(distance)
            if threshold is not None and score < threshold:
                continue
            found.append(Passage(path=str(meta.get("path") or ""), section=str(meta.get("section") or ""),
                                 text=str(text or ""), page=int(meta["page"]) if meta.get("page") else None,
                                 score=round(score, 4)))
        return found
