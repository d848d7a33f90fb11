"""Stopping an answer on Discord (issue 15 item 6): the asker runs ``/stop`` in the channel, or
reacts with 🛑 to the bot's streaming answer. A real bot process against the fake Discord and a
slow scripted fake LLM: the reply stops growing and says so, the model's stream is closed, and the
run ends with exactly one terminal event saying it was cancelled."""

from __future__ import annotations

import pytest

from tests.fakes.llm import Reply
from tests.helpers import wait_for
from tests.worker.harness import asks, fleet, terminal_events

pytestmark = pytest.mark.slow

STORY = " ".join(f"word{i}" for i in range(80))


def _content(world, message_id: str) -> str:
    return world.discord.messages[int(message_id)]["content"]


def test_the_asker_stops_an_answer_with_slash_stop_or_a_stop_reaction(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        bot = world.add_bot("stoppable", user_cooldown_seconds=0)
        world.start_supervisor()
        world.wait_online(bot)
        uid = world.discord_ids[bot]
        channel = world.discord.channel_id

        # /stop in the channel, by the asker.
        world.llm.script_for(asks("first story"), Reply(text=STORY, chunks=80, chunk_delay=0.15))
        hangups = world.llm.hangups
        reply = world.wait_reply(world.mention(bot, "first story"), containing="word")
        world.discord.invoke_command(uid, "stop", channel_id=channel, user=world.discord.bob)  # not the asker
        wait_for(lambda: any("not answering you" in str(r["body"]) for r in world.discord.interaction_responses), 10)
        world.discord.invoke_command(uid, "stop", channel_id=channel)
        wait_for(lambda: any("Stopped." in str(r["body"]) for r in world.discord.interaction_responses), 10)
        wait_for(lambda: _content(world, reply["id"]).endswith("(stopped)"), 10,
                 message=lambda: _content(world, reply["id"]))
        assert "word79" not in _content(world, reply["id"])
        wait_for(lambda: world.llm.hangups > hangups, 10, message="the model's stream was not closed")
        final = wait_for(lambda: terminal_events("first story"), 10)
        assert len(final) == 1 and final[0]["kind"] == "error" and final[0]["cancelled"] is True
        assert "/stop" in final[0]["message"]

        # 🛑 on the streaming answer: someone else's reaction does nothing, the asker's stops it.
        world.llm.script_for(asks("second story"), Reply(text=STORY, chunks=80, chunk_delay=0.15))
        hangups = world.llm.hangups
        reply = world.wait_reply(world.mention(bot, "second story"), containing="word")
        world.discord.react(channel, reply["id"], "🛑", user=world.discord.bob)
        world.discord.react(channel, reply["id"], "👍")
        before = len(_content(world, reply["id"]))
        wait_for(lambda: len(_content(world, reply["id"])) > before, 10,
                 message="the answer kept growing after other reactions")
        world.discord.react(channel, reply["id"], "🛑")
        wait_for(lambda: _content(world, reply["id"]).endswith("(stopped)"), 10,
                 message=lambda: _content(world, reply["id"]))
        wait_for(lambda: world.llm.hangups > hangups, 10, message="the model's stream was not closed")
        final = wait_for(lambda: terminal_events("second story"), 10)
        assert len(final) == 1 and final[0]["cancelled"] is True and "🛑" in final[0]["message"]
