"""A bot's settings version moves with every change of what a message of the bot reads of its settings
(the supervisor keeps what it builds from them under that version): its LLM settings and the global
defaults, channel personas, access lists, moderation, documents switch, MCP assignments and servers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from grobot.core.db import session_scope
from grobot.core.models import Bot
from grobot.core.services import access, bots, channel_personas, fleet, llm_settings, mcp_servers


def _versions() -> dict[int, str]:
    with session_scope(readonly=True) as session:
        return {bot.id or 0: fleet.config_version(bot.updated_at) for bot in session.query(Bot).all()}


def _bot(session: Any, bot_id: int) -> Bot:
    return bots.get_bot(bot_id, session=session)


@pytest.fixture
def two_bots(grobot_env) -> tuple[int, int]:
    with session_scope() as session:
        server = mcp_servers.create_server(session=session, name="clock", command="echo")
        ids = tuple(bots.create_bot(session=session, name=name).id or 0 for name in ("changed", "other"))
        mcp_servers.enable_for_bot(session=session, bot_id=ids[0], server=server)
        llm_settings.set_llm(session=session, category="tools", bot_id=ids[0], provider="ollama", model="qwen2.5")
        channel_personas.set_persona(_bot(session, ids[0]), "123456789012345678", session=session, personality="Pirate.")
    return ids  # type: ignore[return-value]


def _server(session: Any) -> Any:
    return mcp_servers.get_server("clock", session=session)


CHANGES: dict[str, Callable[[Any, int], Any]] = {
    "its LLM override": lambda session, bot_id: llm_settings.set_llm(
        session=session, category="output", bot_id=bot_id, provider="ollama", model="mistral"),
    "its LLM override changed": lambda session, bot_id: llm_settings.set_llm(
        session=session, category="tools", bot_id=bot_id, provider="ollama", model="llama3.1"),
    "its LLM override cleared": lambda session, bot_id: llm_settings.clear_override(
        session=session, bot_id=bot_id, category="tools"),
    "a channel persona": lambda session, bot_id: channel_personas.set_persona(
        _bot(session, bot_id), "223456789012345678", session=session, personality="Formal."),
    "a channel persona's LLM": lambda session, bot_id: channel_personas.set_persona(
        _bot(session, bot_id), "123456789012345678", session=session, llms={"tools": {"model": "mistral"}}),
    "a channel persona removed": lambda session, bot_id: channel_personas.clear_persona(
        _bot(session, bot_id), "123456789012345678", session=session),
    "its access lists": lambda session, bot_id: access.change_access(
        _bot(session, bot_id), session=session, add={"blocked_user_ids": ["333333333333333333"]}),
    "its moderation": lambda session, bot_id: bots.update_bot(
        _bot(session, bot_id), {"moderation_words": ["forbidden"]}, session=session),
    "its documents switch": lambda session, bot_id: bots.update_bot(
        _bot(session, bot_id), {"documents_enabled": True}, session=session),
    "an MCP server assigned": lambda session, bot_id: mcp_servers.enable_for_bot(
        session=session, bot_id=bot_id, server=mcp_servers.create_server(session=session, name="web", command="echo")),
    "an MCP server's tools allowed": lambda session, bot_id: mcp_servers.enable_for_bot(
        session=session, bot_id=bot_id, server=_server(session), allowed_tools=["now"]),
    "an MCP server unassigned": lambda session, bot_id: mcp_servers.disable_for_bot(
        session=session, bot_id=bot_id, server=_server(session)),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_of_a_bots_settings_moves_its_version_only(two_bots, change) -> None:
    changed, other = two_bots
    before = _versions()
    with session_scope() as session:
        CHANGES[change](session, changed)
    after = _versions()
    assert after[changed] != before[changed], f"{change} did not move the bot's settings version"
    assert after[other] == before[other], f"{change} moved another bot's settings version"


def test_a_global_llm_default_moves_every_bots_version(two_bots) -> None:
    before = _versions()
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="decision", provider="ollama", model="phi3")
    after = _versions()
    assert all(after[bot_id] != before[bot_id] for bot_id in two_bots)


def test_an_mcp_server_moves_the_versions_of_the_bots_it_is_assigned_to(two_bots) -> None:
    changed, other = two_bots
    before = _versions()
    with session_scope() as session:
        mcp_servers.update_server(_server(session), {"command": "cat"}, session=session)
    middle = _versions()
    assert middle[changed] != before[changed] and middle[other] == before[other]
    with session_scope() as session:
        mcp_servers.record_tools(session=session, server_id=_server(session).id, tools=[{"name": "now"}])
    after = _versions()
    assert after[changed] != middle[changed] and after[other] == middle[other]
    # A refresh that finds the same tools changes nothing a message reads: no new version.
    with session_scope() as session:
        mcp_servers.record_tools(session=session, server_id=_server(session).id, tools=[{"name": "now"}])
    assert _versions() == after


def test_an_orm_update_or_delete_of_settings_rows_moves_every_bots_version(two_bots) -> None:
    from sqlalchemy import delete, update

    from grobot.core.models import ChannelPersona

    before = _versions()
    with session_scope() as session:
        session.execute(update(Bot).where(Bot.id == two_bots[1]).values(enabled=False))
    middle = _versions()
    assert all(middle[bot_id] != before[bot_id] for bot_id in two_bots)
    with session_scope() as session:
        session.execute(delete(ChannelPersona).where(ChannelPersona.bot_id == two_bots[0]))
    after = _versions()
    assert all(after[bot_id] != middle[bot_id] for bot_id in two_bots)
