"""Built-in tools behind the catalog: date/time, user notes, memory, Discord actions."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from grobot.core.db import session_scope
from grobot.core.services import bots, user_notes
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.base import DiscordActions, ToolCatalog, ToolContext, ToolError
from grobot.core.tools.catalog import catalog_for_bot


@pytest.fixture
def bot_id(grobot_env) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name="builtin-bot").id


class RecordingDiscord:
    """A DiscordActions that records what the tools asked for."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def react(self, channel_id: str, message_id: str, emoji: str) -> None:
        self.calls.append(("react", channel_id, message_id, emoji))

    async def reply_in_thread(self, channel_id, message_id, text, *, thread_name=None) -> str:
        self.calls.append(("thread", channel_id, message_id, text, thread_name))
        return "777"

    async def recent_messages(self, channel_id, *, limit=20):
        self.calls.append(("recent", channel_id, limit))
        return [{"id": "1", "author": "ann", "content": "hi", "created_at": "2026-01-01T00:00:00+00:00"}]


class ListMemory:
    def __init__(self) -> None:
        self.items: list[tuple[int, str, dict]] = []

    async def remember(self, bot_id, texts, metadata):
        self.items += [(bot_id, t, metadata) for t in texts]

    async def search(self, bot_id, query, k=5):
        return [t for b, t, _ in self.items if b == bot_id and query.lower() in t.lower()][:k]


async def test_catalog_of_a_bot_without_servers(bot_id):
    catalog = await catalog_for_bot(bot_id, store=DatabaseStore())
    assert isinstance(catalog, ToolCatalog)
    specs = {s.name: s for s in await catalog.list_tools()}
    assert set(specs) == {"datetime_now", "files_list", "files_read", "user_notes_read", "user_notes_add",
                          "user_notes_update"}
    assert specs["datetime_now"].read_only and not specs["user_notes_add"].read_only
    assert all(s.input_schema["type"] == "object" and s.description for s in specs.values())
    assert catalog.unavailable() == {}
    with pytest.raises(ToolError, match="unknown tool 'nope'"):
        await catalog.call_tool("nope", {}, context=ToolContext(bot_id=bot_id), timeout=5)


async def test_datetime_in_a_time_zone(bot_id):
    catalog = await catalog_for_bot(bot_id, store=DatabaseStore())
    ctx = ToolContext(bot_id=bot_id)
    result = await catalog.call_tool("datetime_now", {"timezone": "Asia/Kolkata"}, context=ctx, timeout=5)
    stamp = datetime.fromisoformat(result.structured["datetime"])
    assert stamp.utcoffset().total_seconds() == 5.5 * 3600
    assert abs((stamp - datetime.now(ZoneInfo("UTC"))).total_seconds()) < 60
    with pytest.raises(ToolError, match="unknown time zone 'Moon/Base'"):
        await catalog.call_tool("datetime_now", {"timezone": "Moon/Base"}, context=ctx, timeout=5)


async def test_user_notes_tools_work_on_the_current_user_only(bot_id):
    catalog = await catalog_for_bot(bot_id, store=DatabaseStore())
    ann = ToolContext(bot_id=bot_id, user_id="1001")
    bob = ToolContext(bot_id=bot_id, user_id="2002")
    added = await catalog.call_tool("user_notes_add", {"note": "Prefers French", "reliability": 0.6}, context=ann, timeout=5)
    note_id = added.structured["id"]
    await catalog.call_tool("user_notes_add", {"note": "prefers french.", "reliability": 0.9}, context=ann, timeout=5)
    read = await catalog.call_tool("user_notes_read", {}, context=ann, timeout=5)
    assert read.structured == [{"id": note_id, "note": "Prefers French", "reliability": 0.9}]
    assert (await catalog.call_tool("user_notes_read", {}, context=bob, timeout=5)).structured == []
    with pytest.raises(ToolError, match="not a note about this user"):
        await catalog.call_tool("user_notes_update", {"note_id": note_id, "reliability": 0.1}, context=bob, timeout=5)
    await catalog.call_tool("user_notes_update", {"note_id": note_id, "note": "Prefers English"}, context=ann, timeout=5)
    with session_scope(readonly=True) as session:
        notes = user_notes.list_notes(session=session, bot_id=bot_id, discord_user_id="1001")
    assert [(n.note, n.source) for n in notes] == [("Prefers English", "tool")]
    with pytest.raises(ToolError, match="reliability: 1.5 is greater than the maximum of 1"):
        await catalog.call_tool("user_notes_add", {"note": "x", "reliability": 1.5}, context=ann, timeout=5)
    with pytest.raises(ToolError, match="who is talking"):
        await catalog.call_tool("user_notes_read", {}, context=ToolContext(bot_id=bot_id), timeout=5)


async def test_memory_tools_use_the_given_memory(bot_id):
    memory = ListMemory()
    catalog = await catalog_for_bot(bot_id, store=DatabaseStore(), memory=memory)
    ctx = ToolContext(bot_id=bot_id, user_id="1001", channel_id="55")
    await catalog.call_tool("memory_remember", {"text": "The wifi password is on the fridge"}, context=ctx, timeout=5)
    found = await catalog.call_tool("memory_search", {"query": "wifi"}, context=ctx, timeout=5)
    assert found.structured == ["The wifi password is on the fridge"]
    assert memory.items[0][2] == {"user_id": "1001", "channel_id": "55", "source": "tool"}


async def test_discord_tools_only_inside_a_bot_process(bot_id):
    without = {s.name for s in await (await catalog_for_bot(bot_id, store=DatabaseStore())).list_tools()}
    assert not any(name.startswith("discord_") for name in without)

    discord = RecordingDiscord()
    assert isinstance(discord, DiscordActions)
    catalog = await catalog_for_bot(bot_id, store=DatabaseStore(), discord=discord)
    ctx = ToolContext(bot_id=bot_id, user_id="1001", channel_id="10", message_id="20")
    await catalog.call_tool("discord_react", {"emoji": "👍"}, context=ctx, timeout=5)
    thread = await catalog.call_tool("discord_reply_in_thread", {"text": "Details here", "thread_name": "Help"},
                                     context=ctx, timeout=5)
    recent = await catalog.call_tool("discord_recent_messages", {"limit": 5}, context=ctx, timeout=5)
    assert thread.structured == {"thread_id": "777"}
    assert recent.structured[0]["content"] == "hi"
    assert discord.calls == [("react", "10", "20", "👍"), ("thread", "10", "20", "Details here", "Help"),
                             ("recent", "10", 5)]
    with pytest.raises(ToolError, match="no Discord message"):
        await catalog.call_tool("discord_react", {"emoji": "👍"}, context=ToolContext(bot_id=bot_id), timeout=5)
