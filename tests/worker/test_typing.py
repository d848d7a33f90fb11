""""typing" shows in the channel only for an answer that takes a while."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from bot_worker.discord_io import TYPING_AFTER, typing


class Client:
    def __init__(self) -> None:
        self.sent: list[tuple[int, float]] = []
        self.typed = asyncio.Event()
        self.http = SimpleNamespace(send_typing=self.send_typing)

    async def send_typing(self, channel_id: int) -> None:
        self.sent.append((channel_id, time.monotonic()))
        self.typed.set()


async def test_a_quick_answer_sends_no_typing():
    client = Client()
    async with typing(client, 7):  # type: ignore[arg-type]
        await asyncio.sleep(0)  # the answer is there at once
    await asyncio.sleep(0)
    assert client.sent == [] and TYPING_AFTER >= 0.3


async def test_a_slow_answer_shows_typing_once_it_has_taken_a_while():
    client = Client()
    entered = time.monotonic()
    async with typing(client, 7, after=0.1):  # type: ignore[arg-type]
        await asyncio.wait_for(client.typed.wait(), 10)  # the model is still thinking
    assert [channel for channel, _ in client.sent] == [7]
    assert client.sent[0][1] - entered >= 0.1
