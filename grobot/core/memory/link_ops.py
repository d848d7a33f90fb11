"""The ``memory`` group of a supervisor's link: the bots' long-term memory and document search.

One store per supervisor (the embedder takes ~240 MiB and an embedded Chroma must not be opened
by many processes): the supervisor serves it to its bot processes, the CLI and the web app over
its link (:mod:`bot_worker.link_server`), which calls :func:`serve`. The store work runs on the
store's own threads (:class:`~grobot.core.memory.local.LocalMemory`), which load the embedder on
first use. The clients are in :mod:`grobot.core.memory.remote`.

Each operation takes a JSON object and answers one; who may call which is
:mod:`grobot.core.link_scope`'s (a bot: ``add`` and ``search`` of its own bot).
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from grobot.core.errors import NotFoundError, ValidationError, disk_problem
from grobot.core.memory import MAX_MEMORY_CHARS

if TYPE_CHECKING:
    from grobot.core.memory.local import LocalMemory

logger = logging.getLogger(__name__)

MAX_TEXTS = 100
MAX_K = 50
MAX_PAGE = 500
WITHOUT_BOT = frozenset({"health", "sync_documents"})  # the operations that name no bot


def failure(exc: Exception) -> str:
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


def _int(data: dict[str, Any], key: str, default: int, low: int, high: int | None = None) -> int:
    try:
        value = int(data.get(key, default) if data.get(key) is not None else default)
    except (TypeError, ValueError):
        raise ValidationError(f"{key}: expected a number") from None
    return max(low, value if high is None else min(value, high))


def _user(data: dict[str, Any]) -> str | None:
    return str(data["user_id"]) if data.get("user_id") else None


async def serve(memory: LocalMemory, op: str, bot_id: int | None, data: dict[str, Any], *,
                sync_documents: Callable[[], Awaitable[Any]] | None = None) -> dict[str, Any]:
    """Operation ``op`` on ``memory`` for bot ``bot_id``: its answer. Raises :class:`NotFoundError`
    (no such operation or memory) or :class:`ValidationError` (arguments it cannot use)."""
    handler = _OPS.get(op)
    if handler is None:
        raise NotFoundError(f"the memory group has no operation {op!r}")
    if op in WITHOUT_BOT:
        return await handler(memory, 0, data, sync_documents)
    if bot_id is None:
        raise ValidationError(f"the memory operation {op!r} needs a bot")
    return await handler(memory, int(bot_id), data, sync_documents)


async def _add(memory: LocalMemory, bot_id: int, data: dict[str, Any], _: Any) -> dict[str, Any]:
    texts = data.get("texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise ValidationError("texts: expected a non-empty list of strings")
    if len(texts) > MAX_TEXTS:
        raise ValidationError(f"at most {MAX_TEXTS} texts at once")
    if any(len(t) > MAX_MEMORY_CHARS for t in texts):
        raise ValidationError(f"a memory has at most {MAX_MEMORY_CHARS} characters")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValidationError("metadata: expected an object")
    return {"ids": await memory.add(bot_id, texts, metadata, dedupe=bool(data.get("dedupe")))}


async def _search(memory: LocalMemory, bot_id: int, data: dict[str, Any], _: Any) -> dict[str, Any]:
    max_distance = data.get("max_distance")
    found = await memory.query(bot_id, str(data.get("query") or ""), _int(data, "k", 5, 1, MAX_K),
                               max_distance=float(max_distance) if max_distance is not None else None,
                               user_id=_user(data))
    return {"memories": [m.as_dict() for m in found]}


async def _list(memory: LocalMemory, bot_id: int, data: dict[str, Any], _: Any) -> dict[str, Any]:
    user_id = _user(data)
    page = await memory.list(bot_id, limit=_int(data, "limit", 50, 0, MAX_PAGE), offset=_int(data, "offset", 0, 0),
                             user_id=user_id)
    return {"memories": [m.as_dict() for m in page], "total": await memory.count(bot_id, user_id=user_id)}


async def _count(memory: LocalMemory, bot_id: int, data: dict[str, Any], _: Any) -> dict[str, Any]:
    return {"count": await memory.count(bot_id, user_id=_user(data))}


async def _delete(memory: LocalMemory, bot_id: int, data: dict[str, Any], _: Any) -> dict[str, Any]:
    memory_id = str(data.get("memory_id") or "")
    if not memory_id or len(memory_id) > 64 or any(c not in "0123456789abcdef" for c in memory_id):
        raise NotFoundError(f"bot {bot_id} has no memory {memory_id[:64]}")
    if not await memory.delete(bot_id, [memory_id]):
        raise NotFoundError(f"bot {bot_id} has no memory {memory_id}")
    return {"deleted": 1}


async def _forget(memory: LocalMemory, bot_id: int, data: dict[str, Any], _: Any) -> dict[str, Any]:
    user_id = str(data.get("user_id") or "").strip()
    if not user_id:
        raise ValidationError("user_id: required")
    return {"deleted": await memory.forget_user(bot_id, user_id)}


async def _drop(memory: LocalMemory, bot_id: int, data: dict[str, Any], _: Any) -> dict[str, Any]:
    await memory.drop_bot(bot_id)
    return {"dropped": True}


async def _documents(memory: LocalMemory, bot_id: int, data: dict[str, Any], _: Any) -> dict[str, Any]:
    threshold = data.get("threshold")
    found = await memory.documents(bot_id, str(data.get("query") or "")[:MAX_MEMORY_CHARS], _int(data, "k", 3, 1, MAX_K),
                                   threshold=float(threshold) if threshold is not None else None,
                                   quote=bool(data.get("quote", False)))
    return {"indexed": found is not None, "passages": [p.as_dict() for p in found or []]}


async def _health(memory: LocalMemory, bot_id: int, data: dict[str, Any], _: Any) -> dict[str, Any]:
    return {"ok": True, "embedder_loaded": memory.embedder_loaded()}


async def _sync_documents(memory: LocalMemory, bot_id: int, data: dict[str, Any],
                          sync: Callable[[], Awaitable[Any]] | None) -> dict[str, Any]:
    """Start a sync of the document index and answer at once (the Files tab and the CLI follow the states)."""
    if sync is None:
        raise ValidationError("this worker does not index documents")
    import asyncio

    task = asyncio.ensure_future(sync())
    _syncs.add(task)
    task.add_done_callback(_syncs.discard)
    return {"started": True}


_syncs: set[Any] = set()
Handler = Callable[["LocalMemory", int, dict[str, Any], Any], Awaitable[dict[str, Any]]]
_OPS: dict[str, Handler] = {"add": _add, "search": _search, "list": _list, "count": _count, "delete": _delete,
                            "forget": _forget, "drop": _drop, "documents": _documents, "health": _health,
                            "sync_documents": _sync_documents}
