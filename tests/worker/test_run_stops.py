"""Who may stop which answer on Discord (bot_worker.run_stops): the asker, in the channel, or with
🛑 on the bot's answer; anyone else's /stop or reaction leaves the answer running."""

from __future__ import annotations

import asyncio

from bot_worker.run_stops import STOP_EMOJI, RunStops


async def _answer(stops: RunStops, channel: str, author: str, started: asyncio.Event) -> None:
    running = stops.current()
    assert running is not None
    running.message_ids.add(f"reply-{author}")
    started.set()
    await asyncio.Event().wait()  # an answer that runs until it is stopped


async def test_only_the_asker_stops_an_answer() -> None:
    stops = RunStops()
    started = [asyncio.Event(), asyncio.Event()]
    alice = asyncio.get_running_loop().create_task(_answer(stops, "c1", "alice", started[0]))
    stops.add(alice, channel_id="c1", author_id="alice")
    bob = asyncio.get_running_loop().create_task(_answer(stops, "c1", "bob", started[1]))
    stops.add(bob, channel_id="c1", author_id="bob")
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 5)

    assert stops.stop_asked("c2", "alice", "wrong channel") == 0
    assert stops.stop_by_reaction("reply-alice", "bob", STOP_EMOJI) is False  # not bob's answer
    assert stops.stop_by_reaction("reply-alice", "alice", "👍") is False
    assert not alice.cancelled() and not alice.done()

    assert stops.stop_by_reaction("reply-alice", "alice", STOP_EMOJI) is True
    assert stops.stop_asked("c1", "bob", "stopped by bob with /stop") == 1
    for task, reason in ((alice, f"stopped with a {STOP_EMOJI} reaction"), (bob, "stopped by bob with /stop")):
        try:
            await task
        except asyncio.CancelledError as exc:
            assert exc.args == (reason,)
        else:
            raise AssertionError("the answer was not stopped")
    assert stops.of_asker("c1", "alice") == [] and stops.carrying("reply-bob") is None  # forgotten when done
