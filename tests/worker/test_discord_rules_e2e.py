"""The reply rules as a Discord user meets them (a real bot process against the fake Discord):
a thread follows its channel's rules (or its own, when it is listed itself); ``/ask`` meets the
same rules, limits and ``/stop`` as a message that mentions the bot, and ``/council`` the same rules."""

from __future__ import annotations

import pytest

from grobot.core.db import session_scope
from grobot.core.models import Bot
from grobot.core.services import bots, council
from tests.fakes.llm import Reply
from tests.helpers import wait_for
from tests.worker.harness import asks, terminal_events

pytestmark = pytest.mark.slow


def test_a_thread_follows_the_rules_of_its_channel(world):
    general, random = world.discord.channel_id, world.discord.other_channel_id
    bot = world.add_bot("threader", user_cooldown_seconds=0, allowed_channel_ids=[str(general)])
    world.wait_online(bot)

    # A thread of an allowed channel: "@bot hi" there is answered, in the thread.
    thread = world.discord.create_thread(general, "planning")
    reply = world.wait_reply(world.mention(bot, "hi from planning", channel_id=thread),
                             containing="hi from planning")
    assert reply["channel_id"] == str(thread)

    # A thread of another channel is not, unless the admin lists that thread itself.
    elsewhere = world.discord.create_thread(random, "off-topic")
    ignored = world.mention(bot, "hello over here", channel_id=elsewhere)
    world.wait_reply(world.mention(bot, "and in general"), containing="and in general")
    assert not world.discord.replies_to(ignored["id"])
    with session_scope() as session:
        bots.update_bot(session.get(Bot, bot), {"allowed_channel_ids": [str(general), str(elsewhere)]},
                        session=session)
    # (the bot ignores a message with the rules it read last until it hears they changed: ask again)
    wait_for(lambda: _answered(world, bot, elsewhere, "listed now"), 30, interval=0,
             message="an answer in the listed thread")


def test_ask_meets_the_rules_and_stop_of_a_mention(world):
    general, random = world.discord.channel_id, world.discord.other_channel_id
    bot = world.add_bot("asked", user_cooldown_seconds=0, allowed_channel_ids=[str(general)], reply_in_dms=False)
    world.wait_online(bot)
    uid = world.discord_ids[bot]

    # Where a mention is not answered, neither is /ask: the asker alone is told why, and no model runs.
    assert _ask(world, uid, "what is the plan?", channel_id=random) == ["Sorry, I don't answer in this channel."]
    dm = world.discord.dm_channel(uid, world.discord.alice)
    assert _ask(world, uid, "what is the plan?", channel_id=dm) == [
        "Sorry, I don't answer direct messages; ask me in a server channel."]
    # /council too (its deliberation would go to the whole channel).
    with session_scope() as session:
        council.set_council(bot, session=session, enabled=True)
    world.discord.invoke_command(uid, "council", {"question": "what is the plan?"}, channel_id=random)
    refused = wait_for(lambda: [r["body"] for r in world.discord.interaction_responses if r["kind"] == "callback"
                                and "Sorry, I don't answer in this channel." in str(r["body"])], 20,
                       message="the /council refusal")
    assert refused[0]["data"]["flags"] & 64  # the asker alone sees it
    assert not [b for b in world.llm.chat_requests() if "what is the plan?" in str(b)]

    # Where it is (a thread of an allowed channel too), /ask is answered privately.
    thread = world.discord.create_thread(general, "planning")
    answer = _ask(world, uid, "and here?", channel_id=thread)
    assert len(answer) == 1 and answer[0].startswith("Echo:") and answer[0].endswith("and here?"), answer

    # /stop stops an /ask as it stops a mentioned message: what was said so far, marked as stopped.
    story = " ".join(f"word{i}" for i in range(80))
    world.llm.script_for(asks("a long one"), Reply(text=story, chunks=80, chunk_delay=0.15))
    hangups = world.llm.hangups
    token = world.discord.invoke_command(uid, "ask", {"question": "a long one"})["token"]
    wait_for(lambda: [b for b in world.llm.chat_requests() if asks("a long one")(b)], 20)
    world.discord.invoke_command(uid, "stop")
    wait_for(lambda: any("Stopped." in str(r["body"]) for r in world.discord.interaction_responses), 10,
             message="/stop found the /ask")
    stopped = wait_for(lambda: _followups(world, token), 10, message="the /ask's end")
    assert stopped[0].endswith("(stopped)") and "word79" not in stopped[0], stopped
    wait_for(lambda: world.llm.hangups > hangups, 10, message="the model's stream was not closed")
    final = wait_for(lambda: terminal_events("a long one"), 10)
    assert len(final) == 1 and final[0]["cancelled"] is True and "/stop" in final[0]["message"]


def _ask(world, uid: int, question: str, *, channel_id: int) -> list[str]:
    """Run ``/ask question`` in a channel; what its asker is shown (each part: seen by the asker only)."""
    token = world.discord.invoke_command(uid, "ask", {"question": question}, channel_id=channel_id)["token"]
    return wait_for(lambda: _followups(world, token), 20, message=f"the answer to /ask {question}")


def _followups(world, token: str) -> list[str]:
    sent = [r["body"] for r in world.discord.interaction_responses
            if r["kind"] == "webhook POST" and r["token"] == token]
    assert all(body["flags"] & 64 for body in sent), sent  # ephemeral
    return [body["content"] for body in sent]


def _answered(world, bot: int, channel_id: int, text: str) -> bool:
    try:
        world.wait_reply(world.mention(bot, text, channel_id=channel_id), containing=text, timeout=3)
        return True
    except AssertionError:
        return False
