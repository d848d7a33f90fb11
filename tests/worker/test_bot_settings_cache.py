"""The supervisor keeps what a bot's messages read of its settings (LLM settings, MCP servers, channel
personas, the bot's row) under the bot's settings version: a plain message reads only what is its own,
and a change of the settings applies at the bot's next message."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import event

from bot_worker.local_store import LocalBotStore
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import get_engine, session_scope
from grobot.core.models import BotMcpServer, McpServer
from grobot.core.services import bots, channel_personas, llm_settings, mcp_servers, usage_accounting
from tests.worker.link_harness import make_bot, with_link

SETTINGS_TABLES = ("llm_setting", "channel_persona", "bot_mcp_server", "mcp_server")


def _message(bot_id: int, text: str) -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key="guild:55", content=text, author_id="42",
                           author_name="alice", channel_id="55", guild_id="1", mentions_bot=True)


def run_counting(check: Callable[..., Awaitable[None]], statements: list[str]) -> None:
    """Runs ``check`` against a supervisor's bot link, each SQL statement run meanwhile added to ``statements``."""

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engine = get_engine()
    event.listen(engine, "before_cursor_execute", count)
    try:
        asyncio.run(with_link(check, LocalBotStore()))
    finally:
        event.remove(engine, "before_cursor_execute", count)


async def prepare(remote: Any, bot_id: int, text: str, statements: list[str]) -> Any:
    """What the supervisor prepared for a message to be answered (only its statements left in ``statements``)."""
    statements.clear()
    prepared = await remote.prepare(_message(bot_id, text))
    assert prepared.decision is True and prepared.loaded is not None, prepared.error
    return prepared


def test_a_bots_settings_are_read_once_per_version_and_a_change_applies_at_the_next_message(any_db_env) -> None:
    bot_id = make_bot("cached", personality="You are Cachy.")
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="output", bot_id=bot_id, provider="ollama", model="first")
        server = McpServer(name="clock", command="clock-server", tools_cache=[{"name": "now", "description": "Now."}])
        session.add(server)
        session.flush()
        session.add(BotMcpServer(bot_id=bot_id, mcp_server_id=server.id))
        channel_personas.set_persona(bots.get_bot(bot_id, session=session), "55", session=session,
                                     personality="Speak like a pirate.")
    statements: list[str] = []

    async def check(client_for, server) -> None:  # type: ignore[no-untyped-def]
        remote = client_for(bot_id)

        async def read(text: str) -> Any:
            return await prepare(remote, bot_id, text, statements)

        first = await read("hello")
        assert first.loaded.llms["output"].model == "first" and "pirate" in first.loaded.bot.personality
        assert [link.name for link in first.links] == ["clock"]
        # The next message: only what is the message's own (the bot's version comes with its usage).
        second = await read("hello again")
        assert not [s for s in statements if any(f" {table}" in s for table in SETTINGS_TABLES)], statements
        assert second.loaded.llms["output"].model == "first" and "pirate" in second.loaded.bot.personality
        assert [link.name for link in second.links] == ["clock"]

        # Each change applies at the next message, with no restart.
        with session_scope() as session:
            llm_settings.set_llm(session=session, category="output", bot_id=bot_id, provider="ollama", model="second")
        assert (await read("and now?")).loaded.llms["output"].model == "second"
        with session_scope() as session:
            channel_personas.set_persona(bots.get_bot(bot_id, session=session), "55", session=session,
                                         personality="Speak formally.")
        assert "formally" in (await read("and now?")).loaded.bot.personality
        with session_scope() as session:
            mcp_servers.disable_for_bot(session=session, bot_id=bot_id,
                                        server=mcp_servers.get_server("clock", session=session))
        assert (await read("and now?")).links == []
        with session_scope() as session:
            llm_settings.set_llm(session=session, category="decision", provider="ollama", model="global-default")
        assert (await read("and now?")).loaded.llms["decision"].model == "global-default"

    run_counting(check, statements)


def test_a_plain_message_reads_its_bots_version_with_its_usage_in_one_statement(any_db_env) -> None:
    """The version of a bot whose settings are kept comes with the message's usage counters: a plain
    message reads its usage (with the version), its history and its author's notes, and usage written
    by another process meanwhile (Test Chat, the CLI) counts at the next message."""
    bot_id = make_bot("counted")
    statements: list[str] = []

    async def check(client_for, server) -> None:  # type: ignore[no-untyped-def]
        remote = client_for(bot_id)

        async def read(text: str) -> Any:
            return (await prepare(remote, bot_id, text, statements)).loaded

        assert (await read("hello")).limits.calls == 0
        with session_scope() as session:
            usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=3, tokens_in=10, tokens_out=5,
                                           errors=0, cost=0.0)
        loaded = await read("hello again")
        assert (loaded.limits.calls, loaded.limits.tokens) == (3, 15)
        # The bot's version is no statement of its own: it comes with the usage counters.
        assert not [s for s in statements if s.lstrip().startswith("SELECT bot.updated_at")], statements
        assert len([s for s in statements if "usage_daily" in s and "bot.updated_at" in s]) == 1, statements

    run_counting(check, statements)
