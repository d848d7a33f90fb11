"""The supervisor's indexer: keeps every bot's passages in step with its files.

The ``bot_file`` rows say what each bot has (whoever wrote it: the web app, the CLI, a tool);
``bot_document`` rows say what the index holds. :meth:`DocumentsIndexer.sync` indexes what is
new or changed and drops what is gone, file by file: a file that cannot be indexed gets its one
line, and the others go on. It runs at every poll of the supervisor and when the web app or the
CLI ask for it (the ``sync_documents`` operation of its link's ``memory`` group), one sync at a time, on a
thread of its own: a message's memory lookup never waits behind it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from grobot.core.documents import DocumentError
from grobot.core.documents.chunks import Chunk, passages
from grobot.core.documents.index import DocumentIndex
from grobot.core.wording import counted, human_size

logger = logging.getLogger(__name__)

T = TypeVar("T")
EMBED_BATCH = 8  # passages per embedder call: a message's lookup waits at most one batch for the model
Database = Callable[..., Any]  # ``db(fn, *args, **kwargs)``: ``fn(..., session=...)`` in a transaction of its own


def embed_chunks(chunks: list[Chunk]) -> list[Any]:
    """The vectors of ``chunks`` (in their order), embedded shortest first so that a batch pads little."""
    from grobot.core.embeddings import get_embedder

    embedder = get_embedder()
    texts = [c.embedding_text() for c in chunks]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vectors: list[Any] = [None] * len(texts)
    for start in range(0, len(order), EMBED_BATCH):
        batch = order[start:start + EMBED_BATCH]
        for index, vector in zip(batch, embedder.embed([texts[i] for i in batch])):
            vectors[index] = vector
    return vectors


class DocumentsIndexer:
    """Indexes the bots' files into ``index`` (``db``: how to run a service function in a transaction;
    ``converter``: an object with ``convert(path, data)``, by default one in a child process)."""

    def __init__(self, index: DocumentIndex, db: Database, *, converter: Any = None) -> None:
        self.index = index
        self._db = db
        self._converter = converter
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grobot-documents")
        self._lock: asyncio.Lock | None = None
        self._passes: asyncio.Condition | None = None  # told when a pass ends
        self._asked = 0  # syncs asked for so far
        self._served = 0  # of those, the ones a finished pass started after

    @property
    def converter(self) -> Any:
        if self._converter is None:
            from grobot.core.documents.isolated import IsolatedConverter

            self._converter = IsolatedConverter()
        return self._converter

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def _in_db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(self._db, fn, *args, **kwargs)

    async def sync(self) -> int:
        """Index what is new or changed and drop what is gone; returns how many files it handled.

        A sync asked for while one runs runs once more right after it (nothing asked is missed), and the
        caller returns (with 0) when that pass has ended: what it asked for is done by then."""
        if self._lock is None or self._passes is None:
            self._lock, self._passes = asyncio.Lock(), asyncio.Condition()
        self._asked += 1
        ticket = self._asked
        if self._lock.locked():
            async with self._passes:
                await self._passes.wait_for(lambda: self._served >= ticket)
            return 0
        handled = 0
        async with self._lock:
            while True:
                covered = self._asked  # this pass starts after every sync asked so far
                try:
                    handled += await self._sync_once()
                except BaseException:
                    covered = self._asked  # nobody waits for a pass that will not come
                    raise
                finally:
                    async with self._passes:
                        self._served = covered
                        self._passes.notify_all()
                if self._asked == covered:  # none asked during the pass
                    return handled

    async def _sync_once(self) -> int:
        from grobot.core.services import documents

        jobs, removals = await self._in_db(documents.pending)
        for removal in removals:
            await self._run(self.index.delete_file, removal.bot_id, removal.path)
            await self._in_db(documents.forget, removal)
            logger.info("Bot %s: the passages of %s were removed (the file is gone)", removal.bot_id, removal.path)
        for job in jobs:
            if not await self._in_db(documents.still_pending, job):
                continue
            await self._in_db(documents.record, job, state=documents.INDEXING)
            started = time.perf_counter()
            try:
                count, pages = await self._run(self.index_file, job)
            except DocumentError as exc:
                await self._run(self.index.delete_file, job.bot_id, job.path)  # no stale passages of an older version
                await self._in_db(documents.record, job, state=documents.FAILED, error=str(exc))
                logger.info("Bot %s: %s not indexed: %s", job.bot_id, job.path, exc, extra={"bot_id": job.bot_id})
            except Exception as exc:
                logger.exception("Bot %s: indexing %s failed", job.bot_id, job.path, extra={"bot_id": job.bot_id})
                await self._in_db(documents.record, job, state=documents.FAILED,
                                  error=f"it could not be indexed ({type(exc).__name__}; the worker's log has more)")
            else:
                await self._in_db(documents.record, job, state=documents.INDEXED, passages=count, pages=pages)
                logger.info("Bot %s: %s indexed: %s, %s in %.1f s", job.bot_id, job.path, counted(pages, "page"),
                            counted(count, "passage"), time.perf_counter() - started, extra={"bot_id": job.bot_id})
        return len(jobs) + len(removals)

    def index_file(self, job: Any) -> tuple[int, int]:
        """Convert, cut, embed and store one file (blocking); ``(passages, pages)`` or :class:`DocumentError`."""
        from grobot.core.services.files import resolve

        limit = job.settings.max_file_bytes
        _, target = resolve(job.bot_id, job.path)
        try:
            size = target.stat().st_size
            if size > limit:
                raise DocumentError(f"too large to index: {human_size(size)}; this bot indexes files up to "
                                    f"{human_size(limit)}")
            data = target.read_bytes()
        except OSError as exc:
            raise DocumentError(f"the file could not be read from disk ({exc.strerror or type(exc).__name__})") from None
        if not data.strip():
            raise DocumentError("no text to index: the file is empty")
        converted = self.converter.convert(job.path, data)
        chunks = passages(converted.sections)
        if not chunks:
            raise DocumentError("no text to index: the file holds no words")
        others = self.index.count(job.bot_id) - self.index.count(job.bot_id, job.path)
        if others + len(chunks) > job.settings.max_passages:
            raise DocumentError(f"the bot's documents would hold {others + len(chunks):,} passages; its limit is "
                                f"{job.settings.max_passages:,} (raise it, or remove files)")
        return self.index.replace_file(job.bot_id, job.path, job.sha256, chunks, embed_chunks(chunks)), converted.pages

    async def prune(self, existing_bot_ids: set[int]) -> list[int]:
        """Drop the passages of bots that no longer exist; returns them."""
        def work() -> list[int]:
            gone = [b for b in self.index.bot_ids() if b not in existing_bot_ids]
            for bot_id in gone:
                self.index.drop_bot(bot_id)
            return gone

        return await self._run(work)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        close = getattr(self._converter, "close", None)
        if close is not None:
            close()
