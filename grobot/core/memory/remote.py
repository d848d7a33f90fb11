"""Clients of the supervisor's memory: the ``memory`` group of its link (:mod:`grobot.core.memory.link_ops`).

``RemoteMemory`` (async) is the :class:`~grobot.core.memory.MemoryPort` of bot processes (over
their own link connection) and of the CLI's ``chat`` (over :class:`~grobot.core.link_client.AdminLink`
in a thread); ``MemoryAdmin`` is the blocking client of the services, the CLI and the web app. Both
build their requests with the same :class:`_Calls`, so each operation's shape lives in one place.
Neither imports chromadb, onnxruntime or numpy.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grobot.core.documents import Passage
from grobot.core.errors import MemoryUnavailable, NotFoundError, ValidationError
from grobot.core.link_scope import MEMORY
from grobot.core.memory import RELEVANT_DISTANCE, Memory

if TYPE_CHECKING:  # not at run time: bot processes import no database layer (the link's rows need one)
    from grobot.core.link_client import AdminLink

logger = logging.getLogger(__name__)

READ_TIMEOUT = 30.0  # the first add waits for the embedder and Chroma to load (seconds on a busy host)

# ``(operation, bot id or None, body) -> (status, answer)`` over a link; raises ConnectionError.
Call = Callable[[str, "int | None", dict[str, Any]], Awaitable[tuple[int, dict[str, Any]]]]


@dataclass(frozen=True)
class _Request:
    """One operation of the memory group and how to read its answer."""

    op: str
    bot_id: int | None
    decode: Callable[[Any], Any]
    body: dict[str, Any]


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
        return _Request("add", int(bot_id), lambda d: list(d["ids"]),
                        {"texts": list(texts), "metadata": metadata or {}, "dedupe": bool(dedupe)})

    @staticmethod
    def query(bot_id: int, query: str, k: int, max_distance: float | None, user_id: str | None) -> _Request:
        return _Request("search", int(bot_id), _memories,
                        {"query": query, "k": int(k), "max_distance": max_distance, "user_id": user_id})

    @staticmethod
    def count(bot_id: int, user_id: str | None) -> _Request:
        return _Request("count", int(bot_id), lambda d: int(d["count"]), {"user_id": user_id})

    @staticmethod
    def delete(bot_id: int, memory_id: str) -> _Request:
        return _Request("delete", int(bot_id), lambda d: int(d["deleted"]), {"memory_id": memory_id})

    @staticmethod
    def forget_user(bot_id: int, user_id: str) -> _Request:
        return _Request("forget", int(bot_id), lambda d: int(d["deleted"]), {"user_id": str(user_id)})

    @staticmethod
    def drop_bot(bot_id: int) -> _Request:
        return _Request("drop", int(bot_id), lambda d: None, {})

    @staticmethod
    def documents(bot_id: int, query: str, k: int, threshold: float | None, quote: bool) -> _Request:
        return _Request("documents", int(bot_id), _passages,
                        {"query": query, "k": int(k), "threshold": threshold, "quote": bool(quote)})

    @staticmethod
    def sync_documents() -> _Request:
        return _Request("sync_documents", None, lambda d: None, {})

    @staticmethod
    def health() -> _Request:
        return _Request("health", None, lambda d: dict(d), {})

    # Last in the class: a method named ``list`` would shadow the builtin in annotations below it.
    @staticmethod
    def list(bot_id: int, limit: int, offset: int, user_id: str | None) -> _Request:
        return _Request("list", int(bot_id), _page, {"limit": int(limit), "offset": int(offset), "user_id": user_id})


def _answer(status: int, data: dict[str, Any], request: _Request) -> Any:
    """The decoded answer, or the domain error the supervisor reported."""
    if status == 200 and isinstance(data.get("result"), dict):
        return request.decode(data["result"])
    message = str(data.get("error") or f"status {status}")
    if status == 404:
        raise NotFoundError(message)
    if status in (400, 413, 422):
        raise ValidationError(message)
    if status in (401, 403):
        raise MemoryUnavailable(f"the bot worker refused this process's token ({message}): was the secret key "
                                "changed? restart the worker")
    if status == 503:
        raise MemoryUnavailable(f"memory unavailable: {message}")
    raise MemoryUnavailable(f"memory service failed: {message}")


def admin_call(link: AdminLink) -> Call:
    """A :data:`Call` through ``link`` (blocking) in a thread: the CLI's ``chat``."""
    async def call(op: str, bot_id: int | None, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return await asyncio.to_thread(link.call, MEMORY, op, body, bot_id=bot_id)

    return call


class RemoteMemory:
    """The supervisor's memory seen from another process (async), through ``call``."""

    def __init__(self, call: Call, *, read_timeout: float = READ_TIMEOUT) -> None:
        self._call = call
        self._read_timeout = read_timeout

    async def _send(self, request: _Request, timeout: float | None = None) -> Any:
        try:
            async with asyncio.timeout(timeout if timeout is not None else self._read_timeout):
                status, data = await self._call(request.op, request.bot_id, request.body)
        except (TimeoutError, OSError) as exc:  # ConnectionError is an OSError
            raise MemoryUnavailable() from exc
        return _answer(status, data, request)

    async def add(self, bot_id: int, texts: list[str], metadata: dict[str, Any] | None = None, *,
                  dedupe: bool = False) -> list[str]:
        return await self._send(_Calls.add(bot_id, texts, metadata, dedupe))

    async def query(self, bot_id: int, query: str, k: int = 5, *, max_distance: float | None = None,
                    user_id: str | None = None, timeout: float | None = None) -> list[Memory]:
        return await self._send(_Calls.query(bot_id, query, k, max_distance, user_id), timeout)

    # -- MemoryPort ---------------------------------------------------------------------
    async def remember(self, bot_id: int, texts: list[str], metadata: dict[str, Any]) -> None:
        await self.add(bot_id, texts, metadata, dedupe=True)

    async def search(self, bot_id: int, query: str, k: int = 5) -> list[str]:
        return [m.text for m in await self.query(bot_id, query, k, max_distance=RELEVANT_DISTANCE)]


class MemoryAdmin:
    """The supervisor's memory, blocking (the services, the CLI, the web app), through ``link``."""

    def __init__(self, link: AdminLink) -> None:
        self.link = link

    def _send(self, request: _Request) -> Any:
        try:
            status, data = self.link.call(MEMORY, request.op, request.body, bot_id=request.bot_id)
        except ConnectionError as exc:
            raise MemoryUnavailable() from exc
        return _answer(status, data, request)

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
