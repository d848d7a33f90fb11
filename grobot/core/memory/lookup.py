"""A message's memories, looked up for its answer within the memory time limit."""

from __future__ import annotations

import asyncio
from typing import Any

from grobot.core.memory import MemoryPort, NoopMemory
from grobot.core.memory.runtime import memory_failed, memory_worked
from grobot.core.settings import get_settings

MEMORIES_PER_MESSAGE = 5


def start_memory_lookup(msg: Any, memory: MemoryPort) -> asyncio.Task[list[str]] | None:
    """Start retrieving the memories of ``msg`` (an ``IncomingMessage``) now (None: this process has no memory).

    A store's :meth:`~grobot.core.agents.run_store.RunStore.prepare` starts it when it has read a
    message the bot may answer (:attr:`Prepared.memories`). Like the lookup in the chain, it
    never raises and stays within the memory time limit.
    """
    if isinstance(memory, NoopMemory) or not msg.content.strip():
        return None
    return asyncio.get_running_loop().create_task(message_memories(memory, msg))


async def message_memories(memory: MemoryPort, msg: Any) -> list[str]:
    """The memories of ``msg`` ([] when there are none or the lookup failed: an answer goes on without)."""
    if isinstance(memory, NoopMemory) or not msg.content.strip():
        return []
    try:
        found = list(await asyncio.wait_for(memory.search(msg.bot_id, msg.content, k=MEMORIES_PER_MESSAGE),
                                            get_settings().memory_budget_seconds))
    except Exception as exc:
        memory_failed("retrieving memories", exc)
        return []
    memory_worked()
    return found
