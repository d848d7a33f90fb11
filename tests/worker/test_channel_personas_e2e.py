"""A persona per channel, as Discord users meet it (a real bot process against the fake Discord and a
scripted fake LLM): in the channel with a persona the model receives the bot's personality with the
channel's addition and is asked with the channel's model; in a thread of that channel too; in the other
channel the bot answers as itself. A change applies at the next message, with no restart."""

from __future__ import annotations

from typing import Any

import pytest

from grobot.core.db import session_scope
from grobot.core.models import Bot
from grobot.core.services import channel_personas
from tests.fakes.llm import is_archivist_request, requested_schema
from tests.helpers import wait_for
from tests.worker.harness import fleet

pytestmark = pytest.mark.slow

ADDITION = "In this channel you speak like a pirate."


def _system(body: dict[str, Any]) -> str:
    return " ".join(str(m.get("content") or "") for m in body.get("messages") or [] if m.get("role") == "system")


def _answers(world, text: str) -> list[dict[str, Any]]:
    """The answer requests (no schema asked, not the Archivist's) of the message ``text``."""
    return [b for b in world.llm.chat_requests() if requested_schema(b) is None and not is_archivist_request(b)
            and text in str(b.get("messages"))]


def test_a_channel_persona_in_its_channel_and_threads_only(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        discord = world.discord
        bot = world.add_bot("parrot", personality="You are Polly, a helpful parrot.", user_cooldown_seconds=0)
        world.llm.script_for(lambda b: ADDITION in _system(b) and b.get("model") == "pirate-model"
                             and requested_schema(b) is None and not is_archivist_request(b),
                             "Arr, ahoy from the pirate channel", persistent=True)
        with session_scope() as session:
            channel_personas.set_persona(session.get(Bot, bot), str(discord.other_channel_id), session=session,
                                         personality=ADDITION, llms={"output": {"model": "pirate-model"}})
        world.start_supervisor()
        world.wait_online(bot)

        # In #random (the persona's channel): the model got the bot's personality, then the addition, and
        # was asked with the channel's model.
        world.wait_reply(world.mention(bot, "what is the weather in random", discord.other_channel_id),
                         containing="Arr, ahoy")
        asked = _answers(world, "what is the weather in random")
        assert asked and all(b["model"] == "pirate-model" for b in asked)
        assert "You are Polly, a helpful parrot." in _system(asked[-1]) and ADDITION in _system(asked[-1])
        assert _system(asked[-1]).index("Polly") < _system(asked[-1]).index(ADDITION)

        # In #general: the bot's own personality and model.
        world.wait_reply(world.mention(bot, "what is the weather in general"), containing="Echo:")
        own = _answers(world, "what is the weather in general")
        assert own and all(b["model"] == "fake-model" and ADDITION not in _system(b) for b in own)
        assert "You are Polly" in _system(own[-1])

        # A thread of #random answers with #random's persona.
        thread = discord.create_thread(discord.other_channel_id, "sea stories")
        world.wait_reply(world.mention(bot, "a story in the thread", thread), containing="Arr, ahoy")

        # The persona is changed (its addition removed, the model kept): the next message in #random has
        # no addition, with the same bot process.
        pid = world.status(bot).pid
        with session_scope() as session:
            persona = channel_personas.set_persona(session.get(Bot, bot), "#random", session=session, personality="")
        assert persona.label == f"#random ({discord.other_channel_id})"
        world.wait_reply(world.mention(bot, "once more in random", discord.other_channel_id), containing="Echo:")
        again = _answers(world, "once more in random")
        assert again and all(b["model"] == "pirate-model" and ADDITION not in _system(b) for b in again)
        assert world.status(bot).pid == pid


def _council_asked(world, question: str) -> list[dict[str, Any]]:
    """The council's requests (each advisor's, the synthesis's) on ``question``."""
    return [b for b in world.llm.chat_requests() if question in str(b.get("messages"))
            and ("You are the " in _system(b) or "You chair an advisory council" in _system(b))]


def test_the_council_meets_with_the_channels_persona(grobot_env, tmp_path):
    """/council asked in a thread of the persona's channel: every advisor and the synthesis get the channel's
    addition and the channel's model of their category (an advisor that names its own model keeps it);
    asked in another channel, the council is the bot's own."""
    from grobot.core.services import council

    with fleet(grobot_env, tmp_path) as world:
        discord = world.discord
        bot = world.add_bot("senate", personality="You are the Senate.", user_cooldown_seconds=0)
        with session_scope() as session:
            council.set_council(bot, session=session, enabled=True)
            council.set_advisor(bot, "Visionary", session=session, model="seer-model")
            channel_personas.set_persona(session.get(Bot, bot), str(discord.other_channel_id), session=session,
                                         personality=ADDITION, llms={"output": {"model": "pirate-model"}})
        world.start_supervisor()
        world.wait_online(bot)
        uid = world.discord_ids[bot]
        thread = discord.create_thread(discord.other_channel_id, "war council")

        def synthesised(question: str) -> bool:
            return any("You chair" in _system(b) for b in _council_asked(world, question))

        discord.invoke_command(uid, "council", {"question": "Shall we sail west?"}, channel_id=int(thread))
        wait_for(lambda: synthesised("Shall we sail west?"), 60, message="the council in the thread")
        asked = _council_asked(world, "Shall we sail west?")
        assert len(asked) == 6 and all(ADDITION in _system(b) for b in asked)
        by_model = sorted(b["model"] for b in asked)
        assert by_model == ["pirate-model"] * 5 + ["seer-model"], by_model

        discord.invoke_command(uid, "council", {"question": "Shall we stay home?"})
        wait_for(lambda: synthesised("Shall we stay home?"), 60, message="the council in #general")
        home = _council_asked(world, "Shall we stay home?")
        assert len(home) == 6 and not any(ADDITION in _system(b) for b in home)
        assert sorted(b["model"] for b in home) == ["fake-model"] * 5 + ["seer-model"]
