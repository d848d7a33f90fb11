"""A bot's LLM override: what Save stores and "Check connection" tries are checked by one function
(``llm_settings.validate_llm``); a value left empty, the provider included, is inherited."""

from __future__ import annotations

import pytest

from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.llm import embedded
from grobot.core.services import bots, llm_settings


def _bot(session, name: str) -> int:
    return bots.create_bot(session=session, name=name).id


def test_only_a_base_url_with_an_inherited_llamacpp_is_refused_alike_by_check_and_save(grobot_env) -> None:
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="output", provider="llamacpp", model=embedded.DEMO_MODEL)
        bot_id = _bot(session, "url-only")
        fields = {"provider": "", "base_url": "http://127.0.0.1:9", "model": ""}
        with pytest.raises(ValidationError) as checked:
            llm_settings.validate_llm(session=session, category="output", bot_id=bot_id, **fields)
        with pytest.raises(ValidationError) as saved:
            llm_settings.set_llm(session=session, category="output", bot_id=bot_id, **fields)
    assert str(checked.value) == str(saved.value) == (
        "base_url: cannot be used with llamacpp, the provider inherited from the global setting: it runs a GGUF "
        "file on this machine. Choose the provider of the server at this URL (ollama, openai, ...)")


def test_an_override_without_a_provider_stores_its_parents_and_talks_to_what_it_inherits(grobot_env) -> None:
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="tools", provider="ollama", base_url="http://10.0.0.5:11434",
                             model="qwen2.5")
        bot_id = _bot(session, "inherits")
        checked = llm_settings.validate_llm(session=session, category="tools", bot_id=bot_id, provider="",
                                            temperature="0.1")
        assert (checked.provider_inherited, checked.data.provider, checked.base_url, checked.model) == (
            True, "ollama", "http://10.0.0.5:11434", "qwen2.5")
        row = llm_settings.set_llm(session=session, category="tools", bot_id=bot_id, provider="", temperature="0.1")
        assert (row.provider, row.base_url, row.model, row.temperature) == ("ollama", "", None, 0.1)


def test_a_llamacpp_override_inherits_the_gguf_file_of_its_parent(grobot_env) -> None:
    """The card said an empty Model inherits the global setting's GGUF file, and Save said it was required."""
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="output", provider="llamacpp", model=embedded.DEMO_MODEL,
                             context_window=2048)
        bot_id = _bot(session, "gguf-inherited")
        llm_settings.set_llm(session=session, category="output", bot_id=bot_id, provider="llamacpp", model="",
                             context_window="4096")
        llm = llm_settings.effective_llm(session=session, category="output", bot_id=bot_id)
        assert (llm.provider, llm.model, llm.context_window) == ("llamacpp", embedded.DEMO_MODEL, 4096)
        assert llm_settings.wanted_embedded_models(session=session)[embedded.DEMO_MODEL] == 4096  # the larger window
        llm_settings.set_llm(session=session, category="output", provider="ollama")
        with pytest.raises(ValidationError, match="^model: required for the llamacpp provider"):
            llm_settings.set_llm(session=session, category="output", bot_id=_bot(session, "no-gguf"),
                                 provider="llamacpp", model="")
