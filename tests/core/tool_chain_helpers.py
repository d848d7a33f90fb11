"""What the tests of the chain with tools share: a bot on the fake LLM, its messages, a scripted choice."""

from __future__ import annotations

from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.services import bots
from tests.fakes.llm import Reply


def make_bot(**fields) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=fields.pop("name", "Tooly"), personality="You are Tooly.", **fields).id


def message(bot_id: int, text: str, key: str = "test:tools") -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key=key, content=text, author_id="7", author_name="bob", platform="test_chat")


def pick(name: str, **arguments) -> Reply:
    """The Tool Identifier's answer (as a model free of the schema gives it): call ``name``."""
    return Reply(json={"reason": "needs data", "tools": [{"name": name, "arguments": arguments}]})
