"""The memory of this process, for the chain and the memory tools.

- the supervisor sets its :class:`~grobot.core.memory.local.LocalMemory` (Test Chat jobs);
- a bot process gets ``GROBOT_MEMORY_URL`` from its supervisor and uses
  :class:`~grobot.core.memory.remote.RemoteMemory`;
- anything else has no memory (:class:`~grobot.core.memory.NoopMemory`) unless it asks
  the database for a supervisor's service (:func:`discovered_memory`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from grobot.core.memory import MemoryPort, NoopMemory
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

URL_ENV = "GROBOT_MEMORY_URL"

_lock = threading.Lock()
_process_memory: Any = None
_from_env: tuple[str, Any] | None = None


def set_process_memory(memory: MemoryPort | None) -> None:
    """Make ``memory`` the memory of this process (None: back to the default)."""
    global _process_memory
    with _lock:
        _process_memory = memory


def process_memory() -> MemoryPort:
    """The memory of this process (see the module doc)."""
    global _from_env
    with _lock:
        if _process_memory is not None:
            return _process_memory
        url = get_settings().worker.memory_url
        if not url:
            return NoopMemory()
        if _from_env is None or _from_env[0] != url:
            from grobot.core.memory.remote import RemoteMemory

            _from_env = (url, RemoteMemory(url))
        return _from_env[1]


async def close_memory(memory: MemoryPort | None = None) -> None:
    """Close a memory client's connections (``None``: this process's own, from the environment)."""
    global _from_env
    if memory is None:
        with _lock:
            memory, _from_env = (_from_env[1] if _from_env else None), None
    close = getattr(memory, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception as exc:  # closing must never fail a shutdown
            logger.debug("Closing the memory client failed: %s", type(exc).__name__)


def memory_or_none() -> MemoryPort | None:
    """The memory of this process, or None when it has none (the memory tools are then left out)."""
    memory = process_memory()
    return None if isinstance(memory, NoopMemory) else memory


def discovered_memory() -> MemoryPort:
    """A live supervisor's memory service found in the database (the CLI's ``chat``), else no memory."""
    memory = memory_or_none()
    if memory is not None:
        return memory
    from grobot.core.db import session_scope
    from grobot.core.memory.registry import find_url
    from grobot.core.memory.remote import RemoteMemory

    try:
        with session_scope(readonly=True) as session:
            url = find_url(session=session)
    except Exception as exc:
        logger.warning("Could not look up the memory service: %s", type(exc).__name__)
        url = None
    return RemoteMemory(url) if url else NoopMemory()


_failing = False


def memory_failed(what: str, exc: BaseException) -> None:
    """Log a memory failure once (until memory works again): a dead service must not flood the logs."""
    global _failing
    if not _failing:
        _failing = True
        logger.warning("Memory unavailable while %s (%s): %s; answering without it until it is back", what,
                       type(exc).__name__, str(exc)[:200] or "no detail")
    else:
        logger.debug("Memory still unavailable (%s)", type(exc).__name__)


def memory_worked() -> None:
    global _failing
    if _failing:
        _failing = False
        logger.info("Memory available again")
