"""The supervisor's embedded llama.cpp models: the servers the LLM settings ask for, advertised.

Every poll it restarts the servers that died and writes where each listens when that changed;
every ``SETTINGS_SECONDS`` it reads the settings, starts the server of each GGUF file an LLM
setting names (and the demo model when a category has no setting) and stops the ones no setting
names any more (a model first named in between is started when a message first asks for it).
Where each listens is written (``setting`` row ``llama_servers:<supervisor id>``)
for the web app and the CLI. Its own bot processes and Test Chat jobs get the URL with their
settings, resolved in this process (:func:`grobot.core.llm.embedded.set_local_directory`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from grobot.core.llm import embedded
from grobot.core.llm.embedded_servers import EmbeddedServers
from grobot.core.services import app_settings, embedded_models, llm_settings
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

Write = Callable[..., Any]

SETTINGS_SECONDS = 30.0


def _wanted(*, session: Any) -> tuple[dict[str, int], dict[str, Any]]:
    values = app_settings.get_values(("llamacpp_threads", "llamacpp_parallel"), session=session)
    return llm_settings.wanted_embedded_models(session=session), values


class EmbeddedModels:
    """Keeps the embedded servers in line with the settings (create and use it on the supervisor's loop)."""

    def __init__(self, supervisor_id: str, write: Write) -> None:
        self.supervisor_id = supervisor_id
        self._write = write  # runs fn(*args, session=...) in a transaction
        self.servers: EmbeddedServers | None = None
        self._advertised = -1
        self._read_at = 0.0  # monotonic time of the last read of the settings

    async def start(self) -> None:
        """Serve the models the settings name (loading runs in the background) and resolve them here."""
        if not embedded.runtime_installed():
            logger.info("llama.cpp (xllamacpp) is not installed: embedded models are unavailable")
        self.servers = EmbeddedServers(log_dir=get_settings().data_dir / "logs")
        embedded.set_local_directory(self.servers)
        await self.sync()

    async def sync(self) -> None:
        """Start, stop and restart servers to match the settings; advertise what changed."""
        if self.servers is None:
            return
        wanted, values = None, None
        if time.monotonic() - self._read_at >= SETTINGS_SECONDS:
            try:
                wanted, values = await asyncio.to_thread(self._write, _wanted)
                self._read_at = time.monotonic()
            except Exception as exc:
                logger.warning("Could not read the embedded models to serve (%s)", type(exc).__name__)
        if values is not None:
            self.servers.threads = int(values["llamacpp_threads"]) or embedded.default_threads()
            self.servers.parallel = int(values["llamacpp_parallel"])
        if wanted is not None:
            await self.servers.retain(wanted)
        await self.servers.check()
        if self.servers.version != self._advertised:
            version = self.servers.version
            try:
                await asyncio.to_thread(self._write, embedded_models.advertise, self.supervisor_id, self.servers.snapshot())
                self._advertised = version
            except Exception as exc:
                logger.warning("Could not record the embedded models' addresses (%s)", type(exc).__name__)

    async def stop(self) -> None:
        if self.servers is not None:
            await self.servers.stop_all()
            embedded.set_local_directory(None)
            self.servers = None
