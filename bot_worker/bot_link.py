"""The link between a supervisor and its bot processes: heartbeats and data on 127.0.0.1
(JSON frames on one TCP connection per bot process, :mod:`grobot.core.link_wire`).

A bot process reports to its supervisor every heartbeat period instead of writing its
heartbeat to the database itself. The supervisor writes the reports of all its bots in
the transaction of its next reconcile, and answers each report with what the bot needs
to fence itself: is it still the process registered for its bot, and until when does its
supervisor hold the bot's lease. So an idle bot needs no database connection: on
PostgreSQL a fleet of 100 bots no longer holds 100 connections (``max_connections`` is
100 by default), and the database takes one write per poll instead of one per bot.

The link also carries everything else a bot reads and writes (``store/{op}``, see
:mod:`bot_worker.link_ops`): bot processes import no database layer at all; and its long-term
memory (the ``memory`` group, :mod:`grobot.core.memory.link_ops`).

This module is the bot's end and what both ends share (the heartbeat and its answer, the
lease watch); the server, :class:`bot_worker.link_server.BotLinkServer`, is the supervisor's.
It listens on an ephemeral port. Each bot gets its own token, derived from a random secret
made at each start, and may only use its own bot's operations (:mod:`grobot.core.link_scope`); the address and
token reach the bot in its environment (``GROBOT_SUPERVISOR_URL`` and
``GROBOT_SUPERVISOR_TOKEN``). A bot started by hand, without them, uses the database
itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from grobot.core import link_wire
from grobot.core.link_scope import MEMORY
from grobot.core.memory import MemoryPort
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

URL_ENV = "GROBOT_SUPERVISOR_URL"
TOKEN_ENV = "GROBOT_SUPERVISOR_TOKEN"
MEMORY_TIMEOUT = 30.0  # the first add waits for the embedder and Chroma to load (seconds on a busy host)
LEASE_ENV = "GROBOT_LEASE_EXPIRES"  # the lease a bot starts with (ISO 8601), until its first answer


@dataclass(frozen=True)
class Report:
    """One heartbeat of a bot process."""

    bot_id: int
    pid: int
    guild_count: int
    online: bool


@dataclass(frozen=True)
class Answer:
    """The supervisor's answer: ``ok`` False means another process is registered for the bot (stop)."""

    ok: bool
    holder: str | None = None  # the supervisor holding the bot's lease (None: nobody, as far as it knows)
    expires: datetime | None = None  # the lease's expiry as last written by that supervisor
    config: str = ""  # the version of the bot's settings the supervisor last read ("": unknown)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "holder": self.holder, "expires": self.expires.isoformat() if self.expires else None,
                "config": self.config}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Answer:
        expires = data.get("expires")
        return cls(ok=bool(data.get("ok")), holder=data.get("holder") or None,
                   expires=datetime.fromisoformat(expires) if expires else None, config=str(data.get("config") or ""))


@dataclass(frozen=True)
class InParts:
    """An answer in two parts: ``first`` now, then what ``rest`` gives (see :mod:`grobot.core.link_wire`)."""

    first: Any
    rest: Awaitable[Any]


@dataclass(frozen=True)
class Stream:
    """An answer that is a stream: each item as it comes, then the end (see :mod:`grobot.core.link_client`)."""

    items: AsyncIterator[Any]


class StoreError(Exception):
    """An operation of the store failed in a way the bot should hear about: ``kind`` names it."""

    def __init__(self, kind: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.kind, self.status = kind, status


def initial_lease() -> datetime | None:
    """The lease expiry the supervisor gave this bot process at its start (None: unknown)."""
    value = get_settings().worker.lease_expires
    try:
        return datetime.fromisoformat(value) if value else None
    except ValueError:
        return None


def seconds_until(moment: datetime) -> float:
    """Seconds from now to ``moment`` (aware; negative once it has passed)."""
    return (moment - datetime.now(UTC)).total_seconds()


class BotLinkClient:
    """The bot's end: one connection to its supervisor (:mod:`grobot.core.link_wire`), opened on
    first use and again after it broke; calls may overlap. Use it on one event loop."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token
        self._connection: _Connection | None = None
        self._opening: asyncio.Lock | None = None
        self._closed = False

    @classmethod
    def from_env(cls) -> BotLinkClient | None:
        worker = get_settings().worker
        url, token = worker.supervisor_url, worker.supervisor_token
        return cls(url, token) if url and token else None

    async def call(self, bot_id: int, path: str, body: dict[str, Any], *, timeout: float,
                   group: str = "bot") -> tuple[int, dict[str, Any]]:
        """Send ``body`` to ``path`` (``heartbeat``, ``store/{op}``; a memory operation with ``group``
        ``memory``) of bot ``bot_id``: ``(status, answer)``; raises ``ConnectionError`` when the
        supervisor does not answer within ``timeout`` seconds, or refuses the token (401) or the request (403: outside its scope)."""
        status, data, rest = await self.call_in_parts(bot_id, path, body, timeout=timeout, group=group)
        if rest is not None:
            rest.cancel()  # the caller wants the first part only
        return status, data

    async def call_in_parts(self, bot_id: int, path: str, body: dict[str, Any], *, timeout: float,
                            group: str = "bot") -> tuple[int, dict[str, Any], asyncio.Future[tuple[int, dict[str, Any]]] | None]:
        """:meth:`call`, and the second part of an answer that comes in two (None: it came in one). The
        second part fails with ``ConnectionError`` when the link breaks before it comes."""
        if self._closed:
            raise ConnectionError("the bot link is closed")
        try:
            async with asyncio.timeout(timeout):
                connection = await self._open()
                status, data, rest = await connection.request(bot_id, path, body, group)
        except link_wire.FrameError as exc:  # too large to send: no use trying again
            raise ConnectionError(f"the bot link cannot carry it: {exc}") from exc
        except (TimeoutError, OSError, ValueError, asyncio.IncompleteReadError) as exc:
            raise ConnectionError(f"the supervisor did not answer ({type(exc).__name__})") from exc
        if status in (401, 403):  # a wrong token, or one whose scope does not cover the request
            raise ConnectionError(f"the supervisor answered {status}: {data.get('error')}")
        return status, data, rest

    async def _open(self) -> _Connection:
        if self._connection is not None and self._connection.alive:
            return self._connection
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:  # calls that start together share one new connection
            if self._connection is None or not self._connection.alive:
                if self._connection is not None:
                    await self._connection.close()
                self._connection = await _Connection.open(self.url, self.token)
            return self._connection

    def memory(self) -> MemoryPort:
        """The bot's long-term memory: the ``memory`` group of this link (its own bot only)."""
        from grobot.core.memory.remote import RemoteMemory

        async def call(op: str, bot_id: int | None, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            return await self.call(int(bot_id or 0), op, body, timeout=MEMORY_TIMEOUT, group=MEMORY)

        return RemoteMemory(call)

    async def heartbeat(self, report: Report, *, timeout: float) -> Answer:
        """Report; raises ``ConnectionError`` when the supervisor does not answer within ``timeout`` seconds."""
        body = {"pid": report.pid, "guild_count": report.guild_count, "online": report.online}
        status, data = await self.call(report.bot_id, "heartbeat", body, timeout=timeout)
        if status != 200:
            raise ConnectionError(f"the supervisor answered {status}: {data.get('error')}")
        return Answer.from_dict(data)

    async def close(self) -> None:
        self._closed = True
        if self._connection is not None:
            await self._connection.close()
            self._connection = None


Part = tuple[int, dict[str, Any]]


class _Connection:
    """One open connection of a :class:`BotLinkClient`: its requests waiting for their answers,
    which a task reads off the connection as they come (and the second parts announced)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.waiting: dict[int, asyncio.Future[tuple[int, dict[str, Any], asyncio.Future[Part] | None]]] = {}
        self.rests: dict[int, asyncio.Future[Part]] = {}
        self.next_id = 0
        self.connected = True
        self.reading = asyncio.create_task(self._read_answers())

    @classmethod
    async def open(cls, url: str, token: str) -> _Connection:
        host, port = link_wire.address(url)
        reader, writer = await asyncio.open_connection(host, port, limit=link_wire.MAX_FRAME)
        writer.write(link_wire.encode({"token": token}))
        return cls(reader, writer)

    async def request(self, bot_id: int, path: str, body: dict[str, Any], group: str = "bot"
                      ) -> tuple[int, dict[str, Any], asyncio.Future[Part] | None]:
        self.next_id += 1
        number = self.next_id
        answer = asyncio.get_running_loop().create_future()
        self.waiting[number] = answer
        try:
            frame = {"id": number, "bot": bot_id, "path": path, "body": body}
            if group != "bot":  # the bot's own operations name no group (the wire's default)
                frame["group"] = group
            self.writer.write(link_wire.encode(frame))
            await self.writer.drain()
            return await answer
        finally:
            self.waiting.pop(number, None)  # answered, or given up (a late answer is dropped)

    async def _read_answers(self) -> None:
        failure: Exception = ConnectionError("the supervisor closed the link")
        try:
            while True:
                frame = await link_wire.read_frame(self.reader)
                number, body = int(frame.get("id") or 0), frame.get("body")
                part = (int(frame.get("status") or 500), body if isinstance(body, dict) else {})
                if frame.get("part") == 2:
                    rest = self.rests.pop(number, None)
                    if rest is not None and not rest.done():
                        rest.set_result(part)
                    continue
                waiter = self.waiting.pop(number, None)
                if waiter is not None and not waiter.done():
                    rest = None
                    if frame.get("more"):
                        rest = self.rests[number] = asyncio.get_running_loop().create_future()
                        rest.add_done_callback(lambda _, n=number: self.rests.pop(n, None))  # type: ignore[misc]
                    waiter.set_result((*part, rest))
        except asyncio.CancelledError:
            raise
        except asyncio.IncompleteReadError:
            pass
        except (OSError, ValueError) as exc:
            failure = ConnectionError(f"the bot link broke: {exc}")
            logger.warning("The bot link broke: %s", exc)
        finally:
            self.connected = False
            pending: list[asyncio.Future[Any]] = [*self.waiting.values(), *self.rests.values()]
            for waiter in pending:
                if not waiter.done():
                    waiter.set_exception(failure)
            self.waiting.clear()
            self.rests.clear()

    @property
    def alive(self) -> bool:
        """Open, and not closed by the supervisor (even if the reading task has not seen it yet)."""
        return self.connected and not self.reader.at_eof()

    async def close(self) -> None:
        self.connected = False
        self.reading.cancel()
        self.writer.close()
        with contextlib.suppress(OSError, asyncio.CancelledError):
            await self.writer.wait_closed()
        with contextlib.suppress(asyncio.CancelledError):
            await self.reading


class LeaseWatch:
    """Fencing of a bot process on PostgreSQL: ``on_lapse`` runs ``margin`` seconds before the
    last lease expiry the bot learned, unless it learns a later one first.

    The deadline does not depend on when a heartbeat answer comes back (or does not: a
    frozen supervisor still accepts connections and answers nothing), so the bot stops
    in time whatever happens to its requests.
    """

    def __init__(self, *, margin: float, on_lapse: Callable[[], None]) -> None:
        self.margin = margin
        self._on_lapse = on_lapse
        self._timer: asyncio.TimerHandle | None = None
        self.expires: datetime | None = None

    def renewed(self, expires: datetime) -> None:
        """The lease runs until ``expires`` (aware): move the deadline (call on the event loop).

        An answer that arrives late with an earlier expiry than one already learned is
        ignored: a supervisor's leases only ever get longer.
        """
        if self.expires is not None and expires <= self.expires and self._timer is not None:
            return
        self.expires = expires
        self.cancel()
        delay = seconds_until(expires) - self.margin
        self._timer = asyncio.get_running_loop().call_later(max(0.0, delay), self._on_lapse)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
