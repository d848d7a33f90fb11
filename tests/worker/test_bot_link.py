"""The bot link: bot processes report their heartbeats to their supervisor, and reach their data, on 127.0.0.1."""

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
from grobot.core import link_wire
from grobot.core.settings import get_settings
from tests.helpers import async_wait_for

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
            # Each bot's token opens its own bot's operations only.
            with pytest.raises(ConnectionError, match="403: this token is for another bot"):
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


def test_calls_that_overlap_share_one_connection_and_each_gets_its_own_answer():
    """A bot's reads and writes overlap (an answer streams while its heartbeat is due): each
    waits for its own answer, on the one connection its process keeps open."""

    async def store(bot_id: int, op: str, payload: dict) -> object:
        await asyncio.sleep(payload["wait"])  # answers come back in another order than asked
        return {"op": op, "n": payload["n"]}

    async def check() -> None:
        server = BotLinkServer(lambda report: Answer(ok=True), store=store)
        await server.start()
        env = server.env(7)
        client = BotLinkClient(env["GROBOT_SUPERVISOR_URL"], env["GROBOT_SUPERVISOR_TOKEN"])
        try:
            answers = await asyncio.gather(*(
                client.call(7, f"store/op{n}", {"n": n, "wait": (20 - n) / 1000}, timeout=5) for n in range(20)))
            assert answers == [(200, {"result": {"op": f"op{n}", "n": n}}) for n in range(20)]
            assert len(server._connections) == 1
        finally:
            await client.close()
            await server.stop()

    asyncio.run(check())


def test_a_call_given_up_leaves_the_link_working_and_a_broken_connection_is_opened_again():
    async def check() -> None:
        slow_done = asyncio.Event()

        async def store(bot_id: int, op: str, payload: dict) -> object:
            if op == "slow":
                await asyncio.sleep(0.5)
                slow_done.set()
            return op

        server = BotLinkServer(lambda report: Answer(ok=True), store=store)
        await server.start()
        env = server.env(7)
        client = BotLinkClient(env["GROBOT_SUPERVISOR_URL"], env["GROBOT_SUPERVISOR_TOKEN"])
        try:
            with pytest.raises(ConnectionError, match="did not answer"):
                await client.call(7, "store/slow", {}, timeout=0.1)
            assert await client.call(7, "store/quick", {}, timeout=5) == (200, {"result": "quick"})
            await asyncio.wait_for(slow_done.wait(), 5)  # its late answer is dropped, not taken for another's
            assert await client.call(7, "store/after", {}, timeout=5) == (200, {"result": "after"})

            # Something the link cannot carry is refused before it is sent, in plain words.
            with pytest.raises(ConnectionError, match="cannot carry it: a frame of .* over the link's"):
                await client.call(7, "store/big", {"text": "x" * (link_wire.MAX_FRAME + 1)}, timeout=5)

            # The supervisor drops the connection (it restarted its link): the next call opens a new one.
            for task in list(server._connections):
                task.cancel()
            await async_wait_for(lambda: not server._connections and not client._connection.alive, 5,
                                 message="the dropped connection noticed on both ends")
            assert await client.call(7, "store/again", {}, timeout=5) == (200, {"result": "again"})
        finally:
            await client.close()
            await server.stop()

    asyncio.run(check())


def test_a_connection_that_sends_garbage_is_closed_and_others_are_served():
    async def check() -> None:
        server = BotLinkServer(lambda report: Answer(ok=True), store=lambda bot_id, op, payload: asyncio.sleep(0, op))
        await server.start()
        host, port = link_wire.address(server.url)
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(link_wire.encode({"token": server.token(7)}) + link_wire.HEADER.pack(9) + b"not json!")
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed, without an answer
        writer.close()
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(link_wire.HEADER.pack(link_wire.MAX_FRAME + 1))  # announces more than a frame may hold
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        env = server.env(7)
        client = BotLinkClient(env["GROBOT_SUPERVISOR_URL"], env["GROBOT_SUPERVISOR_TOKEN"])
        try:
            assert await client.call(7, "store/fine", {}, timeout=5) == (200, {"result": "fine"})
            assert (await client.call(7, "nowhere", {}, timeout=5))[0] == 404
        finally:
            await client.close()
            await server.stop()

    asyncio.run(check())


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
