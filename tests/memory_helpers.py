"""A real memory service (the supervisor's) run in a thread of the test process, registered in the database."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bot_worker.memory_service import MemoryService
from grobot.core.db import session_scope
from grobot.core.memory.local import LocalMemory
from grobot.core.memory.registry import advertise
from grobot.core.memory.vector_store import ChromaMemory
from grobot.core.services import fleet


class ServiceThread:
    """A :class:`MemoryService` on its own event loop in a daemon thread."""

    def __init__(self, supervisor_id: str = "test-supervisor") -> None:
        self.supervisor_id = supervisor_id
        self.loop = asyncio.new_event_loop()
        self.local = LocalMemory(ChromaMemory())
        self.service = MemoryService(self.local)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="memory-service")
        self.url = ""

    def call(self, coro: Any, timeout: float = 30.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self, *, register: bool = True) -> ServiceThread:
        self.thread.start()
        self.url = self.call(self.service.start())
        if register:
            with session_scope() as session:
                fleet.register_supervisor(self.supervisor_id, hostname=socket.gethostname(), pid=os.getpid(),
                                          session=session)
            with session_scope() as session:
                advertise(self.supervisor_id, self.url, session=session)
        return self

    def stop(self) -> None:
        self.call(self.service.stop())
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
