"""What the web app says about a refused input: one plain sentence naming the field as the form labels
it (``sentences`` over a service's ``field: problem``); the CLI keeps its own hint for the API key."""

from __future__ import annotations

import pytest

from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.services import bots, costs, council, llm_settings
from grobot.core.services.validation import sentences, validate


def refusal(work) -> str:
    """The web app's sentence for the ValidationError ``work`` raises."""
    with pytest.raises(ValidationError) as caught:
        work()
    return sentences(str(caught.value))


def test_a_bot_s_llamacpp_override_without_a_model_names_the_model_field(grobot_env) -> None:
    """Its model is required when its parent is not llamacpp too (there is no GGUF file to inherit)."""
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="output", provider="ollama")
        bot_id = bots.create_bot(session=session, name="gguf").id
        text = refusal(lambda: llm_settings.set_llm(session=session, category="output", bot_id=bot_id,
                                                    provider="llamacpp", model=""))
    assert text == "Model is required for the llamacpp provider (the GGUF file to run)."


def test_a_llamacpp_base_url_names_the_base_url_field() -> None:
    with pytest.raises(ValidationError) as caught:
        validate(llm_settings.LLMFields, {"provider": "llamacpp", "model": "", "base_url": "http://x"})
    assert str(caught.value).startswith("base_url: must be empty for the llamacpp provider")


def test_a_missing_api_key_is_one_sentence_about_the_api_key_without_cli_options(grobot_env) -> None:
    with session_scope() as session:
        text = refusal(lambda: llm_settings.set_llm(session=session, category="output", provider="openai",
                                                    model="gpt-4o-mini"))
    assert text == ("API key is required for OpenAI or any OpenAI-compatible server at "
                    "https://api.openai.com/v1.")
    assert "--" not in text


def test_a_new_advisor_without_a_role_and_a_bad_currency(grobot_env) -> None:
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Sage").id
        assert refusal(lambda: council.set_advisor(bot_id, "Zed", session=session)) == (
            "Role is required for a new advisor (what Zed looks at, and how).")
        assert refusal(lambda: costs.set_currency("12", session=session)) == (
            "Currency must be a three-letter code such as EUR, USD or GBP.")


@pytest.mark.parametrize(("message", "expected"), [
    ("api_key: required for Mistral at https://api.mistral.ai/v1",
     "API key is required for Mistral at https://api.mistral.ai/v1."),
    ("base_url: must start with http:// or https://", "Base URL must start with http:// or https://."),
    ("provider: unknown provider 'x'; one of: ollama, openai", "Provider: Unknown provider 'x'; one of: ollama, openai."),
    ("allowed_channel_ids: 'general' is not a Discord channel id (digits only)",
     "Allowed channel ids: 'general' is not a Discord channel id (digits only)."),
    ("keywords: a keyword is longer than 100 characters", "Keywords: A keyword is longer than 100 characters."),
    ("name: required; max_tool_rounds: must be between 0 and 20", "Name is required. Max tool rounds must be between 0 and 20."),
])
def test_sentences_never_put_is_before_a_whole_sentence(message: str, expected: str) -> None:
    assert sentences(message) == expected
