"""A bot's log tells its story (issue 14 item 4): the process starting and stopping with its reason,
"Discord rejected the token", a failed Test Chat run, the daily-limit warning and each answered
message (where, from whom, run, duration, tokens; never what was said), all as log rows of the bot."""

from __future__ import annotations

import re

import pytest

from grobot.core.db import session_scope
from grobot.core.models import Bot
from grobot.core.services import bots, tester_chat
from tests.fakes.llm import Reply
from tests.helpers import wait_for
from tests.worker.harness import bot_log, fleet

pytestmark = pytest.mark.slow


def _has(bot_id: int, pattern: str, level: str | None = None) -> bool:
    return any(re.search(pattern, message) and (level is None or lvl == level) for lvl, message in bot_log(bot_id))


def _token_of(bot_id: int) -> str:
    with session_scope(readonly=True) as session:
        return bots.get_token(bots.get_bot(bot_id, session=session))


def test_the_bots_log_tells_its_story(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        story = world.add_bot("story")
        capped = world.add_bot("capped", daily_call_limit=1)
        rejected = world.add_bot("rejected")
        world.discord.revoke(_token_of(rejected))  # 401 at login
        world.llm.script_for(lambda req: "please fail" in str(req.get("messages", "")),
                             Reply(status=500, error="upstream exploded"), persistent=True)
        world.start_supervisor()
        world.wait_online(story)
        world.wait_online(capped)

        # An answered message: one INFO line with channel, user, run, time and tokens, never the text.
        asked = world.mention(story, "the secret word is pineapple")
        world.wait_reply(asked, containing="pineapple")
        wait_for(lambda: _has(story, r"^Answered a message \(channel \d+, .+, run \d+\) in [\d.]+ (ms|s): "
                                     r"\d+ LLM calls?, [\d,]+ tokens in, [\d,]+ out$", "INFO"), 20,
                 message=lambda: f"the answered message in the bot's log: {bot_log(story)}")

        # A Test Chat run that fails on the LLM server.
        with session_scope() as session:
            conv = tester_chat.create_session(story, session=session)
            tester_chat.submit(conv.id, "please fail now", session=session)
        wait_for(lambda: _has(story, rf"^The chain failed for bot {story}: .*500"), 30,
                 message=lambda: f"the failed Test Chat run in the bot's log: {bot_log(story)}")

        # The daily limit: the second message is refused, and the bot logs one WARNING.
        first = world.mention(capped, "one")
        world.wait_reply(first, containing="one")
        # The reply shows before its run is stored; the stored run (its log line, written with its LLM call's
        # count) comes first: a run still in flight may exceed a limit (docs/limits.md).
        wait_for(lambda: _has(capped, r"^Answered a message "), 20,
                 message=lambda: f"the first answer in the bot's log: {bot_log(capped)}")
        second = world.mention(capped, "two")
        world.wait_reply(second, containing="daily limit")
        wait_for(lambda: _has(capped, r"^Bot capped reached its daily LLM-call limit \(\d+ of 1\); no LLM calls "
                                      r"until 00:00 UTC$", "WARNING"), 20,
                 message=lambda: f"the daily-limit warning in the bot's log: {bot_log(capped)}")

        # The token Discord refused.
        wait_for(lambda: _has(rejected, r"Discord rejected the token; not retrying until it changes", "ERROR"), 30,
                 message=lambda: f"the rejected token in the bot's log: {bot_log(rejected)}")

        # Disabling the bot: its process stops, and the log says why.
        with session_scope() as session:
            bots.update_bot(session.get(Bot, story), {"enabled": False}, session=session)
        world.wait_state(story, "stopped", 20)
        wait_for(lambda: _has(story, rf"^Bot {story}: process \d+ stopped \(disabled; "), 20,
                 message=lambda: f"the stop in the bot's log: {bot_log(story)}")

        messages = [m for _, m in bot_log(story)]
        assert any(re.match(rf"^Bot {story} \(story\): started process \d+$", m) for m in messages), messages
        assert any(m.startswith("Online as story") for m in messages), messages
        assert not any("pineapple" in m or "please fail" in m for m in messages), "no message content in the log"
