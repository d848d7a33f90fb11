"""What a Discord user reads when the model misbehaves (a real bot process against the fake Discord): an
answer that is tool-call markup is asked for again and never posted; one that loops ends where the
loop starts, and the model is stopped."""

from __future__ import annotations

import json

import pytest

from tests.fakes.llm import Reply
from tests.helpers import wait_for
from tests.worker.harness import asks, fleet

pytestmark = pytest.mark.slow

MARKUP = '<tool_call>\n{"name": "files_list", "arguments": {}}\n</tool_call>'


def test_markup_is_never_posted_and_a_loop_ends_where_it_starts(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        bot = world.add_bot("careful", user_cooldown_seconds=0)
        world.start_supervisor()
        world.wait_online(bot)
        uid = world.discord_ids[bot]

        # (Plain chat: a question that names a tool by its words would run it, and its reply would state the result.)
        world.llm.script_for(asks("anything new?"), Reply(text=MARKUP, chunks=4), Reply(text="Nothing new on my side today."))
        world.wait_reply(world.mention(bot, "anything new?"), containing="Nothing new on my side today.")
        sent = [json.dumps(c.json) for c in world.discord.calls_by(uid) if c.method in ("POST", "PATCH")]
        assert sent and not any("tool_call" in body or "arguments" in body for body in sent)

        loop = "Thanks for asking! I hope you're well. " + "I hope you're well. " * 60
        world.llm.script_for(asks("how are you"), Reply(text=loop, chunks=60, chunk_delay=0.05))
        hangups = world.llm.hangups
        asked = world.mention(bot, "how are you")
        reply = world.wait_reply(asked)
        wait_for(lambda: world.discord.messages[int(reply["id"])]["content"] == "Thanks for asking! I hope you're well.",
                 20, message=lambda: f"the reply ends where the loop starts: {world.discord.messages[int(reply['id'])]}")
        wait_for(lambda: world.llm.hangups > hangups, 10, message="the model's stream was not closed")
