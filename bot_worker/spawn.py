"""Starting bot processes: ``exec`` (a fresh ``python -m bot_worker.bot_process --bot-id N``) or ``fork``.

``fork`` (the default) starts bots from a fork server that imported the bot code once
(multiprocessing's ``forkserver``): a bot starts in milliseconds instead of a second of
CPU spent on imports, and the bots share the imported code's memory pages. Each bot is
still its own OS process with its own gateway connection. ``GROBOT_SPAWN=exec`` starts
each bot with its own interpreter.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import subprocess
import sys
from typing import Any, Protocol

from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

# Imported once by the fork server; the last one freezes them for the garbage collector so
# that the forked bots keep sharing their memory pages. Exactly what a bot uses: every module
# preloaded here is in the RSS of every bot (a bot reaches the database through its
# supervisor, so no database layer). The rest is what a bot imported after the fork
# otherwise (measured with PYTHONPROFILEIMPORTTIME): preloaded, it is shared instead of copied.
PRELOAD = ["bot_worker.bot_process", "grobot.core.agents.chain", "grobot.core.logs", "grobot.core.tools.lifecycle",
           "grobot.core.tools.catalog", "grobot.core.memory.remote", "concurrent.futures.thread",
           "bot_worker.forkserver_ready"]


class BotHandle(Protocol):
    pid: int

    def poll(self) -> int | None: ...

    def send_signal(self, sig: int) -> None: ...

    def kill(self) -> None: ...

    def wait(self, timeout: float | None = None) -> int | None: ...


class ForkedBot:
    """A bot process forked by the fork server, seen through the ``Popen`` methods the supervisor uses."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self._process = process
        self.pid = process.pid or 0

    def poll(self) -> int | None:
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int | None:
        self._process.join(timeout)
        return self._process.exitcode


class Spawner:
    """Starts ``bot_worker.bot_process`` for a bot, by exec or from the fork server."""

    def __init__(self, mode: str | None = None) -> None:
        self.mode = (mode or get_settings().worker.spawn).lower()
        if self.mode not in ("fork", "exec"):
            raise ValueError("GROBOT_SPAWN must be 'fork' or 'exec'")
        self._context: Any = None

    def prepare(self, env: dict[str, str]) -> None:
        """Set the environment every bot gets (before the fork server starts, which copies it)."""
        os.environ.update(env)
        if self.mode == "fork":
            self._context = multiprocessing.get_context("forkserver")
            self._context.set_forkserver_preload(PRELOAD)

    def warm(self) -> None:
        """Start the fork server now (it imports the bot code: a second or two, off the event loop)."""
        if self.mode == "fork":
            from multiprocessing import forkserver

            forkserver.ensure_running()

    def start(self, bot_id: int, env: dict[str, str] | None = None) -> BotHandle:
        """Start bot ``bot_id``; ``env``: variables of this start only (e.g. its link token)."""
        if self.mode == "exec":
            cmd = [sys.executable, "-m", "bot_worker.bot_process", "--bot-id", str(bot_id)]
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True,
                                    env={**os.environ, **(env or {})})
        from bot_worker import bot_process

        process = self._context.Process(target=bot_process.forked_main, args=(bot_id, dict(env or {})),
                                        name=f"grobot-bot-{bot_id}", daemon=False)
        process.start()
        return ForkedBot(process)
