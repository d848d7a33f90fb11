"""A bot process's data, through its supervisor: the bot's settings, its runs, its files and notes.

A bot process imports no database layer and holds no database connection. What it reads
and writes goes to its supervisor over the bot link (:mod:`bot_worker.bot_link`), which
runs the same service functions as everything else (:mod:`bot_worker.local_store`):

- the bot's own operations (:class:`BotStore`): its settings at start, one message read
  (:meth:`RemoteBotStore.prepare`: one request, or none when the settings read last ignore it),
  the online and exit status, ``/reset``, its log records;
- the chain's (:class:`grobot.core.agents.run_store.RunStore`): a run's reads and writes, the
  Archivist's, and the built-in tools' files and notes.

A bot started by hand (no supervisor in its environment) uses
:class:`bot_worker.local_store.LocalBotStore` instead: the same operations on the database.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from bot_worker.bot_link import BotLinkClient
from bot_worker.link_data import BotSettings, MessageData, incoming_dict, lookups_from
from bot_worker.link_ops import OPS, Codec, Op
from grobot.core import link_wire
from grobot.core.agents.reply_rules import rules_decision
from grobot.core.agents.run_store import Prepared, RunStore, StoreUnavailable
from grobot.core.agents.types import IncomingMessage
from grobot.core.errors import GroBotError, NotFoundError, ValidationError, error_line

logger = logging.getLogger(__name__)

__all__ = ["BotSettings", "BotStore", "LinkLogWriter", "MessageData", "RemoteBotStore", "SettingsCache",
           "StoreUnavailable", "incoming_dict"]

STORE_TIMEOUT_SECONDS = 60.0  # a write may wait on a busy database (SQLite waits up to 30 s for a lock)
ERRORS: dict[str, type[GroBotError]] = {"not_found": NotFoundError, "validation": ValidationError}


class BotStore(RunStore, Protocol):
    """Everything a bot process reads and writes (besides Discord and its LLMs)."""

    async def settings_at_start(self, bot_id: int) -> BotSettings | None: ...

    async def mark_online(self, bot_id: int, *, pid: int, user_id: str, user_name: str, guild_count: int,
                          revision: int) -> bool: ...

    async def record_exit(self, bot_id: int, detail: str, *, pid: int, rejected_revision: int | None = None) -> None: ...

    async def forget(self, bot_id: int, key: str, user_id: str) -> int: ...

    async def save_roles(self, bot_id: int, guild_id: str, guild_name: str, roles: list[tuple[str, str, int]]) -> int:
        """The roles the bot sees in a guild now: ``(id, name, position)`` without @everyone."""

    async def output_takes_images(self, bot_id: int) -> bool: ...

    async def close(self) -> None: ...


class SettingsCache:
    """The bot's settings as read last, while they may decide to ignore a message.

    A read is trusted for ``TRUST_SECONDS``; longer while the supervisor's heartbeat answers say
    the settings have not changed since (``vouches``: :meth:`bot_worker.lease.LeaseKeeper.vouches_for`),
    up to ``MAX_SECONDS``. So in a guild with many bots, a message for one of them does not make
    every other bot ask its supervisor; a changed rule reaches them within a poll and a heartbeat
    period, and a message a bot may answer is always read fresh.
    """

    TRUST_SECONDS = 1.0
    MAX_SECONDS = 60.0

    def __init__(self) -> None:
        self.settings: BotSettings | None = None
        self.read_at = 0.0
        self.vouches: Callable[[str], bool] = lambda version: False

    def keep(self, settings: BotSettings | None) -> None:
        self.settings, self.read_at = settings, time.monotonic()

    def current(self) -> BotSettings | None:
        """The settings last read while they may be trusted (None: read them)."""
        age = time.monotonic() - self.read_at
        if self.settings is None or age >= self.MAX_SECONDS:
            return None
        if age < self.TRUST_SECONDS or self.vouches(self.settings.version):
            return self.settings
        return None  # the supervisor's word counts while it is recent (a failing link or poll ends the trust)


class RemoteBotStore:
    """:class:`BotStore` through the supervisor (``POST /v1/bots/{id}/store/{op}`` on the bot link).

    One method per operation of :data:`bot_worker.link_ops.OPS`, made from the table: each
    encodes its arguments, sends them and decodes the answer (:meth:`call`). The ``bot_id``
    those methods take is ignored: the link acts on this client's bot only.
    """

    def __init__(self, bot_id: int, link: BotLinkClient) -> None:
        self.bot_id = bot_id
        self.link = link
        self.settings = SettingsCache()

    async def prepare(self, msg: IncomingMessage, *, memory: Any = None) -> Prepared:
        """Read ``msg`` (:meth:`grobot.core.agents.run_store.RunStore.prepare`) with one request to the
        supervisor, which also looks its memories up and scores it against the bot's tools
        (``memory``, the bot's, is not asked); none when the settings read last ignore it."""
        cached = self.settings.current()
        if cached is not None and rules_decision(cached.rules, msg) is False:
            return Prepared(msg, decision=False, rules=cached.rules)
        try:
            data, rest = await self.read_message(self.bot_id, msg)  # type: ignore[attr-defined]
        except Exception as exc:
            why = error_line(exc) if isinstance(exc, (ConnectionError, GroBotError)) else type(exc).__name__
            logger.error("Cannot read the bot's settings: %s", why)
            return Prepared.failed(msg, why)
        self.settings.keep(data.settings)
        if data.settings is None:  # the bot was deleted
            return Prepared(msg, decision=False)
        prepared = Prepared(msg, decision=data.decision, rules=data.settings.rules, loaded=data.loaded,
                            links=data.links)
        if rest is not None:  # the memories and the scores follow, while the bot checks and gets ready
            prepared.memories, prepared.scores, prepared.documents = (
                _quiet(asyncio.ensure_future(_lookup(rest, i))) for i in (0, 1, 2))
        return prepared

    async def call(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """Operation ``name`` of the table with the arguments of its :class:`BotStore` method; for an
        answer in two parts, ``(first, awaitable of the rest)`` (None: no rest came)."""
        op = OPS.get(name)
        if op is None:
            raise ValueError(f"the bot link has no operation {name!r}")
        payload = op.payload(*args, **kwargs)
        if op.rest is None:
            return op.result.load(await self.request(op.name, payload), self.bot_id)
        status, data, rest = await self.link.call_in_parts(self.bot_id, f"store/{op.name}", payload,
                                                           timeout=STORE_TIMEOUT_SECONDS)
        first = op.result.load(_result(status, data), self.bot_id)
        return first, (asyncio.ensure_future(self._rest(op.rest, rest)) if rest is not None else None)

    async def _rest(self, codec: Codec, rest: asyncio.Future[tuple[int, dict[str, Any]]]) -> Any:
        status, data = await asyncio.wait_for(rest, STORE_TIMEOUT_SECONDS)
        return codec.load(_result(status, data), self.bot_id)

    async def request(self, name: str, payload: dict[str, Any]) -> Any:
        """POST ``payload`` to operation ``name``: the JSON result, or the error the supervisor answered."""
        status, data = await self.link.call(self.bot_id, f"store/{name}", payload, timeout=STORE_TIMEOUT_SECONDS)
        return _result(status, data)

    async def close(self) -> None:
        await self.link.close()


def _result(status: int, data: dict[str, Any]) -> Any:
    """The JSON result of an answer, or the error the supervisor answered."""
    if status == 200:
        return data.get("result")
    error = str(data.get("error") or f"the supervisor answered {status}")
    if status >= 500:
        raise StoreUnavailable(f"the supervisor could not do it: {error}")
    raise ERRORS.get(str(data.get("kind")), GroBotError)(error)


def _quiet(task: asyncio.Future[Any]) -> asyncio.Future[Any]:
    """``task``, whose failure is not reported when nobody waits for it (a message not answered)."""
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    return task


async def _lookup(rest: Awaitable[Any], index: int) -> Any:
    """The memories (0), the scores (1) or the document passages (2) of a message's read, from its second part."""
    return lookups_from(await rest)[index]


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
