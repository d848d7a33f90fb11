"""LLM providers and the call service against the fake servers (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
import socket
import time

import pytest

from grobot.core.llm import errors, service
from grobot.core.llm.base import ChatRequest
from grobot.core.llm.registry import close_all, get_provider
from grobot.core.llm.service import LLMCallFailed, call_llm
from grobot.core.services import llm_settings
from grobot.core.services.llm_settings import EffectiveLLM
from grobot.core.settings import get_settings
from tests.fakes.llm import Reply

PROVIDERS = ["ollama", "openai"]
ALL_PROVIDERS = ["ollama", "openai", "anthropic", "gemini"]


def settings(fake, provider: str, **kw) -> EffectiveLLM:
    fields = dict(category="output", provider=provider, base_url=fake.base_url_for(provider),
                  model="fake-model", context_window=8192, temperature=0.5, api_key="sk-test", fallback_model=None,
                  supports_images=False, source="test")
    fields.update(kw)
    return EffectiveLLM(**fields)


USER = [{"role": "user", "content": "hello"}]


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
async def test_streaming_text_usage_and_tool_calls(fake_llm, provider):
    fake_llm.script(Reply(text="Hello there, friend", chunks=4, prompt_tokens=11, completion_tokens=5),
                    Reply(tool_calls=[{"name": "lookup", "arguments": {"q": "x"}}]))
    pieces: list[str] = []

    async def on_text(text: str) -> None:
        pieces.append(text)

    result = await call_llm(settings(fake_llm, provider), USER, role="test", on_text=on_text)
    assert result.text == "Hello there, friend" and len(pieces) >= 3 and "".join(pieces) == result.text
    assert (result.usage.tokens_in, result.usage.tokens_out, result.usage.estimated) == (11, 5, False)
    assert result.records[0].ttft_ms is not None and result.records[0].latency_ms >= result.records[0].ttft_ms

    tools = [{"type": "function", "function": {"name": "lookup", "description": "d", "parameters": {"type": "object"}}}]
    result = await call_llm(settings(fake_llm, provider), USER, role="test", tools=tools)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("lookup", {"q": "x"})]
    sent = fake_llm.chat_requests()[-1]["tools"]
    if provider in ("ollama", "openai"):
        assert sent == tools
    elif provider == "anthropic":
        assert sent == [{"name": "lookup", "description": "d", "input_schema": {"type": "object"}}]
    else:
        assert sent == [{"functionDeclarations": [{"name": "lookup", "description": "d", "parameters": {"type": "object"}}]}]


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
async def test_history_with_tool_calls_converts_to_the_provider_format(fake_llm, provider):
    history = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "rain"},
    ]
    result = await call_llm(settings(fake_llm, provider), history, role="test")
    body = fake_llm.chat_requests()[-1]
    if provider == "anthropic":
        assert body["system"] == "be brief"
        assert body["messages"][1]["content"] == [{"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}}]
        assert body["messages"][2] == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "rain"}]}
        assert result.text == "Echo: weather?"
    else:
        assert body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
        assert body["contents"][1] == {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]}
        assert body["contents"][2] == {"role": "user", "parts": [{"functionResponse": {"name": "get_weather",
                                                                                       "response": {"content": "rain"}}}]}
        assert result.text == "Echo: weather?"


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
async def test_structured_answers_ask_for_the_schema(fake_llm, provider):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    result = await call_llm(settings(fake_llm, provider), USER, role="test", schema=schema)
    assert json.loads(result.text) == {"ok": False}
    body = fake_llm.chat_requests()[-1]
    if provider == "ollama":
        assert body["format"] == schema
    elif provider == "openai":
        assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    elif provider == "anthropic":
        assert body["tool_choice"] == {"type": "tool", "name": "answer"} and body["tools"][-1]["input_schema"] == schema
    else:
        assert body["generationConfig"]["responseJsonSchema"] == schema


async def test_openai_server_without_json_schema_gets_json_object(fake_llm):
    fake_llm.script(Reply(status=400, error="response_format json_schema is not supported"), Reply(json={"ok": True}))
    result = await call_llm(settings(fake_llm, "openai"), USER, role="test", schema={"type": "object"})
    assert result.text == '{"ok": true}'
    assert fake_llm.chat_requests()[-1]["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_waits_for_retry_after_then_succeeds(fake_llm, provider):
    fake_llm.script(Reply(status=429, headers={"Retry-After": "0.3"}), Reply(text="finally"))
    started = time.perf_counter()
    result = await call_llm(settings(fake_llm, provider), USER, role="test")
    assert result.text == "finally" and time.perf_counter() - started >= 0.3
    assert [bool(r.error) for r in result.records] == [True, False] and "rate limiting" in result.records[0].error


async def test_429_without_retry_after_backs_off_exponentially(fake_llm, monkeypatch):
    monkeypatch.setattr(service, "RETRY_BASE_SECONDS", 0.05)
    fake_llm.script(Reply(status=429), Reply(status=429), Reply(text="ok"))
    await call_llm(settings(fake_llm, "openai"), USER, role="test")
    times = [r.time for r in fake_llm.requests]
    assert times[1] - times[0] >= 0.05 and times[2] - times[1] >= 0.1


async def test_429_gives_up_after_the_retries(fake_llm, monkeypatch):
    monkeypatch.setattr(service, "RETRY_BASE_SECONDS", 0.0)
    fake_llm.script(*[Reply(status=429)] * 6)
    with pytest.raises(LLMCallFailed) as info:
        await call_llm(settings(fake_llm, "openai"), USER, role="test")
    assert isinstance(info.value.cause, errors.RateLimited)
    assert len(fake_llm.chat_requests()) == service.MAX_RATE_LIMIT_RETRIES + 1


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
async def test_401_says_the_key_was_rejected_and_does_not_retry(fake_llm, provider):
    fake_llm.script(Reply(status=401, error="Incorrect API key provided"))
    with pytest.raises(LLMCallFailed) as info:
        await call_llm(settings(fake_llm, provider, fallback_model="other"), USER, role="test")
    message = str(info.value)
    assert message.startswith(f"API key rejected by {provider}") and "\n" not in message
    assert len(fake_llm.chat_requests()) == 1  # no retry, and no fallback model for a bad key


async def test_server_down_names_the_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    for provider, url in (("ollama", f"http://127.0.0.1:{port}"), ("openai", f"http://127.0.0.1:{port}/v1")):
        llm = EffectiveLLM("output", provider, url, "m", 8192, 0.5, None, None, False, "test")
        with pytest.raises(LLMCallFailed) as info:
            await call_llm(llm, USER, role="test")
        assert isinstance(info.value.cause, errors.ServerUnavailable)
        assert str(info.value) == f"cannot reach the {provider} server at {url} (is it running?)"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_timeout_is_retried_once(fake_llm, provider, monkeypatch):
    monkeypatch.setenv("GROBOT_LLM_TIMEOUT_SECONDS", "0.3")
    get_settings.cache_clear()  # the settings fixture clears it again after the test
    fake_llm.script(Reply(delay=0.8), Reply(text="second try"))
    result = await call_llm(settings(fake_llm, provider), USER, role="test")
    assert result.text == "second try" and "did not answer within 0.3 s" in result.records[0].error

    fake_llm.script(Reply(delay=0.8), Reply(delay=0.8))
    with pytest.raises(LLMCallFailed) as info:
        await call_llm(settings(fake_llm, provider), USER, role="test")
    assert isinstance(info.value.cause, errors.LLMTimeout) and len(info.value.records) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_context_too_long_trims_and_retries(fake_llm, provider):
    fake_llm.script(Reply(status=400, error="This model's maximum context length is 4096 tokens"), Reply(text="fits now"))
    messages = [{"role": "system", "content": "rules"}]
    for i in range(10):
        messages += [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"}]
    messages.append({"role": "user", "content": "last question"})
    result = await call_llm(settings(fake_llm, provider), messages, role="test")
    assert result.text == "fits now" and result.trimmed > 0
    first, second = fake_llm.chat_requests()
    assert len(second["messages"]) < len(first["messages"])
    assert second["messages"][0]["content"] == "rules" and second["messages"][-1]["content"] == "last question"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_empty_answer_is_retried_at_a_higher_temperature(fake_llm, provider):
    fake_llm.script(Reply(text=""), Reply(text="now with words"))
    result = await call_llm(settings(fake_llm, provider, temperature=0.2), USER, role="test")
    assert result.text == "now with words"
    first, second = fake_llm.chat_requests()
    temp = (lambda body: body["options"]["temperature"]) if provider == "ollama" else (lambda body: body["temperature"])
    assert temp(first) == 0.2 and temp(second) > 0.2

    fake_llm.script(Reply(text=""), Reply(text=""))
    with pytest.raises(LLMCallFailed) as info:
        await call_llm(settings(fake_llm, provider), USER, role="test")
    assert "empty answer" in str(info.value)


async def test_fallback_model_only_where_configured_and_announced(fake_llm):
    notices: list[str] = []

    async def on_notice(text: str) -> None:
        notices.append(text)

    fake_llm.script(Reply(status=404, error="model 'big' not found"), Reply(text="from the small one"))
    result = await call_llm(settings(fake_llm, "ollama", model="big", fallback_model="small"), USER, role="synthesizer",
                            on_notice=on_notice)
    assert result.text == "from the small one" and result.fallback_used and result.model == "small"
    assert [b["model"] for b in fake_llm.chat_requests()] == ["big", "small"]
    assert len(notices) == 1 and "'big'" in notices[0] and "fallback model 'small'" in notices[0]

    fake_llm.script(Reply(status=404, error="model 'big' not found"))
    with pytest.raises(LLMCallFailed) as info:  # no fallback configured: no silent switch
        await call_llm(settings(fake_llm, "ollama", model="big"), USER, role="synthesizer")
    assert isinstance(info.value.cause, errors.ModelNotFound) and "'big' not found" in str(info.value)


async def test_error_inside_the_stream(fake_llm):
    for provider in ALL_PROVIDERS:
        fake_llm.script(Reply(text="", error="the GPU caught fire"))
        with pytest.raises(LLMCallFailed) as info:
            await call_llm(settings(fake_llm, provider), USER, role="test")
        assert "the GPU caught fire" in str(info.value)


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
async def test_list_models_of_a_server(fake_llm, provider):
    url = fake_llm.base_url_for(provider)
    assert await llm_settings.list_server_models(provider, url, api_key="k") == ["fake-model", "llama3.2"]


async def test_clients_are_reused_per_server_and_key(fake_llm):
    a = get_provider("openai", fake_llm.openai_url, "k1")
    assert get_provider("openai", fake_llm.openai_url, "k1") is a
    assert get_provider("openai", fake_llm.openai_url, "k2") is not a
    for _ in range(5):
        await a.chat(ChatRequest(model="m", messages=USER))
    assert len({r.client for r in fake_llm.requests}) == 1  # one keep-alive connection served them all
    assert fake_llm.requests[0].headers["authorization"] == "Bearer k1"


async def test_images_go_to_ollama_as_images(fake_llm):
    message = {"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                            {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}]}
    await call_llm(settings(fake_llm, "ollama"), [message], role="test")
    sent = fake_llm.chat_requests()[-1]["messages"][0]
    assert sent["content"] == "what is this?" and sent["images"] == ["aGVsbG8="]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_llm_requests_go_through_the_proxy_the_environment_sets(fake_llm, provider, monkeypatch):
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", fake_llm.url)  # the fake plays the proxy: it records the absolute URL
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://localhost:{port}" + ("/v1" if provider == "openai" else "")
    llm = EffectiveLLM("output", provider, url, "m", 8192, 0.5, None, None, False, "test")
    with pytest.raises(LLMCallFailed):  # the "proxy" answers 404: it is no LLM server for that URL
        await call_llm(llm, USER, role="test")
    assert any(r.path.startswith(url + "/") and r.method == "POST" for r in fake_llm.requests)

    monkeypatch.setenv("NO_PROXY", "localhost")
    await close_all()  # a client reads the environment when it is made
    seen = len(fake_llm.requests)
    with pytest.raises(LLMCallFailed) as info:  # straight to the server, which is down
        await call_llm(llm, USER, role="test")
    assert isinstance(info.value.cause, errors.ServerUnavailable) and len(fake_llm.requests) == seen


async def test_ollama_host_and_api_key_from_the_environment_are_read_as_ollama_reads_them(grobot_env, fake_llm, monkeypatch):
    """OLLAMA_HOST is often ``host:port`` (as Ollama's own docs write it)."""
    from grobot.core.db import session_scope
    from grobot.core.settings import get_settings

    monkeypatch.setenv("OLLAMA_HOST", fake_llm.url.removeprefix("http://"))
    monkeypatch.setenv("OLLAMA_API_KEY", "cloud-key")  # also read like the official client does
    get_settings.cache_clear()
    try:
        with session_scope(readonly=True) as session:
            llm = llm_settings.effective_llm(session=session, category="output")  # no stored setting: OLLAMA_HOST
        result = await call_llm(llm, USER, role="test")
        assert result.text == "Echo: hello" and len(fake_llm.chat_requests()) == 1
        assert fake_llm.requests[-1].headers["authorization"] == "Bearer cloud-key"
    finally:
        get_settings.cache_clear()
