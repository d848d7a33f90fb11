"""Streaming an answer into Discord messages, throttled per message."""

from __future__ import annotations

import asyncio

from bot_worker.streaming import ReplyStreamer
from tests.helpers import async_wait_for


class Recorder:
    def __init__(self) -> None:
        self.ops: list[tuple[str, int, str]] = []
        self.times: list[float] = []
        self.count = 0

    def _stamp(self) -> None:
        self.times.append(asyncio.get_running_loop().time())

    async def send(self, text: str, index: int) -> int:
        self.count += 1
        self.ops.append(("send", self.count, text))
        self._stamp()
        return self.count

    async def edit(self, handle: int, text: str) -> None:
        self.ops.append(("edit", handle, text))
        self._stamp()


async def test_first_text_is_sent_at_once_then_edits_are_throttled():
    rec = Recorder()
    streamer = ReplyStreamer(rec.send, rec.edit, interval=0.3)
    streamer.feed("Hel")
    await async_wait_for(lambda: rec.ops == [("send", 1, "Hel")], timeout=2)
    for piece in "lo wor":
        streamer.feed(piece)
    await async_wait_for(lambda: rec.ops[-1] == ("edit", 1, "Hello wor"), timeout=2)  # the timer's edit
    assert len([op for op in rec.ops if op[0] == "edit"]) == 1
    assert rec.times[1] - rec.times[0] >= 0.3 * 0.95  # not before the interval had passed


async def test_finish_sends_the_completing_edit_immediately():
    rec = Recorder()
    streamer = ReplyStreamer(rec.send, rec.edit, interval=10.0)
    streamer.feed("Hello")
    await async_wait_for(lambda: rec.ops == [("send", 1, "Hello")], timeout=2)
    streamer.feed(" world")
    loop = asyncio.get_running_loop()
    started = loop.time()
    await streamer.finish("Hello world!")
    assert loop.time() - started < 0.1
    assert rec.ops == [("send", 1, "Hello"), ("edit", 1, "Hello world!")]


async def test_overflow_continues_in_new_messages():
    rec = Recorder()
    streamer = ReplyStreamer(rec.send, rec.edit, interval=10.0, limit=100)
    await streamer.finish("a" * 80 + "\n\n" + "b" * 80)
    assert rec.ops == [("send", 1, "a" * 80), ("send", 2, "b" * 80)]


async def test_nothing_is_sent_for_an_empty_answer():
    rec = Recorder()
    streamer = ReplyStreamer(rec.send, rec.edit)
    await streamer.finish("  ")
    assert rec.ops == []


async def test_at_most_one_edit_per_interval_under_a_fast_stream():
    rec = Recorder()
    streamer = ReplyStreamer(rec.send, rec.edit, interval=0.2)
    loop = asyncio.get_running_loop()
    end = loop.time() + 0.9
    while loop.time() < end:
        streamer.feed("x")
        await asyncio.sleep(0.005)
    await streamer.finish()
    edits = [op for op in rec.ops if op[0] == "edit"]
    assert 3 <= len(edits) <= 6  # ~0.9 s / 0.2 s, plus the completing one
    assert edits[-1][2] == streamer.text


async def test_a_final_text_shorter_than_the_draft_deletes_the_parts_it_no_longer_fills():
    rec = Recorder()
    deleted: list[int] = []

    async def delete(handle: int) -> None:
        deleted.append(handle)

    streamer = ReplyStreamer(rec.send, rec.edit, interval=10.0, limit=100, delete=delete)
    streamer.feed("a" * 80 + ". \n\n" + "b" * 30)  # the draft spills into a second message
    await async_wait_for(lambda: [op[0] for op in rec.ops] == ["send", "send"], timeout=2)
    await streamer.finish("a" * 80 + ".")  # the fragment after the last full sentence is gone

    assert deleted == [2] and [p.handle for p in streamer.parts] == [1]
    assert rec.ops == [("send", 1, "a" * 80 + "."), ("send", 2, "b" * 30)]  # the first part already reads right


class Refused(Exception):
    """What a platform's client raises when it does not take a message (e.g. a 403)."""


async def test_a_refused_edit_ends_the_delivery_and_is_reported_once():
    rec = Recorder()
    failures: list[Exception] = []

    async def refused(handle: int, text: str) -> None:
        rec.ops.append(("refused", handle, text))
        raise Refused("403 Forbidden")

    streamer = ReplyStreamer(rec.send, refused, interval=0.05, on_failure=failures.append)
    streamer.feed("Hello")
    await async_wait_for(lambda: rec.ops == [("send", 1, "Hello")], timeout=2)
    streamer.feed(" world")
    await async_wait_for(lambda: failures, timeout=2)  # the timer's edit was refused
    streamer.feed(" and more")
    await streamer.finish("Hello world and more.")  # does not raise, sends nothing more
    await streamer.finish("again")
    assert [op[0] for op in rec.ops] == ["send", "refused"]
    assert len(failures) == 1 and isinstance(streamer.failure, Refused)


async def test_a_refused_first_message_is_not_sent_again_with_each_piece():
    sends: list[str] = []
    failures: list[Exception] = []

    async def refused(text: str, index: int) -> int:
        sends.append(text)
        raise Refused("403 Forbidden")

    streamer = ReplyStreamer(refused, Recorder().edit, interval=0.05, on_failure=failures.append)
    streamer.feed("Hel")
    await async_wait_for(lambda: failures, timeout=2)
    for piece in "lo world":
        streamer.feed(piece)
        await asyncio.sleep(0)
    await streamer.finish()
    assert sends == ["Hel"] and len(failures) == 1 and not streamer.started
