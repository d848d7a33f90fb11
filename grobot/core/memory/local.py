"""The memory store used in place: only the bot worker's supervisor makes one.

Every store call (Chroma, the embedder) runs on a small executor of its own, so memory
work never takes the threads the supervisor's leases and heartbeats use, and never runs
on its event loop. The embedder and Chroma load on first use.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from grobot.core.memory import RELEVANT_DISTANCE, Memory
from grobot.core.words import words as meaningful_words

logger = logging.getLogger(__name__)

T = TypeVar("T")
MEMORY_THREADS = 2


class LocalMemory:
    """The full memory API on the store of this process (async, off the event loop)."""

    def __init__(self, store: Any | None = None, *, threads: int = MEMORY_THREADS) -> None:
        self._store = store
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="grobot-memory")
        self._vectors: dict[str, Any] = {}  # candidate text -> its vector (tool descriptions)
        self._words: OrderedDict[str, Any] = OrderedDict()  # a message's word -> its vector (the word filter)
        self._messages: OrderedDict[str, Future[Any]] = OrderedDict()  # recent message -> its vector
        # Bots with no memory, as their last lookup found (most bots before their first talks):
        # a message to one is looked up without a store call. Every add forgets it (``_writes``
        # counts them, so that a lookup running while an add ends does not mark the bot).
        self._without_memories: set[int] = set()
        self._writes: dict[int, int] = {}
        self._documents: Any = None

    @property
    def store(self) -> Any:
        if self._store is None:
            from grobot.core.memory.vector_store import get_memory

            self._store = get_memory()
        return self._store

    @staticmethod
    def embedder_loaded() -> bool:
        """Whether this process has loaded the embedding model (without loading it)."""
        import sys

        module = sys.modules.get("grobot.core.embeddings")
        return bool(module is not None and module.get_embedder.cache_info().currsize)

    async def warm(self) -> None:
        """Load Chroma and the embedding model now (on the store's threads), so that the first
        message does not wait for them; a failure is logged and retried on first use."""

        def load() -> None:
            from grobot.core.embeddings import get_embedder

            _ = self.store
            get_embedder().embed(["warm-up"])

        started = time.monotonic()
        try:
            await self._run(load)
        except Exception as exc:
            logger.warning("Memory warm-up failed (%s); it loads on first use", type(exc).__name__)
        else:
            logger.info("Memory store and embedding model loaded in %.1f s", time.monotonic() - started)

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    def _call(self, name: str) -> Callable[..., Any]:
        return lambda *args, **kwargs: getattr(self.store, name)(*args, **kwargs)

    # -- the full API (the supervisor's link serves these) -------------------------------------
    async def add(self, bot_id: int, texts: list[str], metadata: dict[str, Any] | None = None, *,
                  dedupe: bool = False) -> list[str]:
        self._wrote(bot_id)
        try:
            return await self._run(self._call("add"), bot_id, texts, metadata, dedupe=dedupe)
        finally:
            self._wrote(bot_id)

    def _wrote(self, bot_id: int) -> None:
        self._writes[bot_id] = self._writes.get(bot_id, 0) + 1
        self._without_memories.discard(bot_id)

    async def query(self, bot_id: int, query: str, k: int = 5, *, max_distance: float | None = None,
                    user_id: str | None = None) -> list[Memory]:
        where = {"user_id": str(user_id)} if user_id else None
        return await self._run(self._call("query"), bot_id, query, k, where, max_distance)

    async def count(self, bot_id: int, *, user_id: str | None = None) -> int:
        return await self._run(self._call("count"), bot_id, user_id)

    async def delete(self, bot_id: int, ids: list[str]) -> int:
        return await self._run(self._call("delete"), bot_id, ids)

    async def forget_user(self, bot_id: int, user_id: str) -> int:
        return await self._run(self._call("forget_user"), bot_id, user_id)

    async def drop_bot(self, bot_id: int) -> None:
        await self._run(self._call("drop_bot"), bot_id)
        await self._run(self.documents_index.drop_bot, bot_id)

    # -- the bots' documents (grobot.core.documents) -------------------------------------------
    @property
    def documents_index(self) -> Any:
        """The bots' passages, in the memory store's Chroma (:class:`~grobot.core.documents.index.DocumentIndex`)."""
        if self._documents is None:
            from grobot.core.documents.index import DocumentIndex

            self._documents = DocumentIndex(lambda: self.store.client())
        return self._documents

    async def documents(self, bot_id: int, query: str, k: int = 3, *, threshold: float | None = None,
                        quote: bool = True) -> list[Any] | None:
        """The passages of ``bot_id`` closest to ``query`` (None: it has none indexed), with the message's
        vector when the supervisor started it (shared with the memory lookup and the Tool Router).

        A bot without passages does not have the message embedded for them: most bots have none, and
        a message already on its way to the model should not cost them an embedding (nor the Tool
        Router, which would then use that vector instead of its word filter)."""
        from grobot.core.documents import lookup

        started = self._messages.get(query)
        if started is None:
            index = self.documents_index
            if index.known_empty(bot_id) or not await self._run(index.has_passages, bot_id):
                return None
            if self.embedder_loaded():
                started = self.embedding(query)
        return await self._run(lambda: lookup.search(self.documents_index, bot_id, query, k=k, threshold=threshold,
                                                     vector=_vector_or_none(started), quote=quote))

    async def prune(self, existing_bot_ids: set[int], *, keep: int = 0) -> tuple[list[int], int]:
        """Drop the collections of bots that no longer exist (deleted while no worker ran), and
        trim each remaining bot to its newest ``keep`` memories (0: no cap).

        Returns the bots dropped and how many memories the cap deleted.
        """

        def work() -> tuple[list[int], int]:
            present = self.store.bot_ids()
            gone = [b for b in present if b not in existing_bot_ids]
            for bot_id in gone:
                self.store.drop_bot(bot_id)
            trimmed = sum(self.store.trim(b, keep) for b in present if b in existing_bot_ids) if keep > 0 else 0
            return gone, trimmed

        return await self._run(work)

    def embedding(self, text: str) -> Future[Any]:
        """The vector of a message, computed once for the memory lookup and the Tool Router.

        The first caller starts it (the supervisor does so when a message arrives, before it
        reads the database); later callers of the same text share it. Once the model is loaded,
        it runs on ONNX Runtime's own thread (:meth:`MiniLMEmbedder.start_one`): this thread only
        tokenizes, and the model, which holds no GIL, runs beside what this thread does next.
        Before that, the store's threads load the model and compute it.
        """
        found = self._messages.get(text)
        if found is not None and not (found.done() and (found.cancelled() or found.exception() is not None)):
            self._messages.move_to_end(text)
            return found
        if self.embedder_loaded():
            from grobot.core.embeddings import get_embedder

            future = get_embedder().start_one(text)
        else:
            future = self._executor.submit(_embed_one, text)
        self._messages[text] = future
        while len(self._messages) > RECENT_MESSAGES:
            self._messages.popitem(last=False)
        return future

    async def start_embedding(self, text: str) -> None:
        """Start the vector of ``text`` (:meth:`embedding`) and return at once: a database read
        made next runs beside the model (``bench/router_cost.py`` shows the supervisor's read
        with and without it)."""
        self.embedding(text)

    async def similarities(self, text: str, candidates: list[str]) -> list[float]:
        """Cosine similarity of ``text`` to each candidate (the Tool Router); candidates' vectors are cached.

        A message whose vector is not on its way already (for its memory lookup) is first compared
        word by word (:meth:`word_similarities`): when none of its words comes within
        :data:`WORD_NEAR` of a candidate, no candidate is near it (a message that needs a tool has
        a word near that tool) and those scores are the answer: the message is not embedded.
        """
        if text not in self._messages:
            bounds = await self.word_similarities(text, candidates)
            if max(bounds, default=0.0) < WORD_NEAR:
                return bounds
        vector = await asyncio.wrap_future(self.embedding(text))
        if all(c in self._vectors for c in candidates):  # a few dot products: no thread hop
            return _similarities(self._vectors, vector, candidates)
        return await self._run(_similarities, self._vectors, vector, candidates)

    async def word_similarities(self, text: str, candidates: list[str]) -> list[float]:
        """Per candidate, the highest cosine similarity of one meaningful word of ``text`` to it (0 for a
        text without one). Words' vectors are cached (chat reuses its words: most messages cost a
        few dot products); new ones are embedded together, on the store's threads."""
        words = meaningful_words(text)
        if not words or not candidates:
            return [0.0] * len(candidates)
        if any(w not in self._words for w in words) or any(c not in self._vectors for c in candidates):
            await self._run(self._cache_vectors, words, candidates)
        return _best_of(self._words, words, self._vectors, candidates)

    def _cache_vectors(self, words: list[str], candidates: list[str]) -> None:
        """Embed the words and candidates not cached yet (on a store thread)."""
        import numpy as np

        from grobot.core.embeddings import DIMENSIONS, get_embedder

        new_words = [w for w in words if w not in self._words]
        if new_words:
            for word, vector in zip(new_words, get_embedder().embed(new_words)):
                self._words[word] = np.asarray(vector, dtype=np.float32)
            while len(self._words) > WORD_CACHE_SIZE:
                self._words.popitem(last=False)
        _similarities(self._vectors, np.zeros(DIMENSIONS, dtype=np.float32), candidates)  # caches their vectors

    # -- MemoryPort (the Test Chat jobs of the supervisor) ----------------------------------
    async def remember(self, bot_id: int, texts: list[str], metadata: dict[str, Any]) -> None:
        await self.add(bot_id, texts, metadata, dedupe=True)

    def may_have_memories(self, bot_id: int) -> bool:
        """False when the last lookup of ``bot_id`` found it has no memory (and nothing was added since)."""
        return bot_id not in self._without_memories

    async def search(self, bot_id: int, query: str, k: int = 5) -> list[str]:
        """The memories of ``bot_id`` relevant to ``query`` (a message's lookup)."""
        if bot_id in self._without_memories:
            return []
        writes = self._writes.get(bot_id, 0)
        started = self._messages.get(query)  # the message's vector, if the supervisor started it

        found = await self._run(self._call("lookup"), bot_id, query, k, None, RELEVANT_DISTANCE, embedding=started)
        if found is None and self._writes.get(bot_id, 0) == writes:
            self._without_memories.add(bot_id)
        return [m.text for m in found or []]

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # Last in the class: a method named ``list`` would shadow the builtin in annotations below it.
    async def list(self, bot_id: int, *, limit: int = 50, offset: int = 0, user_id: str | None = None) -> list[Memory]:
        return await self._run(self._call("list"), bot_id, limit=limit, offset=offset, user_id=user_id)


VECTOR_CACHE_SIZE = 4096
RECENT_MESSAGES = 64
WORD_CACHE_SIZE = 10_000  # words' vectors kept for the word filter (1.5 KiB each)
# A message none of whose words comes this close (cosine, MiniLM) to a tool needs no tool. Every
# request of bench/tool_use.py that the router sends to a tool by meaning has a word at 0.25 or
# more of that tool; chat's words reach 0.39 ("how are you today?": "today", the date tool), so
# some chat is still embedded, never a message that needs a tool (tests/core/test_tool_router.py).
WORD_NEAR = 0.22


def _best_of(words_cache: dict[str, Any], words: list[str], cache: dict[str, Any], candidates: list[str]) -> list[float]:
    """Per candidate, the highest dot product of one of ``words``' vectors with its vector."""
    import numpy as np

    scores = np.stack([words_cache[w] for w in words]) @ np.stack([cache[c] for c in candidates]).T
    return [float(v) for v in scores.max(axis=0)]


def _vector_or_none(started: Future[Any] | None) -> Any:
    """The vector a future holds, if it comes within a second (None: the caller embeds the text itself;
    a future queued behind the waiting thread on the store's own threads never comes)."""
    if started is None:
        return None
    try:
        return started.result(timeout=1.0)
    except Exception:
        return None


def _embed_one(text: str) -> Any:
    import numpy as np

    from grobot.core.embeddings import get_embedder

    return np.asarray(get_embedder().embed([text])[0], dtype=np.float32)


def _similarities(cache: dict[str, Any], vector: Any, candidates: list[str]) -> list[float]:
    """Cosine similarities of ``vector`` to ``candidates`` (vectors are normalised: a dot product)."""
    import numpy as np

    from grobot.core.embeddings import get_embedder

    missing = [c for c in dict.fromkeys(candidates) if c not in cache]
    if missing:
        if len(cache) + len(missing) > VECTOR_CACHE_SIZE:
            cache.clear()
        cache.update(zip(missing, np.asarray(get_embedder().embed(missing), dtype=np.float32)))
    if not candidates:
        return []
    return (np.stack([cache[c] for c in candidates]) @ vector).tolist()
