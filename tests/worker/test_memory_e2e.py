"""Long-term memory across a real fleet: bot processes and Test Chat jobs share the supervisor's memory (over its link)."""

from __future__ import annotations

import pytest
from sqlmodel import select

from grobot.core import tester_chat_link
from grobot.core.db import session_scope
from grobot.core.models import Message, Setting
from grobot.core.services import app_settings, memories, tester_chat
from tests.fakes.llm import Reply, is_archivist_request
from tests.helpers import wait_for
from tests.worker.harness import fleet

pytestmark = pytest.mark.slow


def _system_prompt_of_answer(world, question: str) -> str | None:
    """The system prompt of the answer request for ``question`` (not the Archivist's or other JSON calls)."""
    for body in reversed(world.llm.chat_requests()):
        messages = body.get("messages") or []
        if question in str(messages[-1:]) and not body.get("format") and not body.get("response_format"):
            return str(messages[0].get("content"))
    return None


def test_a_bot_remembers_across_conversations_through_the_supervisor(grobot_env, tmp_path):
    """Forked bots (the default); exec'd bots get the same address (tests/worker/test_fleet_e2e.py)."""
    with fleet(grobot_env, tmp_path) as world:
        bot = world.add_bot("keeper", user_cooldown_seconds=0)
        world.start_supervisor(GROBOT_MEMORY_BUDGET_SECONDS="5", GROBOT_MEMORY_PRELOAD="1",  # a loaded machine
                               GROBOT_HOUSEKEEPING_SECONDS="1")
        world.wait_online(bot, timeout=40)
        # The supervisor loads the embedder in the background at start, before any message needs it.
        wait_for(lambda: "Memory store and embedding model loaded" in world.log(), 60,
                 message=lambda: f"memory warm-up; log:\n{world._tail()}")
        alice = str(world.discord.alice["id"])
        # One row tells the web app and the CLI where the supervisor serves: its link, one port for the
        # memory and Test Chat's runner (the embedded models' llama.cpp servers keep a row of their own).
        with session_scope(readonly=True) as s:
            rows = {row.key: row.value for row in s.exec(select(Setting)).all()
                    if isinstance(row.value, dict) and row.value.get("supervisor_id")}
        served = {key: value for key, value in rows.items() if not key.startswith("llama_servers:")}
        assert len(served) == 1, served
        (key, value), = served.items()
        assert key == f"supervisor_link:{value['supervisor_id']}"
        assert value["url"].startswith("tcp://127.0.0.1:") and set(value) == {"url", "supervisor_id"}
        with session_scope(readonly=True) as s:
            assert tester_chat_link.live_runners(session=s) == [
                tester_chat_link.Runner(value["supervisor_id"], value["url"])]

        world.llm.script_for(is_archivist_request, Reply(json={"notes": [], "memories": [
            {"text": "alice said the launch code word is pineapple", "kind": "fact"}]}))
        # (said, not asked to be remembered: a request to remember would call the memory tool as well)
        told = world.mention(bot, "by the way, the launch code word is pineapple")
        world.wait_reply(told, containing="pineapple")

        # The bot process's Archivist stored it through the supervisor's service, with where it came from.
        def stored() -> list[memories.MemoryItem]:
            with session_scope(readonly=True) as s:
                return memories.list_memories(bot, session=s).items

        items = wait_for(stored, 20, message=lambda: f"a stored memory; log:\n{world._tail()}")
        assert [m.text for m in items] == ["alice said the launch code word is pineapple"]
        assert (items[0].user_id, items[0].source_message_id, items[0].channel_id, items[0].source) == \
            (alice, told["id"], str(world.discord.channel_id), "archivist")

        # A later message, in a DM (another conversation), retrieves it into the system prompt.
        dm = world.discord.dm_channel(world.discord_ids[bot], world.discord.alice)
        asked = world.discord.send_message(dm, "what is the launch code word?")
        world.wait_reply(asked, containing="launch code word")
        assert "pineapple" in (_system_prompt_of_answer(world, "what is the launch code word?") or "")

        # A Test Chat job in the supervisor uses the store directly: same memories.
        with session_scope() as s:
            conv = tester_chat.create_session(bot, session=s)
            pending = tester_chat.submit(conv.id, "tell me the launch code word", session=s).id

        def answered() -> bool:
            with session_scope(readonly=True) as s:
                return s.get(Message, pending).status in ("done", "error")

        wait_for(answered, 20, message=lambda: f"the Test Chat answer; log:\n{world._tail()}")
        assert "pineapple" in (_system_prompt_of_answer(world, "tell me the launch code word") or "")

        # The admin caps memories per bot: housekeeping deletes the oldest beyond the cap.
        with session_scope() as s:
            memories.add_memory(bot, "alice prefers short answers", session=s)
            app_settings.set_value("memory_max_per_bot", 1, session=s)

        def kept() -> list[str] | None:
            texts = [m.text for m in stored()]
            return texts if len(texts) == 1 else None

        assert wait_for(kept, 20, message=lambda: f"the cap applied; log:\n{world._tail()}") == ["alice prefers short answers"]
