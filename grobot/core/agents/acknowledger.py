"""Acknowledger: when tool work takes long, a short message tells the user the bot is on it."""

from __future__ import annotations

import asyncio
import logging
import random

from grobot.core.agents import prompts
from grobot.core.agents.run import Run
from grobot.core.agents.types import EventKind

logger = logging.getLogger(__name__)


def _what(names: list[str]) -> str:
    readable = [n.split("__")[-1].replace("_", " ") for n in names]
    if not readable:
        return "working"
    if len(readable) == 1:
        return f"using {readable[0]}"
    return f"using {', '.join(readable[:-1])} and {readable[-1]}"


class Acknowledger:
    """Emits one ``progress`` acknowledgement per run once tool work passes the threshold."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.sent = False
        self._handle: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self, names: list[str]) -> None:
        if self.sent or self.run.acknowledge_after <= 0 or self._handle is not None:
            return
        loop = asyncio.get_running_loop()
        self._handle = loop.call_later(self.run.acknowledge_after, self._fire, names)

    def _fire(self, names: list[str]) -> None:
        self._handle = None
        if self.sent:
            return
        self.sent = True
        text = random.choice(prompts.ACKNOWLEDGEMENTS).format(what=_what(names))
        self._task = asyncio.ensure_future(self.run.recorder.emit(EventKind.PROGRESS, {"acknowledgement": text}))

    async def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._task is not None:
            await self._task
            self._task = None
