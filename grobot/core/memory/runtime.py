"""Where a host's memory comes from, and how a memory failure is logged.

- the supervisor owns its :class:`~grobot.core.memory.local.LocalMemory` (and serves it on its link);
- a bot process uses :class:`~grobot.core.memory.remote.RemoteMemory` over its own link connection
  (:mod:`bot_worker.bot_process`);
- the CLI asks the database for a live supervisor's link (:func:`discovered_memory`);
- anything else has no memory (:class:`~grobot.core.memory.NoopMemory`).

The host passes its memory to the chain (:class:`~grobot.core.agents.deps.ChainDeps`) and closes it.
"""

from __future__ import annotations

import logging

from grobot.core.memory import MemoryPort, NoopMemory

logger = logging.getLogger(__name__)


async def close_memory(memory: MemoryPort | None) -> None:
    """Close a memory client's connections (never fails)."""
    close = getattr(memory, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception as exc:  # closing must never fail a shutdown
            logger.debug("Closing the memory client failed: %s", type(exc).__name__)


def discovered_memory() -> MemoryPort:
    """A live supervisor's memory found in the database (the CLI's ``chat``), else no memory."""
    from grobot.core.db import session_scope
    from grobot.core.link_client import AdminLink, find_url
    from grobot.core.memory.remote import RemoteMemory, admin_call

    try:
        with session_scope(readonly=True) as session:
            url = find_url(session=session)
    except Exception as exc:
        logger.warning("Could not look up the supervisor's link: %s", type(exc).__name__)
        url = None
    return RemoteMemory(admin_call(AdminLink(url))) if url else NoopMemory()


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
