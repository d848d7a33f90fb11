"""Key checks, connection checks of typed settings, overrides that store only what was set, and the
suggestion of another provider when a server cannot be reached (issues 14 item 3, 15 items 4 and 7)."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.models import LLMSetting
from grobot.core.services import bots, llm_checks, llm_settings, llm_sources
from grobot.core.settings import get_settings
from grobot.core.store.local import run_chain
from tests.core.test_named_providers import cli
from tests.fakes.llm import EventCollector, use_fake_llm
from tests.ui.webapp import free_port

GOOD_KEY = "sk-good-key-1234"


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


def stored_rows() -> list[tuple]:
    with session_scope(readonly=True) as session:
        rows = session.exec(select(LLMSetting).order_by(LLMSetting.id)).all()
        return [(r.bot_id, r.category, r.provider, r.base_url, r.model, r.context_window, r.temperature,
                 r.api_key_enc is not None) for r in rows]


# --------------------------------------------------------------------------- the check itself


async def test_the_check_asks_the_typed_server_and_names_a_rejected_key(fake_llm):
    fake_llm.api_keys = {GOOD_KEY}
    ok = await llm_checks.check_connection(provider="openai", base_url=fake_llm.openai_url, api_key=GOOD_KEY)
    assert ok.ok and ok.models == ("fake-model", "llama3.2")
    assert ok.message == f"Connected to OpenAI at {fake_llm.openai_url}: 2 models available"
    assert fake_llm.requests[-1].headers["authorization"] == f"Bearer {GOOD_KEY}"

    rejected = await llm_checks.check_connection(provider="mistral", base_url=fake_llm.base_url_for("mistral"),
                                                 api_key="sk-wrong")
    assert (rejected.status, rejected.message) == (
        "rejected", f"API key rejected by Mistral at {fake_llm.base_url_for('mistral')}")
    anthropic = await llm_checks.check_connection(provider="anthropic", base_url=fake_llm.anthropic_url,
                                                  api_key="sk-wrong")
    assert anthropic.message.startswith("API key rejected by Anthropic")

    url = dead_url()
    dead = await llm_checks.check_connection(provider="openai", base_url=url, api_key=GOOD_KEY)
    assert (dead.status, dead.message) == ("unreachable", f"OpenAI at {url} cannot be reached")


# --------------------------------------------------------------------------- llm set: the key check


def test_llm_set_checks_a_new_key_first_and_never_saves_a_rejected_one(grobot_env, fake_llm, capsys, monkeypatch):
    fake_llm.api_keys = {GOOD_KEY}
    base = ("llm", "set", "--category", "output", "--provider", "openai", "--base-url", fake_llm.openai_url,
            "--api-key-stdin")
    code, out, err = cli(capsys, monkeypatch, *base, stdin="sk-typo\n")
    assert code == 2
    assert err.startswith(f"error: API key rejected by OpenAI at {fake_llm.openai_url}; the key was not saved")
    assert "sk-typo" not in out + err
    assert stored_rows() == []
    code, out, err = cli(capsys, monkeypatch, *base, stdin=f"{GOOD_KEY}\n")
    assert code == 0, err
    assert [r.path for r in fake_llm.requests if r.method == "GET"] == ["/v1/models", "/v1/models"]
    with session_scope(readonly=True) as session:
        assert llm_settings.effective_llm(session=session, category="output").api_key == GOOD_KEY


def test_an_unreachable_provider_is_said_so_and_no_check_saves_anyway(grobot_env, fake_llm, capsys, monkeypatch):
    use_fake_llm(fake_llm, categories=("decision",))  # another provider configured: the error names it
    url = dead_url()
    base = ("llm", "set", "--category", "output", "--provider", "openai", "--base-url", url, "--api-key-stdin")
    code, _, err = cli(capsys, monkeypatch, *base, stdin=f"{GOOD_KEY}\n")
    assert code == 2
    assert err.startswith(f"error: OpenAI at {url} cannot be reached, so the API key could not be checked; "
                          "nothing was saved (--no-check saves it anyway).")
    assert f"ollama (fake-model at {fake_llm.url}, the global decision default)" in err
    assert [row[1] for row in stored_rows()] == ["decision"]

    code, out, err = cli(capsys, monkeypatch, *base, "--no-check", stdin=f"{GOOD_KEY}\n")
    assert code == 0, err
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="output")
    assert (llm.base_url, llm.api_key) == (url, GOOD_KEY)


# --------------------------------------------------------------------------- overrides store only what was set


def test_a_bot_override_stores_only_what_was_set_and_follows_ollama_host(grobot_env, fake_llm, capsys, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", fake_llm.url)
    get_settings.cache_clear()
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="inherits").id
    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "tools", "--provider", "ollama",
                       "--model", "qwen2.5:7b", "--temperature", "0.1")
    assert code == 0, err
    code, out, err = cli(capsys, monkeypatch, "llm", "set", "--category", "tools", "--bot", "inherits",
                         "--provider", "ollama", "--context-window", "4096")
    assert code == 0, err
    assert "tools LLM set for bot 'inherits': ollama qwen2.5:7b" in out
    assert stored_rows()[-1] == (bot_id, "tools", "ollama", "", None, 4096, None, False)  # nothing copied

    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="tools", bot_id=bot_id)
        views = llm_sources.override_views(session=session, bot_id=bot_id)
    assert (llm.base_url, llm.model, llm.context_window, llm.temperature, llm.source) == (
        fake_llm.url, "qwen2.5:7b", 4096, 0.1, "bot")
    tools = views["tools"]
    assert tools.overridden and tools.provider.own == "ollama"
    assert tools.fields["base_url"] == llm_sources.FieldSource("", fake_llm.url, "environment variable OLLAMA_HOST")
    assert tools.fields["model"] == llm_sources.FieldSource("", "qwen2.5:7b", "global setting")
    assert tools.fields["context_window"].own == "4096"
    assert tools.fields["temperature"] == llm_sources.FieldSource("", "0.1", "global setting")
    assert not views["output"].overridden and views["output"].fields["temperature"].source == "default"

    code, out, err = cli(capsys, monkeypatch, "llm", "show", "--bot", "inherits", "--json")
    shown = {row["category"]: row for row in json.loads(out)}
    assert shown["tools"]["inherited"] == {"base_url": "environment variable OLLAMA_HOST", "model": "global setting",
                                           "temperature": "global setting", "repeat_penalty": "provider default"}
    assert "inherited" not in shown["output"]  # no override: all of it is the global default's
    code, out, err = cli(capsys, monkeypatch, "llm", "show", "--bot", "inherits")
    assert "base url: environment variable OLLAMA_HOST; model: global setting" in out

    # OLLAMA_HOST changes: the bot follows, as nothing of it was copied into its row.
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:1")
    get_settings.cache_clear()
    with session_scope(readonly=True) as session:
        assert llm_settings.effective_llm(session=session, category="tools", bot_id=bot_id).base_url == \
            "http://127.0.0.1:1"


def test_an_override_of_another_provider_takes_that_provider_s_defaults(grobot_env, fake_llm):
    use_fake_llm(fake_llm, categories=("output",), model="llama3.2")  # global: ollama
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="switcher").id
        llm_settings.set_llm(session=session, category="output", bot_id=bot_id, provider="groq", api_key="gsk")
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="output", bot_id=bot_id)
        view = llm_sources.override_views(session=session, bot_id=bot_id)["output"]
    assert (llm.base_url, llm.model, llm.api_key) == ("https://api.groq.com/openai/v1", "llama-3.3-70b-versatile", "gsk")
    assert view.fields["model"] == llm_sources.FieldSource("", "llama-3.3-70b-versatile", "provider default")
    assert view.fields["base_url"].source == "provider default"


# --------------------------------------------------------------------------- another provider, never a silent switch


async def test_an_unreachable_output_server_names_the_bot_s_other_provider_and_does_not_switch(grobot_env, fake_llm):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Stranded").id
    use_fake_llm(fake_llm, bot_id=bot_id, provider="openai", categories=("decision", "tools"))
    url = f"http://127.0.0.1:{free_port()}"
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="output", bot_id=bot_id, provider="ollama", base_url=url,
                             model="llama3.2")
    events = EventCollector()
    result = await run_chain(IncomingMessage(bot_id=bot_id, conversation_key="test:stranded", content="hello",
                                             author_id="7", author_name="bob", platform="test_chat"), sink=events)
    expected = (f"cannot reach the ollama server at {url} (is it running?). Another configured provider could serve "
                f"the output model: openai (fake-model at {fake_llm.openai_url}, the bot's decision model); choose it "
                "in Settings or with `python -m grobot llm set` (GroBot does not switch by itself).")
    assert result.error == expected
    assert events.of("error")[-1].data["message"] == expected
    assert not any(r.path.endswith("/chat/completions") for r in fake_llm.requests)  # never answered by openai


def test_the_suggestion_prefers_the_bot_s_own_settings_then_the_global_ones(grobot_env, fake_llm):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Suggested").id
    use_fake_llm(fake_llm, categories=("tools",))  # global tools: ollama at the fake
    with session_scope(readonly=True) as session:
        hint = llm_checks.suggestion(session=session, category="output", provider="openai",
                                     base_url="http://127.0.0.1:9/v1", bot_id=bot_id)
        none = llm_checks.suggestion(session=session, category="output", provider="ollama", base_url=fake_llm.url,
                                     bot_id=bot_id)
    assert f"ollama (fake-model at {fake_llm.url}, the global tools default)" in hint
    assert none == ""


@pytest.mark.parametrize("provider", ["openai", "gemini"])
async def test_a_server_without_a_model_list_is_asked_for_one_token(fake_llm, provider):
    """A server whose model list is missing (404) is checked with a one-token answer instead."""
    fake_llm.no_model_list = True
    result = await llm_checks.check_connection(provider=provider, base_url=fake_llm.base_url_for(provider),
                                               api_key="k", model="fake-model")
    assert result.ok and result.models == ()
    assert result.message.endswith(": it answered")
    [chat] = fake_llm.chat_requests()
    assert chat.get("max_tokens", chat.get("generationConfig", {}).get("maxOutputTokens")) == 1


def test_a_bot_s_new_key_is_checked_with_the_server_its_override_inherits(grobot_env, fake_llm, capsys, monkeypatch):
    use_fake_llm(fake_llm, provider="openai", categories=("output",), api_key=GOOD_KEY)  # global: the fake
    with session_scope() as session:
        bots.create_bot(session=session, name="own-key")
    fake_llm.api_keys = {GOOD_KEY, "sk-bot-own"}
    code, out, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--bot", "own-key",
                         "--provider", "openai", "--api-key-stdin", stdin="sk-bot-own\n")
    assert code == 0, err
    assert fake_llm.requests[-1].headers["authorization"] == "Bearer sk-bot-own"  # not api.openai.com
    assert stored_rows()[-1][3] == ""  # the URL is still inherited, not copied
