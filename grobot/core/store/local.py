"""The chain on this process's database: what the CLI, scripts, benchmarks and tests answer with when
no host passes its own dependencies."""

from __future__ import annotations

from grobot.core.agents import chain
from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.run_store import Prepared
from grobot.core.agents.types import ChainResult, EventSink, IncomingMessage
from grobot.core.memory import MemoryPort, NoopMemory
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.base import ToolCatalog


def local_deps(memory: MemoryPort | None = None) -> ChainDeps:
    """Dependencies on this process's database (the CLI, scripts and tests)."""
    return ChainDeps(store=DatabaseStore(), memory=memory or NoopMemory())


async def run_chain(
    message: Prepared | IncomingMessage,
    deps: ChainDeps | None = None,
    *,
    sink: EventSink | None = None,
    tools: ToolCatalog | None = None,
) -> ChainResult:
    """:func:`grobot.core.agents.chain.run_chain` with ``deps`` (None: this process's database, no
    memory, MCP sessions of this call only, closed at its end)."""
    if deps is not None:
        return await chain.run_chain(message, deps, sink=sink, tools=tools)
    deps = local_deps()
    try:
        return await chain.run_chain(message, deps, sink=sink, tools=tools)
    finally:
        await deps.aclose()
