"""A bot process's data, through its supervisor: the bot's settings, its runs, its files and notes.

A bot process imports no database layer and holds no database connection. What it reads
and writes goes to its supervisor over the bot link (:mod:`bot_worker.bot_link`), which
runs the same service functions as everything else (:mod:`bot_worker.local_store`):

- the bot's own operations (:class:`BotStore`): its settings at start, the settings and
  run data for one message, the online and exit status, ``/reset``, its log records;
- the chain's (:class:`grobot.core.agents.run_store.RunStore`): a run's reads and writes, the
  Archivist's, and the built-in tools' files and notes.

A bot started by hand (no supervisor in its environment) uses
:class:`bot_worker.local_store.LocalBotStore` instead: the same operations on the database.
"""

from __future__ import annotations

import inspect
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from bot_worker import link_wire
from bot_worker.bot_link import BotLinkClient
from bot_worker.link_data import BotSettings, MessageData, incoming_dict
from bot_worker.link_ops import OPS, Op
from grobot.core.agents.run_store import RunStore, StoreUnavailable
from grobot.core.agents.types import IncomingMessage
from grobot.core.errors import GroBotError, NotFoundError, ValidationError

logger = logging.getLogger(__name__)

__all__ = ["BotSettings", "BotStore", "LinkLogWriter", "MessageData", "RemoteBotStore", "StoreUnavailable",
           "incoming_dict"]

STORE_TIMEOUT_SECONDS = 60.0  # a write may wait on a busy database (SQLite waits up to 30 s for a lock)
ERRORS: dict[str, type[GroBotError]] = {"not_found": NotFoundError, "validation": ValidationError}


class BotStore(RunStore, Protocol):
    """Everything a bot process reads and writes (besides Discord and its LLMs)."""

    async def settings_at_start(self, bot_id: int) -> BotSettings | None: ...

    async def for_message(self, bot_id: int, msg: IncomingMessage, *, memories: bool = False,
                          route_texts: list[str] | None = None, scores_key: str | None = None) -> MessageData:
        """What ``msg`` reads (:class:`MessageData`); ``memories``: look its memories up too;
        ``route_texts``: score the message against these tool texts for the Tool Router, in the
        answer, or with ``scores_key`` later, for :meth:`tool_scores`."""

    async def tool_scores(self, bot_id: int, key: str) -> list[float] | None:
        """The scores a :meth:`for_message` with ``scores_key`` computes (None: none)."""

    async def mark_online(self, bot_id: int, *, pid: int, user_id: str, user_name: str, guild_count: int,
                          revision: int) -> bool: ...

    async def record_exit(self, bot_id: int, detail: str, *, pid: int, rejected_revision: int | None = None) -> None: ...

    async def forget(self, bot_id: int, key: str, user_id: str) -> int: ...

    async def save_roles(self, bot_id: int, guild_id: str, guild_name: str, roles: list[tuple[str, str, int]]) -> int:
        """The roles the bot sees in a guild now: ``(id, name, position)`` without @everyone."""

    async def output_takes_images(self, bot_id: int) -> bool: ...

    async def close(self) -> None: ...


class RemoteBotStore:
    """:class:`BotStore` through the supervisor (``POST /v1/bots/{id}/store/{op}`` on the bot link).

    One method per operation of :data:`bot_worker.link_ops.OPS`, made from the table: each
    encodes its arguments, sends them and decodes the answer (:meth:`call`). The ``bot_id``
    those methods take is ignored: the link acts on this client's bot only.
    """

    def __init__(self, bot_id: int, link: BotLinkClient) -> None:
        self.bot_id = bot_id
        self.link = link

    async def call(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """Operation ``name`` of the table with the arguments of its :class:`BotStore` method."""
        op = OPS.get(name)
        if op is None:
            raise ValueError(f"the bot link has no operation {name!r}")
        return op.result.load(await self.request(op.name, op.payload(*args, **kwargs)), self.bot_id)

    async def request(self, name: str, payload: dict[str, Any]) -> Any:
        """POST ``payload`` to operation ``name``: the JSON result, or the error the supervisor answered."""
        status, data = await self.link.call(self.bot_id, f"store/{name}", payload, timeout=STORE_TIMEOUT_SECONDS)
        if status == 200:
            return data.get("result")
        error = str(data.get("error") or f"the supervisor answered {status}")
        if status >= 500:
            raise StoreUnavailable(f"the supervisor could not do it: {error}")
        raise ERRORS.get(str(data.get("kind")), GroBotError)(error)

    async def close(self) -> None:
        await self.link.close()


def _remote_method(op: Op) -> Callable[..., Awaitable[Any]]:
    async def method(self: RemoteBotStore, *args: Any, **kwargs: Any) -> Any:
        return await self.call(op.name, *args, **kwargs)

    this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__name__, method.__qualname__ = op.method, f"RemoteBotStore.{op.method}"
    method.__doc__ = f"``{op.name}`` on the bot link (:data:`bot_worker.link_ops.OPS`)."
    method.__signature__ = op.signature.replace(parameters=[this, *op.signature.parameters.values()])  # type: ignore[attr-defined]
    return method


for _op in OPS.values():
    setattr(RemoteBotStore, _op.method, _remote_method(_op))


class LinkLogWriter:
    """Writes a batch of log records through the bot link (the log handler's writer thread calls it).

    A blocking socket of its own, in that thread: the records must reach the supervisor even
    while the bot's event loop is busy or already gone.
    """

    def __init__(self, bot_id: int, link: BotLinkClient, timeout: float = 10.0) -> None:
        self.bot_id = bot_id
        self.address = link_wire.address(link.url)
        self.token = link.token
        self.timeout = timeout
        self._socket: socket.socket | None = None
        self._sent = 0

    def __call__(self, rows: list[dict[str, Any]]) -> int:
        """Send ``rows``; returns how many the supervisor dropped (their bot was deleted). Raises
        ``ConnectionError`` (or ``OSError``) when they did not reach it."""
        body = OPS["logs"].payload(rows)
        try:
            if self._socket is None:
                self._socket = socket.create_connection(self.address, timeout=self.timeout)
                self._socket.sendall(link_wire.encode({"token": self.token}))
            self._sent += 1
            self._socket.sendall(link_wire.encode({"id": self._sent, "bot": self.bot_id, "path": "store/logs",
                                                   "body": body}))
            answer = link_wire.read_frame_blocking(self._socket)
        except (OSError, ValueError):
            self.close()
            raise
        status, data = int(answer.get("status") or 500), answer.get("body") or {}
        if status != 200:
            raise ConnectionError(f"the supervisor answered {status}: {data.get('error')}")
        return int(data.get("result") or 0)

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
