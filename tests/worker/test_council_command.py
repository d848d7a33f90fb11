"""``/council``'s first answer: the council and the bot are read side by side, within one deadline.

Discord wants an interaction answered within 3 s; the command reads the council's plan and the
bot's run settings (limits, cooldown) before it answers. Read one after the other, each with its
own 2 s limit, a slow link could pass that deadline and the asker would see "The application did
not respond".
"""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from bot_worker import council_command
from bot_worker.council_command import answer_council
from bot_worker.local_store import LocalBotStore
from grobot.core.agents.types import IncomingMessage
from grobot.core.answering import FloodGate
from grobot.core.db import session_scope
from grobot.core.services import bots


class Interaction:
    """What ``answer_council`` uses of a ``discord.Interaction``: the asker and the first answer."""

    def __init__(self) -> None:
        self.user = SimpleNamespace(id=42, display_name="Ann")
        self.channel_id = 7
        self.said: list[str] = []
        self.response = SimpleNamespace(send_message=self._send, defer=self._defer)

    async def _send(self, text: str, *, ephemeral: bool = False) -> None:
        assert ephemeral, "a refusal is for the asker only"
        self.said.append(text)

    async def _defer(self, **_: Any) -> None:
        raise AssertionError("a council that cannot meet must not start")


class Store:
    """The bot's real store; the council's read answers only once the bot's read has started."""

    def __init__(self, *, load_error: Exception | None = None, load_hangs: bool = False) -> None:
        self.inner = LocalBotStore()
        self.load_started = asyncio.Event()
        self.load_error = load_error
        self.load_hangs = load_hangs

    async def council_plan(self, bot_id: int, asker: str | None) -> Any:
        await asyncio.wait_for(self.load_started.wait(), 1.0)  # read one after the other: never set in time
        return await self.inner.council_plan(bot_id, asker)

    async def prepare(self, msg: IncomingMessage, *, memory: Any = None) -> Any:
        self.load_started.set()
        if self.load_hangs:
            await asyncio.Event().wait()
        if self.load_error is not None:
            raise self.load_error
        return await self.inner.prepare(msg, memory=memory)


def _bot() -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name="Sage", personality="You are Sage.").id or 0


def _incoming(bot_id: int, question: str) -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key="council:42", content=question, author_id="42",
                           author_name="Ann", platform="discord", channel_id="7", mentions_bot=True)


async def test_the_council_and_the_bot_are_read_side_by_side(grobot_env) -> None:
    bot_id = _bot()
    interaction = Interaction()
    await answer_council(Store(), bot_id, interaction, "Which road?", incoming=_incoming(bot_id, "Which road?"),
                         gate=FloodGate())
    assert interaction.said == ["Sorry: the council of Sage is not enabled (an admin turns it on in the bot's "
                                "Council tab)."]


async def test_a_bot_that_cannot_be_read_is_said_plainly_and_logged(grobot_env, caplog) -> None:
    bot_id = _bot()
    interaction = Interaction()
    with caplog.at_level(logging.ERROR, logger="bot_worker.council_command"):
        await answer_council(Store(load_error=ConnectionError("the supervisor is restarting")), bot_id, interaction,
                             "Which road?", incoming=_incoming(bot_id, "Which road?"), gate=FloodGate())
    assert interaction.said == [council_command.UNREADABLE]
    assert "/council could not read the bot: the supervisor is restarting" in caplog.text


async def test_both_reads_share_one_deadline(grobot_env, caplog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(council_command, "PLAN_TIMEOUT_SECONDS", 0.3)
    bot_id = _bot()
    interaction = Interaction()
    with caplog.at_level(logging.ERROR, logger="bot_worker.council_command"):
        await answer_council(Store(load_hangs=True), bot_id, interaction, "Which road?",
                             incoming=_incoming(bot_id, "Which road?"), gate=FloodGate())
    assert interaction.said == [council_command.UNREADABLE]
    assert "could not read the council and the bot within" in caplog.text
