"""Clients of the supervisor's memory service (HTTP on 127.0.0.1, bearer token).

``RemoteMemory`` (async, pooled) is the :class:`~grobot.core.memory.MemoryPort` of bot
processes and carries the full API; ``MemoryServiceClient`` is its blocking twin for the
services, the CLI and the web app. Both build their requests with the same
:class:`_Request` helpers, so the wire format lives in one place. Neither imports
chromadb, onnxruntime or numpy.

``RemoteMemory`` speaks aiohttp, which bot processes load anyway (discord.py): a request
costs about a quarter of a millisecond of CPU, against about 1.5 ms with httpx, and a bot
makes one per message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from grobot.core.documents import Passage
from grobot.core.errors import MemoryUnavailable, NotFoundError, ValidationError
from grobot.core.memory import RELEVANT_DISTANCE, Memory

logger = logging.getLogger(__name__)

API = "/v1"
CONNECT_TIMEOUT = 0.5
READ_TIMEOUT = 30.0  # the first add waits for the embedder and Chroma to load (seconds on a busy host)


@dataclass(frozen=True)
class _Request:
    """One call of the memory service and how to read its answer."""

    method: str
    path: str
    decode: Callable[[Any], Any]
    json: dict[str, Any] | None = None
    params: dict[str, Any] | None = None


def _memories(data: Any) -> list[Memory]:
    return [Memory.from_dict(item) for item in data["memories"]]


def _passages(data: Any) -> list[Passage] | None:
    """The passages found (None: the bot has no document indexed)."""
    if not data.get("indexed"):
        return None
    return [Passage.from_dict(item) for item in data["passages"]]


def _page(data: Any) -> tuple[list[Memory], int]:
    return _memories(data), int(data["total"])


class _Calls:
    """The requests of every operation (shared by the async and the blocking client)."""

    @staticmethod
    def add(bot_id: int, texts: list[str], metadata: dict[str, Any] | None, dedupe: bool) -> _Request:
        return _Request("POST", f"{API}/bots/{int(bot_id)}/memories", lambda d: list(d["ids"]),
                        json={"texts": list(texts), "metadata": metadata or {}, "dedupe": bool(dedupe)})

    @staticmethod
    def query(bot_id: int, query: str, k: int, max_distance: float | None, user_id: str | None) -> _Request:
        return _Request("POST", f"{API}/bots/{int(bot_id)}/search", _memories,
                        json={"query": query, "k": int(k), "max_distance": max_distance, "user_id": user_id})

    @staticmethod
    def count(bot_id: int, user_id: str | None) -> _Request:
        return _Request("GET", f"{API}/bots/{int(bot_id)}/count", lambda d: int(d["count"]),
                        params={"user_id": user_id} if user_id else None)

    @staticmethod
    def delete(bot_id: int, memory_id: str) -> _Request:
        return _Request("DELETE", f"{API}/bots/{int(bot_id)}/memories/{memory_id}", lambda d: int(d["deleted"]))

    @staticmethod
    def forget_user(bot_id: int, user_id: str) -> _Request:
        return _Request("POST", f"{API}/bots/{int(bot_id)}/forget", lambda d: int(d["deleted"]),
                        json={"user_id": str(user_id)})

    @staticmethod
    def drop_bot(bot_id: int) -> _Request:
        return _Request("DELETE", f"{API}/bots/{int(bot_id)}", lambda d: None)

    @staticmethod
    def similarities(text: str, candidates: list[str]) -> _Request:
        return _Request("POST", f"{API}/similarities", lambda d: [float(x) for x in d["scores"]],
                        json={"text": text, "candidates": list(candidates)})

    @staticmethod
    def documents(bot_id: int, query: str, k: int, threshold: float | None, quote: bool) -> _Request:
        return _Request("POST", f"{API}/bots/{int(bot_id)}/documents/search", _passages,
                        json={"query": query, "k": int(k), "threshold": threshold, "quote": bool(quote)})

    @staticmethod
    def sync_documents() -> _Request:
        return _Request("POST", f"{API}/documents/sync", lambda d: None, json={})

    @staticmethod
    def health() -> _Request:
        return _Request("GET", f"{API}/health", lambda d: dict(d))

    # Last in the class: a method named ``list`` would shadow the builtin in annotations below it.
    @staticmethod
    def list(bot_id: int, limit: int, offset: int, user_id: str | None) -> _Request:
        params = {"limit": int(limit), "offset": int(offset), **({"user_id": user_id} if user_id else {})}
        return _Request("GET", f"{API}/bots/{int(bot_id)}/memories", _page, params=params)


def _headers() -> dict[str, str]:
    from grobot.core.secret_keys import memory_service_token

    return {"Authorization": f"Bearer {memory_service_token()}"}


def _answer(status: int, data: Any, reason: str, request: _Request) -> Any:
    """The decoded answer (``data``: the JSON body, None when it was not JSON), or the domain
    error the service reported."""
    if status == 200 and data is not None:
        return request.decode(data)
    message = str((data.get("error") if isinstance(data, dict) else None) or reason)
    if status == 404:
        raise NotFoundError(message)
    if status in (400, 413, 422):
        raise ValidationError(message)
    if status == 401:
        raise MemoryUnavailable("memory service refused our token (was the secret key changed? restart the worker)")
    raise MemoryUnavailable(f"memory service failed: {message}")


class RemoteMemory:
    """The memory service seen from another process (async; one pooled connection set)."""

    def __init__(self, url: str, *, read_timeout: float = READ_TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self._read_timeout = read_timeout
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._headers: dict[str, str] | None = None

    def _client(self) -> aiohttp.ClientSession:
        """The pooled session of the running event loop (made on first use, inside the loop)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=8), trust_env=False)
            self._loop = loop
        return self._session

    async def _send(self, request: _Request, timeout: float | None = None) -> Any:
        if self._headers is None:
            self._headers = _headers()
        read = timeout if timeout is not None else self._read_timeout
        params = {k: str(v) for k, v in request.params.items()} if request.params else None
        try:
            async with self._client().request(
                    request.method, self.url + request.path, json=request.json, params=params, headers=self._headers,
                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT, sock_read=read)) as response:
                status, reason = response.status, response.reason or ""
                try:
                    data = await response.json(content_type=None)
                except ValueError:
                    data = None
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise MemoryUnavailable() from exc
        if status == 401:
            self._headers = None  # the secret key may have been rotated: derive the token again next time
        return _answer(status, data, reason, request)

    async def add(self, bot_id: int, texts: list[str], metadata: dict[str, Any] | None = None, *,
                  dedupe: bool = False) -> list[str]:
        return await self._send(_Calls.add(bot_id, texts, metadata, dedupe))

    async def query(self, bot_id: int, query: str, k: int = 5, *, max_distance: float | None = None,
                    user_id: str | None = None, timeout: float | None = None) -> list[Memory]:
        return await self._send(_Calls.query(bot_id, query, k, max_distance, user_id), timeout)

    async def count(self, bot_id: int, *, user_id: str | None = None) -> int:
        return await self._send(_Calls.count(bot_id, user_id))

    async def delete(self, bot_id: int, memory_id: str) -> int:
        return await self._send(_Calls.delete(bot_id, memory_id))

    async def forget_user(self, bot_id: int, user_id: str) -> int:
        return await self._send(_Calls.forget_user(bot_id, user_id))

    async def health(self) -> dict[str, Any]:
        return await self._send(_Calls.health(), 2.0)

    async def similarities(self, text: str, candidates: list[str]) -> list[float]:
        """Cosine similarity of ``text`` to each candidate (the Tool Router)."""
        return await self._send(_Calls.similarities(text, candidates))

    async def documents(self, bot_id: int, query: str, k: int = 3, *, threshold: float | None = None,
                        quote: bool = True) -> list[Passage] | None:
        """The bot's passages closest to ``query`` (None: it has no document indexed)."""
        return await self._send(_Calls.documents(bot_id, query, k, threshold, quote))

    # -- MemoryPort ---------------------------------------------------------------------
    async def remember(self, bot_id: int, texts: list[str], metadata: dict[str, Any]) -> None:
        await self.add(bot_id, texts, metadata, dedupe=True)

    async def search(self, bot_id: int, query: str, k: int = 5) -> list[str]:
        return [m.text for m in await self.query(bot_id, query, k, max_distance=RELEVANT_DISTANCE)]

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    # Last in the class: a method named ``list`` would shadow the builtin in annotations below it.
    async def list(self, bot_id: int, *, limit: int = 50, offset: int = 0,
                   user_id: str | None = None) -> tuple[list[Memory], int]:
        return await self._send(_Calls.list(bot_id, limit, offset, user_id))


class MemoryServiceClient:
    """The memory service, blocking (the services, the CLI, the web app)."""

    def __init__(self, url: str, *, read_timeout: float = READ_TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self._read_timeout = read_timeout

    def _send(self, request: _Request) -> Any:
        import httpx  # here: bot processes use RemoteMemory only, and never load httpx

        try:
            response = httpx.request(request.method, self.url + request.path, json=request.json, params=request.params,
                                     headers=_headers(), timeout=httpx.Timeout(self._read_timeout, connect=CONNECT_TIMEOUT),
                                     trust_env=False)
        except httpx.TransportError as exc:
            raise MemoryUnavailable() from exc
        try:
            data = response.json()
        except ValueError:
            data = None
        return _answer(response.status_code, data, response.reason_phrase, request)

    def add(self, bot_id: int, texts: list[str], metadata: dict[str, Any] | None = None, *,
            dedupe: bool = False) -> list[str]:
        return self._send(_Calls.add(bot_id, texts, metadata, dedupe))

    def query(self, bot_id: int, query: str, k: int = 5, *, max_distance: float | None = None,
              user_id: str | None = None) -> list[Memory]:
        return self._send(_Calls.query(bot_id, query, k, max_distance, user_id))

    def count(self, bot_id: int, *, user_id: str | None = None) -> int:
        return self._send(_Calls.count(bot_id, user_id))

    def delete(self, bot_id: int, memory_id: str) -> int:
        return self._send(_Calls.delete(bot_id, memory_id))

    def forget_user(self, bot_id: int, user_id: str) -> int:
        return self._send(_Calls.forget_user(bot_id, user_id))

    def drop_bot(self, bot_id: int) -> None:
        self._send(_Calls.drop_bot(bot_id))

    def documents(self, bot_id: int, query: str, k: int = 3, *, threshold: float | None = None,
                  quote: bool = False) -> list[Passage]:
        return self._send(_Calls.documents(bot_id, query, k, threshold, quote)) or []

    def sync_documents(self) -> None:
        self._send(_Calls.sync_documents())

    def health(self) -> dict[str, Any]:
        return self._send(_Calls.health())

    # Last in the class: a method named ``list`` would shadow the builtin in annotations below it.
    def list(self, bot_id: int, *, limit: int = 50, offset: int = 0,
             user_id: str | None = None) -> tuple[list[Memory], int]:
        return self._send(_Calls.list(bot_id, limit, offset, user_id))
