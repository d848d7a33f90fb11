"""Moderation as Discord users meet it (a real bot process against the fake Discord and a fake LLM): a
message with a blocked word gets the short refusal and no model runs; an answer that turns out to match
a pattern while it streams is cut there and replaced (the streamed message edited) or withdrawn
(deleted); the decision model's abuse check silences a message it judges abusive. Each event is one
WARNING in the bot's Logs, without the message."""

from __future__ import annotations

import json

import pytest

from grobot.core.db import session_scope
from grobot.core.models import Bot
from grobot.core.moderation import REFUSAL
from grobot.core.services import bots
from tests.fakes.llm import Reply
from tests.helpers import wait_for
from tests.worker.harness import asks, bot_log

pytestmark = pytest.mark.slow

CODE = "the secret code 4242"
STORY = "Sure, here it is: " + " ".join(f"word{i}" for i in range(12)) + f" and {CODE} opens the door, " + " ".join(
    f"more{i}" for i in range(40))


def _sent_texts(world, uid: int) -> list[str]:
    """Every text the bot sent or edited on Discord."""
    return [str((c.json or {}).get("content")) for c in world.discord.calls_by(uid)
            if c.method in ("POST", "PATCH") and "/messages" in c.path and (c.json or {}).get("content")]


def _warnings(bot: int) -> list[str]:
    return [message for level, message in bot_log(bot) if level == "WARNING" and message.startswith("Moderation:")]


def test_blocked_words_and_patterns_in_messages_and_streamed_answers(world):
    bot = world.add_bot("moderated", user_cooldown_seconds=0, moderation_words=["forbidden"],
                        moderation_patterns=[r"secret\s+code\s+\d+"], moderation_action="refuse")
    world.wait_online(bot)
    uid = world.discord_ids[bot]
    alice = world.discord.alice["id"]

    # A message with a blocked word: the short refusal, and no model runs.
    reply = world.wait_reply(world.mention(bot, "tell me the FORBIDDEN thing"), containing=REFUSAL)
    assert reply["content"] == REFUSAL
    assert not any("FORBIDDEN" in str(body) for body in world.llm.chat_requests())
    logged = wait_for(lambda: _warnings(bot), 10, message="the moderation event in the Logs")
    assert logged == [f'Moderation: a message (channel {world.discord.channel_id}, user {alice}) matched the word '
                      '"forbidden": refused']

    # An answer that turns out to match while it streams: cut there (the model's stream closed), and the
    # streamed message edited to the refusal; the matching words were never sent.
    world.llm.script_for(asks("give me the code"), Reply(text=STORY, chunks=60, chunk_delay=0.1))
    hangups = world.llm.hangups
    asked = world.mention(bot, "give me the code")
    # (what came before the match went out as it streamed)
    world.discord.wait_call(lambda c: c.bot_id == uid and c.method in ("POST", "PATCH")
                            and "word3" in str((c.json or {}).get("content")), 20)
    wait_for(lambda: [r for r in world.discord.replies_to(asked["id"]) if r["content"] == REFUSAL], 20,
             message="the streamed answer replaced by the refusal")
    assert len(world.discord.replies_to(asked["id"])) == 1
    assert not [t for t in _sent_texts(world, uid) if "4242" in t or "more39" in t]
    wait_for(lambda: world.llm.hangups > hangups, 10, message="the model's stream closed at the match")
    wait_for(lambda: len(_warnings(bot)) == 2, 10)
    assert _warnings(bot)[1] == (f"Moderation: an answer (channel {world.discord.channel_id}, user {alice}) matched "
                                 "pattern 1: replaced by the refusal")

    # The admin chooses "ignore": from the next message on, such an answer is withdrawn (its message deleted).
    with session_scope() as session:
        bots.update_bot(session.get(Bot, bot), {"moderation_action": "ignore"}, session=session)
    world.llm.script_for(asks("the code again"), Reply(text=STORY, chunks=60, chunk_delay=0.1))
    asked = world.mention(bot, "the code again")
    posted = world.discord.wait_call(lambda c: c.bot_id == uid and c.method == "POST" and "/messages" in c.path
                                     and str(((c.json or {}).get("message_reference") or {}).get("message_id"))
                                     == asked["id"], 20)
    assert "4242" not in str((posted.json or {}).get("content"))
    world.discord.wait_call(lambda c: c.bot_id == uid and c.method == "DELETE" and c.time > posted.time, 20)
    assert world.discord.replies_to(asked["id"]) == []
    assert not [t for t in _sent_texts(world, uid) if "4242" in t]
    wait_for(lambda: len(_warnings(bot)) == 3, 10)
    assert _warnings(bot)[2].endswith("matched pattern 1: withheld")
    # A clean answer still goes out whole.
    world.wait_reply(world.mention(bot, "just say hello"), containing="just say hello")
    assert not any("tell me" in m or "give me" in m or "code again" in m for _, m in bot_log(bot))


def test_the_decision_model_silences_an_abusive_message(world):
    bot = world.add_bot("careful", user_cooldown_seconds=0, moderation_ask_model=True, moderation_action="ignore")
    world.wait_online(bot)

    def moderator_asked(about: str):
        return lambda body: "abusive" in json.dumps(body.get("format") or body.get("response_format") or {}) \
            and about in str(body.get("messages", [])[-1:])

    world.llm.script_for(moderator_asked("you are useless"), Reply(json={"abusive": True}, chunks=1))
    ignored = world.mention(bot, "you are useless")
    # Another message is checked, judged acceptable (the fake's default) and answered: the barrier.
    world.wait_reply(world.mention(bot, "what a nice day"), containing="what a nice day")
    assert world.discord.replies_to(ignored["id"]) == []
    asked = [body for body in world.llm.chat_requests() if "you are useless" in str(body.get("messages", [])[-1:])]
    assert len(asked) == 1 and "abusive" in json.dumps(asked[0].get("format"))  # the check only, no answer
    logged = wait_for(lambda: _warnings(bot), 10)
    assert logged == [f"Moderation: a message (channel {world.discord.channel_id}, user {world.discord.alice['id']}) "
                      "matched the decision model's check (abusive): ignored"]
