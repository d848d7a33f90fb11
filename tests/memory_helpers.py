"""A real supervisor link serving a real memory store (the supervisor's ``memory`` group), run in a
thread of the test process and advertised in the database."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bot_worker.bot_link import Answer, BotLinkClient
from bot_worker.link_server import BotLinkServer
from grobot.core.db import session_scope
from grobot.core.link_client import advertise
from grobot.core.memory.link_ops import serve
from grobot.core.memory.local import LocalMemory
from grobot.core.memory.remote import RemoteMemory
from grobot.core.memory.vector_store import ChromaMemory
from grobot.core.services import fleet


class ServiceThread:
    """A :class:`BotLinkServer` serving a :class:`LocalMemory` on its own event loop in a daemon thread."""

    def __init__(self, supervisor_id: str = "test-supervisor") -> None:
        self.supervisor_id = supervisor_id
        self.loop = asyncio.new_event_loop()
        self.local = LocalMemory(ChromaMemory())
        self.server = BotLinkServer(lambda report: Answer(ok=True), groups={"memory": self._serve})
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="memory-link")
        self.url = ""
        self._clients: list[BotLinkClient] = []
        self.sync_documents: Any = None  # the supervisor's document indexer (None: this worker indexes none)

    async def _serve(self, bot_id: int | None, op: str, payload: dict[str, Any]) -> Any:
        return await serve(self.local, op, bot_id, payload, sync_documents=self.sync_documents)

    def call(self, coro: Any, timeout: float = 30.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def bot_memory(self, bot_id: int) -> RemoteMemory:
        """Bot ``bot_id``'s memory as its process has it (its own link connection and token); use it on one loop."""
        client = BotLinkClient(self.url, self.server.token(bot_id))
        self._clients.append(client)
        return client.memory()

    async def close_clients(self) -> None:
        for client in self._clients:
            await client.close()
        self._clients.clear()

    def start(self, *, register: bool = True) -> ServiceThread:
        self.thread.start()
        self.url = self.call(self.server.start())
        if register:
            with session_scope() as session:
                fleet.register_supervisor(self.supervisor_id, hostname=socket.gethostname(), pid=os.getpid(),
                                          session=session)
            with session_scope() as session:
                advertise(self.supervisor_id, self.url, session=session)
        return self

    def stop(self) -> None:
        self.call(self.server.stop())
        self.local.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@contextmanager
def memory_service(register: bool = True) -> Iterator[ServiceThread]:
    service = ServiceThread().start(register=register)
    try:
        yield service
    finally:
        service.stop()
