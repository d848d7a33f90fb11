"""The lease keeper of a bot process, with a fake client and a fake link (no Discord).

Short timings; every wait is on a condition with a deadline."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot_worker.bot_link import Answer, Report
from bot_worker.exit_codes import EXIT_REPLACED
from bot_worker.lease import LeaseKeeper
from tests.helpers import async_wait_for

SUPERVISOR = "host:1:abc"
FROZEN = object()  # a step of the link's script: the supervisor accepts the report and never answers


class FakeClient:
    """The bot's client as the keeper sees it."""

    def __init__(self, guilds: int = 3, connected: bool = True) -> None:
        self.guilds, self.connected = guilds, connected
        self.closed = False
        self.exit_code: int | None = None
        self.stopped_with: datetime | None = None  # when it stopped (wall clock, like the leases)

    def is_closed(self) -> bool:
        return self.closed

    def gateway_state(self) -> tuple[int, bool]:
        return self.guilds, self.connected

    async def stop(self, exit_code: int | None = None) -> None:
        if exit_code is not None:
            self.exit_code = exit_code
        self.closed, self.stopped_with = True, datetime.now(UTC)


class FakeLink:
    """A supervisor scripted step by step: an ``Answer``, an exception or ``FROZEN``; after the
    script, ``then`` (the last answer again, by default)."""

    def __init__(self, *steps: Any, then: Any = None) -> None:
        self.steps = list(steps)
        self.then = then if then is not None else (steps[-1] if steps else FROZEN)
        self.reports: list[Report] = []

    async def heartbeat(self, report: Report, *, timeout: float) -> Answer:
        self.reports.append(report)
        step = self.steps.pop(0) if self.steps else self.then
        if step is FROZEN:
            await asyncio.Event().wait()
        if isinstance(step, BaseException):
            raise step
        assert isinstance(step, Answer)
        return step


def _in(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


def _keeper(client: FakeClient, link: FakeLink, *, heartbeat: float = 0.05, fencing: bool = True,
            margin: float = 1.0, **kwargs: Any) -> LeaseKeeper:
    return LeaseKeeper(client, link, bot_id=7, pid=4242, heartbeat_seconds=heartbeat, supervisor_id=SUPERVISOR,
                       fencing=fencing, margin=margin, **kwargs)


def test_each_answer_renews_the_lease_and_vouches_for_the_settings_version():
    async def scenario() -> None:
        client, renewed = FakeClient(guilds=3), _in(30)
        link = FakeLink(Answer(True, SUPERVISOR, _in(20), config="v2"), Answer(True, SUPERVISOR, renewed, config="v3"))
        # (A heartbeat long enough that the last answer is still recent on a loaded machine.)
        keeper = _keeper(client, link, config_version="v1", heartbeat=1.0)
        assert keeper.vouches_for("v1")  # the read at start, until the first answer
        await keeper.start(_in(10))
        assert keeper.fence is not None
        await async_wait_for(lambda: len(link.reports) >= 3, timeout=20)
        assert keeper.fence.expires == renewed and keeper.vouches_for("v3") and not keeper.vouches_for("v1")
        assert link.reports[0] == Report(bot_id=7, pid=4242, guild_count=3, online=True)
        assert not client.closed
        keeper.close()
        client.closed = True

    asyncio.run(scenario())


@pytest.mark.parametrize(("answer", "why"), [
    (Answer(ok=False), "another process is registered for this bot"),
    (Answer(True, "another:2:def", None), "the bot's lease is held by another supervisor"),
    (Answer(True, None, None), "the supervisor no longer holds the bot's lease"),
])
def test_a_refusal_stops_the_bot_as_replaced(answer, why):
    async def scenario() -> None:
        client = FakeClient()
        keeper = _keeper(client, FakeLink(answer))
        assert keeper.refusal(answer) == why
        await keeper.start(_in(30))
        await async_wait_for(lambda: client.closed, timeout=5)
        assert client.exit_code == EXIT_REPLACED

    asyncio.run(scenario())


def test_without_fencing_only_another_registered_process_is_a_refusal():
    keeper = _keeper(FakeClient(), FakeLink(), fencing=False)
    assert keeper.fence is None
    assert keeper.refusal(Answer(True, None, None)) == ""
    assert keeper.refusal(Answer(ok=False)) == "another process is registered for this bot"


def test_heartbeat_failures_are_tolerated_until_the_supervisor_answers_again():
    async def scenario() -> None:
        client = FakeClient()
        link = FakeLink(ConnectionError("down"), ConnectionError("down"), RuntimeError("odd"),
                        Answer(True, SUPERVISOR, _in(60), config="v9"))
        keeper = _keeper(client, link)
        await keeper.start(_in(30))
        await async_wait_for(lambda: keeper.vouches_for("v9"), timeout=5)
        assert not client.closed and len(link.reports) >= 4
        keeper.close()
        client.closed = True

    asyncio.run(scenario())


def test_a_lapsing_lease_confirmed_in_time_keeps_the_bot():
    async def scenario() -> None:
        client, renewed = FakeClient(), _in(30)
        # Heartbeats far apart: only the confirmation speaks. It asks again after a failure.
        link = FakeLink(ConnectionError("busy"), Answer(True, SUPERVISOR, renewed))
        keeper = _keeper(client, link, heartbeat=60)
        await keeper.start(_in(1.3))  # the watch fires 1 s (its margin) before the expiry
        assert keeper.fence is not None
        await async_wait_for(lambda: keeper.fence is not None and keeper.fence.expires == renewed, timeout=5)
        assert not client.closed and len(link.reports) == 2
        keeper.close()
        client.closed = True

    asyncio.run(scenario())


@pytest.mark.parametrize("supervisor", ["frozen", "cannot renew"])
def test_a_lapsing_lease_not_renewed_stops_the_bot_before_it_runs_out(supervisor):
    async def scenario() -> None:
        client, expires = FakeClient(), _in(1.6)
        link = FakeLink(then=FROZEN) if supervisor == "frozen" else FakeLink(Answer(True, SUPERVISOR, expires))
        keeper = _keeper(client, link, heartbeat=60)
        await keeper.start(expires)
        await async_wait_for(lambda: client.closed, timeout=5)
        assert client.exit_code == EXIT_REPLACED and client.stopped_with is not None
        assert (expires - client.stopped_with).total_seconds() > 0.3  # stopped with time to spare
        assert link.reports  # it asked first

    asyncio.run(scenario())


def test_a_bot_whose_lease_is_nearly_out_at_start_confirms_it_before_anything_else():
    async def scenario() -> None:
        client = FakeClient()
        keeper = _keeper(client, FakeLink(then=FROZEN), heartbeat=60)
        await asyncio.wait_for(keeper.start(_in(0.9)), 5)  # within the margin: confirm, here in vain
        assert client.closed and client.exit_code == EXIT_REPLACED

    asyncio.run(scenario())


def test_the_bot_stops_when_its_supervisor_is_gone():
    async def scenario() -> None:
        client, parents = FakeClient(), [100]
        keeper = _keeper(client, FakeLink(then=FROZEN), heartbeat=60, fencing=False, parent_pid=lambda: parents[-1])
        watching = asyncio.get_running_loop().create_task(keeper.watch_parent(interval=0.02))
        parents.append(1)  # re-parented to init
        await asyncio.wait_for(watching, 5)
        assert client.closed and client.exit_code is None  # an ordinary stop, not a fenced one

    asyncio.run(scenario())
