"""An answer Discord does not take, as a Discord user and the bot's admin meet it (a real bot
process against the fake Discord): a reply to a message deleted before the first token still
arrives in the channel; a refusal (403) or a server failure (503) stops the run and leaves one
plain line in the bot's log; a 500 that discord.py retries is never noticed."""

from __future__ import annotations

import re
import threading

import pytest

from tests.fakes.llm import Reply
from tests.helpers import wait_for
from tests.worker.harness import asks, bot_log, fleet, terminal_events

pytestmark = pytest.mark.slow

STORY = " ".join(f"word{i}" for i in range(80))


def _undelivered(bot_id: int) -> list[tuple[str, str]]:
    return [(level, line) for level, line in bot_log(bot_id) if line.startswith("Could not deliver an answer")]


def test_an_answer_discord_does_not_take_is_sent_anyway_or_logged_once(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        bot = world.add_bot("courier", user_cooldown_seconds=0, max_concurrent_runs=2)
        world.start_supervisor()
        world.wait_online(bot)
        uid = world.discord_ids[bot]
        general, random = world.discord.channel_id, world.discord.other_channel_id
        alice = world.discord.alice["id"]

        # The question is deleted while the model thinks: the answer still comes, in the channel.
        go = threading.Event()
        world.llm.script_for(asks("tell me later"), Reply(text="Here is your late answer.", hold=go))
        asked = world.mention(bot, "tell me later")
        wait_for(lambda: [b for b in world.llm.chat_requests() if asks("tell me later")(b)], 20)
        world.discord.delete_message(general, asked["id"])
        go.set()
        late = wait_for(lambda: [m for m in world.discord.channel_messages(general, bot_id=uid)
                                 if "Here is your late answer." in m["content"]], 20,
                        message="the late answer in #general")
        assert "message_reference" not in late[0]  # a plain message: there is nothing left to reply to

        # A 500 is retried by discord.py: the user sees nothing of it.
        world.discord.fail("POST", rf"/channels/{general}/messages$", 500)
        world.wait_reply(world.mention(bot, "through a hiccup"), containing="through a hiccup")

        # No permission to post in #random: one line in the log, the run stops (the model's stream is
        # closed, its end says why), and the bot does not post again for every piece of the answer.
        world.discord.fail("POST", rf"/channels/{random}/messages$", 403, times=100)
        world.llm.script_for(asks("no permission here"), Reply(text=STORY, chunks=40, chunk_delay=0.1))
        hangups = world.llm.hangups
        world.mention(bot, "no permission here", channel_id=random)
        wait_for(lambda: _undelivered(bot), 20, message="the line in the bot's log")
        wait_for(lambda: world.llm.hangups > hangups, 10, message="the model's stream was not closed")
        final = wait_for(lambda: terminal_events("no permission here"), 10)
        assert len(final) == 1 and final[0]["cancelled"] is True, final
        assert "the answer could not be delivered on Discord" in final[0]["message"]
        assert len(world.discord.calls_by(uid, "POST", rf"/channels/{random}/messages$")) == 1

        # Discord's servers fail in the middle of an answer (a 503, not retried): what was sent stays.
        world.llm.script_for(asks("a long story"), Reply(text=STORY, chunks=40, chunk_delay=0.1))
        hangups = world.llm.hangups
        reply = world.wait_reply(world.mention(bot, "a long story"), containing="word")
        world.discord.fail("PATCH", rf"/messages/{reply['id']}$", 503, times=100)
        wait_for(lambda: len(_undelivered(bot)) == 2, 20, message="the line in the bot's log")
        wait_for(lambda: world.llm.hangups > hangups, 10, message="the model's stream was not closed")
        assert "word79" not in world.discord.messages[int(reply["id"])]["content"]

        # The bot goes on answering.
        world.wait_reply(world.mention(bot, "still there?"), containing="still there?")
        assert _undelivered(bot) == [
            ("ERROR", f"Could not deliver an answer (channel {random}, user {alice}): Discord refused it: the bot "
                      "lacks a permission in this channel (HTTP 403, code 50013: Missing Permissions)"),
            ("ERROR", f"Could not deliver an answer (channel {general}, user {alice}): Discord's servers failed "
                      "(HTTP 503)"),
        ]
        assert not [line for _, line in bot_log(bot) if re.match(r"The event sink failed|Answering a message failed|"
                                                                 r"Task exception was never retrieved", line)]
