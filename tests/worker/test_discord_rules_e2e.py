"""The reply rules as a Discord user meets them (a real bot process against the fake Discord):
a thread follows its channel's rules (or its own, when it is listed itself)."""

from __future__ import annotations

import pytest

from grobot.core.db import session_scope
from grobot.core.models import Bot
from grobot.core.services import bots
from tests.helpers import wait_for
from tests.worker.harness import fleet

pytestmark = pytest.mark.slow


def test_a_thread_follows_the_rules_of_its_channel(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        general, random = world.discord.channel_id, world.discord.other_channel_id
        bot = world.add_bot("threader", user_cooldown_seconds=0, allowed_channel_ids=[str(general)])
        world.start_supervisor()
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


def _answered(world, bot: int, channel_id: int, text: str) -> bool:
    try:
        world.wait_reply(world.mention(bot, text, channel_id=channel_id), containing=text, timeout=3)
        return True
    except AssertionError:
        return False
