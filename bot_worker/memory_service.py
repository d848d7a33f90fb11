"""The supervisor's memory service: the bots' long-term memory over HTTP on 127.0.0.1.

One store per supervisor (the embedder takes ~240 MiB and an embedded Chroma must not be
opened by many processes), served to the bot processes, the CLI and the web app on an
ephemeral port with a bearer token derived from the secret key. Requests are handled on
the supervisor's event loop by aiohttp; the store work runs on the store's own threads
(:class:`~grobot.core.memory.local.LocalMemory`), which load the embedder on first use.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from aiohttp import web

from bot_worker.local_http import LocalServer, bearer_token
from grobot.core.errors import GroBotError, NotFoundError, disk_problem
from grobot.core.memory import MAX_MEMORY_CHARS
from grobot.core.memory.local import LocalMemory

logger = logging.getLogger(__name__)

MAX_TEXTS = 100
MAX_CANDIDATES = 500  # tool descriptions compared with one message (the Tool Router)
MAX_K = 50
MAX_PAGE = 500
MAX_BODY = 1024 * 1024

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _failure(exc: Exception) -> str:
    """What a caller is told of a failure of the store: a full or read-only disk in words an admin can
    act on (Chroma says "database or disk is full" inside an InternalError), else the error's type."""
    from grobot.core.settings import get_settings

    settings = get_settings()
    where = settings.chroma_url or str(settings.chroma_dir)
    code = disk_problem(exc)
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"the memory store's disk is full ({where}): free some space, then try again"
    if code == errno.EROFS:
        return f"the memory store's disk is read-only ({where})"
    return type(exc).__name__


class MemoryService(LocalServer):
    """An aiohttp server in front of a :class:`LocalMemory` (start it on a running event loop)."""

    name = "Memory service"

    def __init__(self, memory: LocalMemory, *, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.memory = memory
        self._tokens: list[str] = []
        # Bring the bots' document index up to date now (the supervisor's indexer; None: none here).
        self.sync_documents: Callable[[], Coroutine[Any, Any, Any]] | None = None
        self._syncs: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> str:
        """Listen (an ephemeral port by default); returns the base URL."""
        from grobot.core.security import memory_service_tokens

        self._tokens = memory_service_tokens()
        app = web.Application(middlewares=[self._auth], client_max_size=MAX_BODY)
        app.add_routes([
            web.get("/v1/health", self._health),
            web.post("/v1/bots/{bot_id:\\d+}/memories", self._add),
            web.get("/v1/bots/{bot_id:\\d+}/memories", self._list),
            web.post("/v1/bots/{bot_id:\\d+}/search", self._search),
            web.get("/v1/bots/{bot_id:\\d+}/count", self._count),
            web.post("/v1/similarities", self._similarities),
            web.delete("/v1/bots/{bot_id:\\d+}/memories/{memory_id:[0-9a-f]{1,64}}", self._delete),
            web.post("/v1/bots/{bot_id:\\d+}/forget", self._forget),
            web.delete("/v1/bots/{bot_id:\\d+}", self._drop),
            web.post("/v1/bots/{bot_id:\\d+}/documents/search", self._documents_search),
            web.post("/v1/documents/sync", self._documents_sync),
        ])
        return await self.serve(app)

    async def stop(self) -> None:
        await super().stop()
        self.memory.close()

    # ------------------------------------------------------------------ auth
    def _token_ok(self, given: str) -> bool:
        if any(hmac.compare_digest(given, token) for token in self._tokens):
            return True
        from grobot.core.security import memory_service_tokens

        fresh = memory_service_tokens()  # the keys may have been rotated since we started
        if fresh != self._tokens:
            self._tokens = fresh
            return any(hmac.compare_digest(given, token) for token in fresh)
        return False

    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        given = bearer_token(request)
        if not given or not self._token_ok(given):
            return _error(401, "missing or wrong bearer token")
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except NotFoundError as exc:
            return _error(404, str(exc))
        except (GroBotError, ValueError, TypeError, KeyError) as exc:
            return _error(400, str(exc) or type(exc).__name__)
        except Exception as exc:
            logger.exception("Memory service request failed")
            return _error(500, _failure(exc))

    # ------------------------------------------------------------------ handlers
    @staticmethod
    def _bot(request: web.Request) -> int:
        return int(request.match_info["bot_id"])

    @staticmethod
    async def _body(request: web.Request) -> dict[str, Any]:
        data = await request.json()
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        return data

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "embedder_loaded": self.memory.embedder_loaded()})

    async def _add(self, request: web.Request) -> web.Response:
        data = await self._body(request)
        texts = data.get("texts")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise ValueError("texts: expected a non-empty list of strings")
        if len(texts) > MAX_TEXTS:
            raise ValueError(f"at most {MAX_TEXTS} texts at once")
        if any(len(t) > MAX_MEMORY_CHARS for t in texts):
            raise ValueError(f"a memory has at most {MAX_MEMORY_CHARS} characters")
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ValueError("metadata: expected an object")
        ids = await self.memory.add(self._bot(request), texts, metadata, dedupe=bool(data.get("dedupe")))
        return web.json_response({"ids": ids})

    async def _search(self, request: web.Request) -> web.Response:
        data = await self._body(request)
        query = str(data.get("query") or "")
        k = max(1, min(int(data.get("k") or 5), MAX_K))
        max_distance = data.get("max_distance")
        found = await self.memory.query(self._bot(request), query, k,
                                        max_distance=float(max_distance) if max_distance is not None else None,
                                        user_id=str(data["user_id"]) if data.get("user_id") else None)
        return web.json_response({"memories": [m.as_dict() for m in found]})

    async def _similarities(self, request: web.Request) -> web.Response:
        data = await self._body(request)
        text, candidates = str(data.get("text") or ""), data.get("candidates")
        if not isinstance(candidates, list) or not all(isinstance(c, str) for c in candidates):
            raise ValueError("candidates: expected a list of strings")
        if len(candidates) > MAX_CANDIDATES:
            raise ValueError(f"at most {MAX_CANDIDATES} candidates at once")
        scores = await self.memory.similarities(text[:MAX_MEMORY_CHARS], [c[:MAX_MEMORY_CHARS] for c in candidates])
        return web.json_response({"scores": scores})

    async def _list(self, request: web.Request) -> web.Response:
        bot_id = self._bot(request)
        limit = max(0, min(int(request.query.get("limit", 50)), MAX_PAGE))
        offset = max(0, int(request.query.get("offset", 0)))
        user_id = request.query.get("user_id") or None
        page = await self.memory.list(bot_id, limit=limit, offset=offset, user_id=user_id)
        total = await self.memory.count(bot_id, user_id=user_id)
        return web.json_response({"memories": [m.as_dict() for m in page], "total": total})

    async def _count(self, request: web.Request) -> web.Response:
        count = await self.memory.count(self._bot(request), user_id=request.query.get("user_id") or None)
        return web.json_response({"count": count})

    async def _delete(self, request: web.Request) -> web.Response:
        bot_id, memory_id = self._bot(request), request.match_info["memory_id"]
        if not await self.memory.delete(bot_id, [memory_id]):
            raise NotFoundError(f"bot {bot_id} has no memory {memory_id}")
        return web.json_response({"deleted": 1})

    async def _forget(self, request: web.Request) -> web.Response:
        data = await self._body(request)
        user_id = str(data.get("user_id") or "").strip()
        if not user_id:
            raise ValueError("user_id: required")
        return web.json_response({"deleted": await self.memory.forget_user(self._bot(request), user_id)})

    async def _drop(self, request: web.Request) -> web.Response:
        await self.memory.drop_bot(self._bot(request))
        return web.json_response({"dropped": True})

    async def _documents_search(self, request: web.Request) -> web.Response:
        data = await self._body(request)
        query = str(data.get("query") or "")[:MAX_MEMORY_CHARS]
        k = max(1, min(int(data.get("k") or 3), MAX_K))
        threshold = data.get("threshold")
        found = await self.memory.documents(self._bot(request), query, k,
                                            threshold=float(threshold) if threshold is not None else None,
                                            quote=bool(data.get("quote", False)))
        return web.json_response({"indexed": found is not None,
                                  "passages": [p.as_dict() for p in found or []]})

    async def _documents_sync(self, request: web.Request) -> web.Response:
        """Start a sync of the document index and answer at once (the Files tab and the CLI follow the states)."""
        if self.sync_documents is None:
            return _error(503, "this worker does not index documents")
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(self.sync_documents())
        self._syncs.add(task)
        task.add_done_callback(self._syncs.discard)
        return web.json_response({"started": True})
