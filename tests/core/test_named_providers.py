"""Providers by name: Mistral, xAI, DeepSeek, Groq, OpenRouter, each against a fake speaking its dialect."""

from __future__ import annotations

import io
import re
import sys

import pytest

from grobot.cli.main import main
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.llm import providers
from grobot.core.services import bots, llm_settings
from grobot.core.store.local import run_chain
from tests.fakes.llm import FakeToolCatalog, Reply

NAMED = ("mistral", "xai", "deepseek", "groq", "openrouter")
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
MISTRAL_ID = re.compile(r"^[A-Za-z0-9]{9}$")


def cli(capsys, monkeypatch, *argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def weather() -> FakeToolCatalog:
    async def get_weather(city: str) -> str:
        return f"sunny in {city}"

    return FakeToolCatalog().add("get_weather", get_weather, schema=CITY, read_only=True)


def message(bot_id: int, text: str) -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key="test:named", content=text, author_id="7",
                           author_name="bob", platform="test_chat")


def set_every_category(capsys, monkeypatch, bot: str, provider: str, base_url: str, *extra: str) -> None:
    for category in ("decision", "tools", "output"):
        code, out, err = cli(capsys, monkeypatch, "llm", "set", "--category", category, "--bot", bot, "--provider", provider,
                             "--base-url", base_url, "--api-key-stdin", *extra, stdin="sk-named-key\n")
        assert code == 0, err


def tool_call_ids(body: dict) -> list[str]:
    ids = []
    for m in body.get("messages") or []:
        ids += [c["id"] for c in m.get("tool_calls") or []]
        if m.get("tool_call_id"):
            ids.append(m["tool_call_id"])
    return ids


def mistral_rejects(body: dict) -> bool:
    """Mistral's API refuses every tool-call id that is not 9 letters and digits."""
    return any(not MISTRAL_ID.match(i) for i in tool_call_ids(body))


def deepseek_rejects(body: dict) -> bool:
    """DeepSeek's API refuses ``response_format`` ``json_schema``."""
    return (body.get("response_format") or {}).get("type") == "json_schema"


def test_llm_set_help_lists_every_provider_with_its_entry(capsys, monkeypatch):
    with pytest.raises(SystemExit):
        cli(capsys, monkeypatch, "llm", "set", "--help")
    out = capsys.readouterr().out
    for name in NAMED:
        e = providers.ENTRIES[name]
        assert re.search(rf"^  {name}\s+.*{re.escape(e.base_url)}; default model {re.escape(e.default_model)};", out, re.M), name
    assert "xAI (Grok)" in out and "Groq; https://api.groq.com/openai/v1" in out
    assert set(llm_settings.PROVIDERS) == set(providers.ENTRIES) and set(NAMED) <= set(llm_settings.PROVIDERS)


def test_every_provider_says_whether_it_supports_tools():
    assert {n: providers.supports_tools(n, providers.ENTRIES[n].default_model) for n in NAMED} == {
        "mistral": True, "xai": True, "deepseek": True, "groq": True, "openrouter": None}  # OpenRouter: per model
    assert providers.supports_tools("gemini", "gemma-3-27b-it") is False
    assert providers.supports_tools("ollama", "gemma3:4b") is False and providers.supports_tools("ollama", "qwen3") is None
    assert providers.supports_tools("llamacpp", "SmolLM2-135M-Instruct-Q8_0.gguf") is None  # the server says at run time
    assert providers.supports_tools("anthropic", "claude-3-5-haiku-latest") is True


@pytest.mark.parametrize("provider", NAMED)
async def test_a_named_provider_answers_with_a_tool_through_its_dialect(grobot_env, fake_llm, capsys, monkeypatch, provider):
    code, _, err = cli(capsys, monkeypatch, "bot", "add", "--name", "named")
    assert code == 0, err
    set_every_category(capsys, monkeypatch, "named", provider, fake_llm.base_url_for(provider))
    if provider == "mistral":  # the fake speaks the dialect: it refuses what the service refuses
        fake_llm.script_for(mistral_rejects, Reply(status=400, error="Tool call id was call_x but must be a-z, A-Z, "
                                                                     "0-9, with a length of 9."), persistent=True)
    if provider == "deepseek":
        fake_llm.script_for(deepseek_rejects, Reply(status=400, error="This response_format type is unavailable now"),
                            persistent=True)
    fake_llm.script(Reply(json={"tools": ["get_weather"]}), Reply(json={"arguments": {"city": "Oslo"}}),
                    Reply(text="Sunny in Oslo."))
    with session_scope(readonly=True) as session:
        bot_id = bots.get_bot("named", session=session).id

    result = await run_chain(message(bot_id, "what is the weather in Oslo?"), tools=weather())

    assert result.error is None and result.text == "Sunny in Oslo."
    entry = providers.ENTRIES[provider]
    chats = [r for r in fake_llm.requests if r.method == "POST"]
    assert {r.path for r in chats} == {entry.base_url.split(".com", 1)[-1].split(".ai", 1)[-1] + "/chat/completions"}
    assert {r.headers.get("authorization") for r in chats} == {"Bearer sk-named-key"}
    assert {r.json["model"] for r in chats} == {entry.default_model}  # no --model: the provider's default
    if provider == "mistral":
        ids = tool_call_ids(chats[-1].json)
        assert len(ids) == 2 and ids[0] == ids[1] and MISTRAL_ID.match(ids[0])
    if provider == "deepseek":
        assert {r.json["response_format"]["type"] for r in chats[:2]} == {"json_object"}
    code, out, _ = cli(capsys, monkeypatch, "llm", "show", "--bot", "named", "--json")
    assert code == 0 and f'"provider": "{provider}"' in out and '"api_key": "set"' in out and "sk-named-key" not in out


async def test_mistral_native_mode_sends_tool_ids_it_accepts(grobot_env, fake_llm, capsys, monkeypatch):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="mistraly", agent_mode="native").id
    set_every_category(capsys, monkeypatch, "mistraly", "mistral", fake_llm.base_url_for("mistral"), "--model",
                       "mistral-large-latest")
    fake_llm.script_for(mistral_rejects, Reply(status=400, error="Tool call id was call_x but must be a-z, A-Z, 0-9, "
                                                                 "with a length of 9."), persistent=True)
    fake_llm.script(Reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "Rome"}}]), Reply(text="Sunny in Rome."))

    result = await run_chain(message(bot_id, "weather in Rome?"), tools=weather())

    assert result.error is None and result.text == "Sunny in Rome."
    final = fake_llm.chat_requests()[-1]  # the call that wrote the answer, after the tool's result
    ids = tool_call_ids(final)
    assert len(ids) == 2 and ids[0] == ids[1] and MISTRAL_ID.match(ids[0]), ids  # the call and its result
    assert [m["content"] for m in final["messages"] if m.get("role") == "tool"] == ["sunny in Rome"], final["messages"]


async def test_openrouter_says_plainly_when_a_model_cannot_call_tools(grobot_env, fake_llm, capsys, monkeypatch):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="router", agent_mode="native").id
    set_every_category(capsys, monkeypatch, "router", "openrouter", fake_llm.base_url_for("openrouter"), "--model",
                       "some/old-model")
    fake_llm.script_for(lambda body: bool(body.get("tools")),
                        Reply(status=404, error="No endpoints found that support tool use."), persistent=True)

    result = await run_chain(message(bot_id, "weather in Rome?"), tools=weather())

    assert result.error == ("no OpenRouter endpoint of model 'some/old-model' can call tools: use the chain agent mode, "
                            "or a model that can call tools")


def test_a_provider_s_own_service_needs_an_api_key(grobot_env, capsys, monkeypatch):
    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--provider", "mistral")
    assert code == 2 and "Mistral needs an API key for https://api.mistral.ai/v1: give it with --api-key-stdin" in err
    code, out, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--provider", "groq",
                         "--api-key-stdin", "--no-check", stdin="gsk-key\n")
    assert code == 0 and "output LLM set for global default: groq llama-3.3-70b-versatile" in out
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="output")
    assert (llm.base_url, llm.model, llm.api_key) == ("https://api.groq.com/openai/v1", "llama-3.3-70b-versatile", "gsk-key")


def test_a_stored_api_key_goes_only_to_the_provider_and_server_it_was_given_for(grobot_env, capsys, monkeypatch):
    def stored() -> tuple[str, str, str | None]:
        with session_scope(readonly=True) as session:
            llm = llm_settings.effective_llm(session=session, category="output")
        return llm.provider, llm.base_url, llm.api_key

    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--provider", "openai",
                       "--api-key-stdin", "--no-check", stdin="sk-openai-key\n")
    assert code == 0, err
    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--provider", "openai",
                       "--model", "gpt-4o")
    assert code == 0 and stored() == ("openai", "https://api.openai.com/v1", "sk-openai-key")  # same server: kept

    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--provider", "openai",
                       "--base-url", "http://127.0.0.1:9/v1")
    assert code == 0 and stored() == ("openai", "http://127.0.0.1:9/v1", None)  # another server: not sent there

    cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--provider", "openai", "--api-key-stdin",
        "--no-check", stdin="sk-openai-key\n")
    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--provider", "mistral")
    assert code == 2 and "needs an API key" in err  # the OpenAI key does not count for Mistral
    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--provider", "ollama")
    assert code == 0 and stored()[0] == "ollama" and stored()[2] is None


def test_native_mode_is_refused_for_an_output_model_that_cannot_call_tools(grobot_env, capsys, monkeypatch):
    code, _, err = cli(capsys, monkeypatch, "bot", "add", "--name", "gem")
    assert code == 0, err
    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--bot", "gem", "--provider", "gemini",
                       "--model", "gemma-3-27b-it", "--api-key-stdin", "--no-check", stdin="g-key\n")
    assert code == 0, err

    code, _, err = cli(capsys, monkeypatch, "bot", "set", "gem", "agent_mode=native")
    assert code == 2
    assert "native mode needs an output model that can call tools, and gemini gemma-3-27b-it cannot" in err

    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--bot", "gem", "--provider", "gemini",
                       "--api-key-stdin", "--no-check", stdin="g-key\n")  # the default model, gemini-2.0-flash, calls tools
    assert code == 0, err
    code, _, err = cli(capsys, monkeypatch, "bot", "set", "gem", "agent_mode=native")
    assert code == 0, err

    # Now the other way round: the bot is native, so a model without tools is refused for it ...
    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--bot", "gem", "--provider", "gemini",
                       "--model", "gemma-3-27b-it", "--api-key-stdin", "--no-check", stdin="g-key\n")
    assert code == 2 and "cannot be gemini gemma-3-27b-it, which cannot call tools, and bot 'gem' uses native mode" in err
    # ... and as the global default only while a native bot has no output model of its own.
    code, _, err = cli(capsys, monkeypatch, "llm", "set", "--category", "output", "--provider", "gemini",
                       "--model", "gemma-3-27b-it", "--api-key-stdin", "--no-check", stdin="g-key\n")
    assert code == 0, err
    with session_scope() as session:
        bots.create_bot(session=session, name="native-on-global")
        with pytest.raises(Exception, match="native mode needs an output model that can call tools"):
            bots.create_bot(session=session, name="native-too", agent_mode="native")


def test_the_web_app_s_llm_forms_list_every_named_provider():
    from grobot.pages.bot_settings import llm_section
    from grobot.pages.settings import CATEGORIES, llm_form

    for form in (str(llm_form(CATEGORIES[0]).render()), str(llm_section().render())):
        for name in NAMED:
            assert f'"{name}"' in form, name  # an option of the provider select
    assert "Empty: the provider" in str(llm_form(CATEGORIES[0]).render())  # no model: the provider's default
