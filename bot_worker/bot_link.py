"""The link between a supervisor and its bot processes: heartbeats and data over HTTP on 127.0.0.1.

A bot process reports to its supervisor every heartbeat period instead of writing its
heartbeat to the database itself. The supervisor writes the reports of all its bots in
the transaction of its next reconcile, and answers each report with what the bot needs
to fence itself: is it still the process registered for its bot, and until when does its
supervisor hold the bot's lease. So an idle bot needs no database connection: on
PostgreSQL a fleet of 100 bots no longer holds 100 connections (``max_connections`` is
100 by default), and the database takes one write per poll instead of one per bot.

The link also carries everything else a bot reads and writes (``/store/{op}``, see
:mod:`bot_worker.link_ops`): bot processes import no database layer at all.

This module is the bot's end and what both ends share (the heartbeat and its answer, the
lease watch); the server, :class:`bot_worker.link_server.BotLinkServer`, is the supervisor's
(a bot process does not load aiohttp's server). It listens on an ephemeral port. Each bot gets its own bearer token, derived
from a random secret made at each start, and may only use its own paths; the address and
token reach the bot in its environment (``GROBOT_SUPERVISOR_URL`` and
``GROBOT_SUPERVISOR_TOKEN``). A bot started by hand, without them, uses the database
itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
import orjson

from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

URL_ENV = "GROBOT_SUPERVISOR_URL"
TOKEN_ENV = "GROBOT_SUPERVISOR_TOKEN"
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


class StoreError(Exception):
    """An operation of the store failed in a way the bot should hear about: ``kind`` names it."""

    def __init__(self, kind: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.kind, self.status = kind, status


def _dumps(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


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
    """The bot's end (aiohttp, which discord.py loads anyway); use it on one event loop."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"}
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    @classmethod
    def from_env(cls) -> BotLinkClient | None:
        worker = get_settings().worker
        url, token = worker.supervisor_url, worker.supervisor_token
        return cls(url, token) if url and token else None

    async def call(self, bot_id: int, path: str, body: dict[str, Any], *, timeout: float) -> tuple[int, dict[str, Any]]:
        """POST ``body`` to ``/v1/bots/{bot_id}/{path}``: ``(status, JSON answer)``; raises
        ``ConnectionError`` when the supervisor does not answer within ``timeout`` seconds."""
        if self._closed:
            raise ConnectionError("the bot link is closed")
        if self._session is None:
            self._session = aiohttp.ClientSession(trust_env=False, json_serialize=_dumps)
        try:
            async with self._session.post(f"{self.url}/v1/bots/{bot_id}/{path}", json=body, headers=self.headers,
                                          timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                status, data = response.status, await response.json(loads=orjson.loads)
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            raise ConnectionError(f"the supervisor did not answer ({type(exc).__name__})") from exc
        if status == 401:
            raise ConnectionError(f"the supervisor answered 401: {data.get('error')}")
        return status, data if isinstance(data, dict) else {}

    async def heartbeat(self, report: Report, *, timeout: float) -> Answer:
        """Report; raises ``ConnectionError`` when the supervisor does not answer within ``timeout`` seconds."""
        body = {"pid": report.pid, "guild_count": report.guild_count, "online": report.online}
        status, data = await self.call(report.bot_id, "heartbeat", body, timeout=timeout)
        if status != 200:
            raise ConnectionError(f"the supervisor answered {status}: {data.get('error')}")
        return Answer.from_dict(data)

    async def close(self) -> None:
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None


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
