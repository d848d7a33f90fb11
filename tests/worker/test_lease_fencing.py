"""A bot process fences itself on PostgreSQL: it stops before its lease can pass to another
supervisor, and only then (a supervisor busy for a moment keeps its bots)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from bot_worker.bot_link import Answer
from bot_worker.exit_codes import EXIT_OK, EXIT_REPLACED
from bot_worker.fleet_bot import FleetBot, ProcessConfig
from bot_worker.remote_store import BotSettings, SettingsCache

SUPERVISOR = "host:1:abc"


class ScriptedLink:
    """A bot link whose answers a test scripts: an ``Answer``, an exception, or a delay then either."""

    steps_default: Any = (3600.0, None)  # after the script: never answers (a frozen supervisor)

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.calls = 0

    async def heartbeat(self, report: Any, *, timeout: float) -> Answer:
        self.calls += 1
        step = self.steps.pop(0) if self.steps else self.steps_default
        if isinstance(step, tuple):
            delay, step = step
            await asyncio.sleep(delay)  # the supervisor takes this long to answer
        if isinstance(step, BaseException):
            raise step
        return step

    async def close(self) -> None:
        pass


def _bot(link: ScriptedLink, version: str = "") -> FleetBot:
    bot = BotSettings(id=7, name="fenced", enabled=True, version=version, gateway_revision=1)
    config = ProcessConfig(heartbeat_seconds=1.0, supervisor_id=SUPERVISOR, fencing=True)
    # The bot's store keeps the settings it read last (a RemoteBotStore's cache).
    return FleetBot(bot, config, store=SimpleNamespace(settings=SettingsCache()), link=link)  # type: ignore[arg-type]


def _in(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def _lapse(client: FleetBot, expires: datetime) -> None:
    """The lease watch fired (margin: 3 s before ``expires``)."""
    assert client.lease.fence is not None
    client.lease.fence.expires = expires
    await client.lease.confirm_or_stop()


def test_a_supervisor_busy_for_a_moment_keeps_its_bot():
    async def scenario() -> None:
        renewed = _in(5.0)
        link = ScriptedLink((0.3, ConnectionError("the supervisor did not answer")),
                            (0.2, Answer(True, SUPERVISOR, renewed)))
        client = _bot(link)
        await _lapse(client, _in(2.9))
        assert not client.is_closed() and client.exit_code == EXIT_OK
        assert client.lease.fence is not None and client.lease.fence.expires == renewed and link.calls == 2
        await client.close()

    asyncio.run(scenario())


def test_a_frozen_supervisor_loses_its_bot_before_the_lease_runs_out():
    async def scenario() -> None:
        client = _bot(ScriptedLink())  # never answers
        expires = _in(2.9)
        await asyncio.wait_for(_lapse(client, expires), 5)
        assert client.is_closed() and client.exit_code == EXIT_REPLACED
        assert (expires - datetime.now(UTC)).total_seconds() > 1.0  # stopped with time to spare

    asyncio.run(scenario())


def test_a_supervisor_that_answers_but_cannot_renew_loses_its_bot_in_time():
    async def scenario() -> None:
        expires = _in(2.9)
        link = ScriptedLink(*[Answer(True, SUPERVISOR, expires)] * 100)  # the database is down: same lease
        client = _bot(link)
        started = time.monotonic()
        await asyncio.wait_for(_lapse(client, expires), 5)
        assert client.is_closed() and client.exit_code == EXIT_REPLACED
        assert time.monotonic() - started > 1.0 and link.calls > 1  # it asked until the last safe moment
        assert (expires - datetime.now(UTC)).total_seconds() > 1.0

    asyncio.run(scenario())


def test_a_lease_taken_over_stops_the_bot_at_once():
    async def scenario() -> None:
        client = _bot(ScriptedLink(Answer(True, "another:2:def", _in(15))))
        await asyncio.wait_for(_lapse(client, _in(2.9)), 5)
        assert client.is_closed() and client.exit_code == EXIT_REPLACED

    asyncio.run(scenario())


def test_settings_read_earlier_decide_to_ignore_only_while_the_supervisor_vouches_for_them():
    async def scenario() -> None:
        client = _bot(ScriptedLink())
        cache = client.store.settings  # type: ignore[attr-defined]
        bot = cache.settings
        assert cache.current() is bot  # read at the start: trusted for a second

        cache.read_at = time.monotonic() - 5
        assert cache.current() is None  # older, and nobody said they are current

        client.lease.config_version, client.lease.config_seen_at = "", time.monotonic()
        cache.settings = bot = BotSettings(id=7, name="fenced", enabled=True, version="v1", gateway_revision=1)
        client.lease.config_version = "v1"
        assert cache.current() is bot  # the supervisor's last poll saw the same version

        client.lease.config_version = "v2"
        assert cache.current() is None  # changed since: read again

        client.lease.config_version, client.lease.config_seen_at = "v1", time.monotonic() - 10
        assert cache.current() is None  # said too long ago (the link or the polls fail)

        client.lease.config_seen_at = time.monotonic()
        cache.read_at = time.monotonic() - 61
        assert cache.current() is None  # never longer than a minute
        await client.close()

        # The read at start vouches for itself until the first heartbeat answers (a fleet that
        # starts in a busy guild does not ask for every message meanwhile).
        started = _bot(ScriptedLink(), version="v0")
        cache = started.store.settings  # type: ignore[attr-defined]
        cache.read_at = time.monotonic() - 1.5
        assert cache.current() is cache.settings
        started.lease.config_version = "v1"  # the first answer: changed since the start
        assert cache.current() is None
        await started.close()

    asyncio.run(scenario())


def test_a_fenced_bot_ends_with_its_exit_code_while_closing_takes_a_moment():
    """Fencing closes the client from a task of its own; ending the answers at the end must
    not cancel that close (the process would end with a traceback, not EXIT_REPLACED)."""

    class Fenced(FleetBot):
        async def start(self, token: str, *, reconnect: bool = True) -> None:
            self.closed = asyncio.Event()
            self._spawn(self.lease.stop_fenced("the lease was lost"))
            await self.closed.wait()  # like discord.py's connect(): returns once closed

        async def close(self) -> None:
            await super().close()
            self.closed.set()

    async def scenario() -> None:
        client = Fenced(BotSettings(id=7, name="fenced", enabled=True, version=""), ProcessConfig(),
                        store=SimpleNamespace(), link=None)  # type: ignore[arg-type]
        closed = asyncio.Event()

        async def slow_close() -> None:  # the gateway close handshake takes a moment
            await asyncio.sleep(0.3)
            closed.set()

        client.http.close = slow_close  # type: ignore[method-assign]
        await asyncio.wait_for(client.run_until_closed("token"), 10)
        assert closed.is_set() and client.exit_code == EXIT_REPLACED

    asyncio.run(scenario())
