"""The link between a supervisor and its bot processes: heartbeats over HTTP on 127.0.0.1.

A bot process reports to its supervisor every heartbeat period instead of writing its
heartbeat to the database itself. The supervisor writes the reports of all its bots in
the transaction of its next reconcile, and answers each report with what the bot needs
to fence itself: is it still the process registered for its bot, and until when does its
supervisor hold the bot's lease. So an idle bot needs no database connection: on
PostgreSQL a fleet of 100 bots no longer holds 100 connections (``max_connections`` is
100 by default), and the database takes one write per poll instead of one per bot.

The server listens on an ephemeral port with a random bearer token made at each start;
both reach the bots in their environment (``GROBOT_SUPERVISOR_URL`` and
``GROBOT_SUPERVISOR_TOKEN``). A bot started by hand, without them, writes its heartbeat
to the database as before.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

import aiohttp
from aiohttp import web

from bot_worker.local_http import LocalServer, bearer_token

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
    def from_dict(cls, data: dict[str, Any]) -> "Answer":
        expires = data.get("expires")
        return cls(ok=bool(data.get("ok")), holder=data.get("holder") or None,
                   expires=datetime.fromisoformat(expires) if expires else None, config=str(data.get("config") or ""))


class BotLinkServer(LocalServer):
    """The supervisor's end: ``on_report`` answers each bot's heartbeat (called on the event loop)."""

    name = "Bot link"

    def __init__(self, on_report: Callable[[Report], Answer], *, host: str = "127.0.0.1") -> None:
        super().__init__(host)
        self._on_report = on_report
        self.token = secrets.token_urlsafe(32)

    async def start(self) -> str:
        """Listen on an ephemeral port; returns the base URL."""
        app = web.Application(client_max_size=16 * 1024)
        app.add_routes([web.post("/v1/bots/{bot_id:\\d+}/heartbeat", self._heartbeat)])
        return await self.serve(app)

    def env(self) -> dict[str, str]:
        """What a bot process needs to reach this server (blank when it did not start)."""
        return {URL_ENV: self.url, TOKEN_ENV: self.token if self.url else ""}

    async def _heartbeat(self, request: web.Request) -> web.Response:
        if not hmac.compare_digest(bearer_token(request), self.token):
            return web.json_response({"error": "missing or wrong bearer token"}, status=401)
        try:
            data = await request.json()
            report = Report(bot_id=int(request.match_info["bot_id"]), pid=int(data["pid"]),
                            guild_count=int(data.get("guild_count") or 0), online=bool(data.get("online")))
        except (ValueError, TypeError, KeyError) as exc:
            return web.json_response({"error": f"bad heartbeat: {exc}"}, status=400)
        return web.json_response(self._on_report(report).as_dict())


def initial_lease() -> datetime | None:
    """The lease expiry the supervisor gave this bot process at its start (None: unknown)."""
    value = os.environ.get(LEASE_ENV, "").strip()
    try:
        return datetime.fromisoformat(value) if value else None
    except ValueError:
        return None


def seconds_until(moment: datetime) -> float:
    """Seconds from now to ``moment`` (aware; negative once it has passed)."""
    return (moment - datetime.now(timezone.utc)).total_seconds()


class BotLinkClient:
    """The bot's end (aiohttp, which discord.py loads anyway); use it on one event loop."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    @classmethod
    def from_env(cls) -> "BotLinkClient | None":
        url, token = os.environ.get(URL_ENV, "").strip(), os.environ.get(TOKEN_ENV, "").strip()
        return cls(url, token) if url and token else None

    async def heartbeat(self, report: Report, *, timeout: float) -> Answer:
        """Report; raises ``ConnectionError`` when the supervisor does not answer within ``timeout`` seconds."""
        if self._closed:
            raise ConnectionError("the bot link is closed")
        if self._session is None:
            self._session = aiohttp.ClientSession(trust_env=False)
        body = {"pid": report.pid, "guild_count": report.guild_count, "online": report.online}
        try:
            async with self._session.post(f"{self.url}/v1/bots/{report.bot_id}/heartbeat", json=body,
                                          headers=self._headers,
                                          timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                status, data = response.status, await response.json()
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError) as exc:
            raise ConnectionError(f"the supervisor did not answer ({type(exc).__name__})") from exc
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
