"""A channel's LLM overrides inherit what they leave out from the bot's own settings, as a bot's override
inherits from the global setting: the provider, its server and its API key, the model, the temperature."""

from __future__ import annotations

import pytest

from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.services import bots, channel_personas, llm_settings

CHANNEL = "333333333333333333"


def test_a_channel_override_inherits_the_rest_from_the_bot(grobot_env):
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="inheritor")
        llm_settings.set_llm(session=session, category="output", bot_id=bot.id, provider="openai",
                             base_url="http://127.0.0.1:9/v1", model="bot-model", temperature=0.3, api_key="sk-bot")
        channel_personas.set_persona(bot, CHANNEL, session=session,
                                     llms={"output": {"model": "channel-model"}, "decision": {"temperature": 0.1}})
        persona = channel_personas.for_message(session=session, bot_id=bot.id, channel_id=None,
                                               parent_channel_id=CHANNEL)  # a thread of the channel
        assert persona is not None
        own = llm_settings.effective_llms(session=session, bot_id=bot.id)
        llms = llm_settings.effective_llms(session=session, bot_id=bot.id, channel=persona.llms)
        output = llms["output"]
        assert (output.provider, output.base_url, output.model, output.temperature, output.api_key) == (
            "openai", "http://127.0.0.1:9/v1", "channel-model", 0.3, "sk-bot")
        assert output.source == "channel"
        assert llms["decision"].temperature == 0.1 and llms["decision"].model == own["decision"].model
        assert llms["tools"] == own["tools"]

        # Another provider's own service needs its key, which a channel does not have: refused, nothing saved.
        with pytest.raises(ValidationError, match="needs an API key"):
            channel_personas.set_persona(bot, CHANNEL, session=session, llms={"output": {"provider": "anthropic"}})
        assert channel_personas.personas(bot, session=session)[0].llms["output"] == {"model": "channel-model"}
