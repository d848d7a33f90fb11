"""The bot link: bot processes report their heartbeats to their supervisor over HTTP."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from bot_worker.bot_link import Answer, BotLinkClient, LeaseWatch, Report
from bot_worker.link_server import BotLinkServer
from bot_worker.supervisor import Supervisor
from bot_worker.supervisor_config import Slot, SupervisorConfig
from grobot.core.settings import get_settings

EXPIRES = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


async def _with_server(check):
    received: list[Report] = []

    def on_report(report: Report) -> Answer:
        received.append(report)
        return Answer(ok=report.pid == 42, holder="sup-1", expires=EXPIRES)

    server = BotLinkServer(on_report)
    await server.start()
    try:
        await check(server, received)
    finally:
        await server.stop()


def test_a_report_reaches_the_supervisor_and_its_answer_comes_back():
    async def check(server: BotLinkServer, received: list[Report]) -> None:
        env = server.env(7)
        client = BotLinkClient(env["GROBOT_SUPERVISOR_URL"], env["GROBOT_SUPERVISOR_TOKEN"])
        try:
            answer = await client.heartbeat(Report(bot_id=7, pid=42, guild_count=3, online=True), timeout=5)
            assert answer == Answer(ok=True, holder="sup-1", expires=EXPIRES)
            assert received == [Report(bot_id=7, pid=42, guild_count=3, online=True)]
            # Not the process the supervisor runs for the bot: told so (the bot then stops).
            assert not (await client.heartbeat(Report(bot_id=7, pid=43, guild_count=3, online=True), timeout=5)).ok
            # Each bot's token opens its own paths only.
            with pytest.raises(ConnectionError, match="401"):
                await client.heartbeat(Report(bot_id=8, pid=42, guild_count=3, online=True), timeout=5)
            assert len(received) == 2
        finally:
            await client.close()

    asyncio.run(_with_server(check))


def test_a_wrong_token_or_a_silent_supervisor_is_a_connection_error():
    async def check(server: BotLinkServer, received: list[Report]) -> None:
        client = BotLinkClient(server.url, "not-the-token")
        try:
            with pytest.raises(ConnectionError, match="401"):
                await client.heartbeat(Report(bot_id=7, pid=42, guild_count=0, online=True), timeout=5)
            assert received == []
        finally:
            await client.close()

    asyncio.run(_with_server(check))

    async def silent() -> None:
        hang = asyncio.Event()

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await hang.wait()  # a frozen supervisor: the connection is accepted, nothing answers

        server = await asyncio.start_server(accept, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = BotLinkClient(f"http://127.0.0.1:{port}", "token")
        try:
            with pytest.raises(ConnectionError, match="did not answer"):
                await client.heartbeat(Report(bot_id=7, pid=42, guild_count=0, online=True), timeout=0.5)
        finally:
            hang.set()
            await client.close()
            server.close()

    asyncio.run(silent())


def test_a_bot_started_by_hand_has_no_link(monkeypatch):
    monkeypatch.delenv("GROBOT_SUPERVISOR_URL", raising=False)
    monkeypatch.delenv("GROBOT_SUPERVISOR_TOKEN", raising=False)
    get_settings.cache_clear()
    assert BotLinkClient.from_env() is None  # it uses the database itself


def test_the_lease_watch_fires_its_margin_before_the_last_expiry_it_learned():
    async def scenario() -> None:
        fired: list[float] = []
        lapsed = asyncio.Event()

        def on_lapse() -> None:
            fired.append(time.monotonic())
            lapsed.set()

        watch = LeaseWatch(margin=0.2, on_lapse=on_lapse)
        started, now = time.monotonic(), datetime.now(UTC)
        watch.renewed(now + timedelta(seconds=0.4))
        watch.renewed(now + timedelta(seconds=0.8))  # renewed: the first deadline no longer counts
        await asyncio.wait_for(lapsed.wait(), 5)
        assert 0.55 <= fired[0] - started < 2.0 and len(fired) == 1

        lapsed.clear()
        watch = LeaseWatch(margin=0.2, on_lapse=on_lapse)
        watch.renewed(datetime.now(UTC) + timedelta(seconds=0.1))  # already inside the margin
        await asyncio.wait_for(lapsed.wait(), 1)

        lapsed.clear()
        watch = LeaseWatch(margin=0.2, on_lapse=on_lapse)
        watch.renewed(datetime.now(UTC) + timedelta(seconds=0.3))
        watch.cancel()  # the bot is closing
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(lapsed.wait(), 0.5)

        # An answer that comes late, with an earlier expiry than one already learned, changes nothing.
        watch = LeaseWatch(margin=0.2, on_lapse=on_lapse)
        later = datetime.now(UTC) + timedelta(seconds=30)
        watch.renewed(later)
        watch.renewed(datetime.now(UTC) + timedelta(seconds=0.1))
        assert watch.expires == later
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(lapsed.wait(), 0.3)
        watch.cancel()

    asyncio.run(scenario())


@dataclass
class _Process:
    pid: int


def test_the_supervisor_answers_the_heartbeats_of_its_own_processes_only(grobot_env, monkeypatch):
    for name in ("GROBOT_SUPERVISOR_ID", "GROBOT_HEARTBEAT_SECONDS"):
        monkeypatch.setenv(name, "")  # the supervisor sets them for its bots: restored after the test
    monkeypatch.setenv("GROBOT_SPAWN", "exec")
    get_settings.cache_clear()
    supervisor = Supervisor(config=SupervisorConfig())
    supervisor.slots[7] = Slot(7, proc=_Process(pid=4242))  # type: ignore[arg-type]
    supervisor.held, supervisor.lease_expires = {7}, EXPIRES
    link = supervisor.link  # the supervisor's end of the bot link reads its reconcile state

    assert link.on_report(Report(7, 4242, 2, True)) == Answer(ok=True, holder=supervisor.supervisor_id,
                                                                      expires=EXPIRES)
    assert link.on_report(Report(7, 4241, 2, True)) == Answer(ok=False)  # a replaced process: stop
    assert link.on_report(Report(8, 4242, 2, True)) == Answer(ok=False)  # not a bot it runs
    assert [(b.bot_id, b.pid, b.guild_count) for b in link.heartbeats.values()] == [(7, 4242, 2)]

    supervisor.held = set()  # the lease was lost: no holder, and the bot stops itself
    assert link.on_report(Report(7, 4242, 2, True)) == Answer(ok=True)

    supervisor.held, supervisor.config_versions = {7}, {7: "v1"}
    assert link.on_report(Report(7, 4242, 2, True)).config == "v1"  # its settings, as of the last poll
    supervisor.last_renewal -= 60  # the polls fail: it no longer vouches for them
    assert link.on_report(Report(7, 4242, 2, True)).config == ""

    assert list(link.take_heartbeats()) == [7]  # written at the poll
    link.on_report(Report(7, 4242, 2, True))
    supervisor.slots[7].proc = None  # its process exits before the poll: a late write must not show it online
    assert link.take_heartbeats() == {}
