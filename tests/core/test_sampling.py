"""Sampling that fits small models: the answers of the embedded models are sampled with a repetition
penalty and llama.cpp's DRY (what stops a small model's loops), the JSON roles at temperature 0 with
none; an admin sets the penalty for any provider (``llm set --repeat-penalty``), 1 turns it off."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from grobot.cli.main import main
from grobot.core.agents.chain import wait_for_background
from grobot.core.llm import embedded, sampling
from grobot.core.llm.embedded import ServerInfo
from grobot.core.store.local import run_chain
from tests.core.tool_chain_helpers import make_bot, message, pick
from tests.fakes.llm import FakeLLM, FakeToolCatalog, Reply, requested_schema, use_fake_llm


class FakeServers:
    """The supervisor's llama.cpp servers, as a bot process sees them: every embedded model is ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url

    def request(self, model: str, context_window: int) -> ServerInfo:
        return ServerInfo(model=model, status="running", url=self.url, supports_tools=True)


@pytest.fixture
def embedded_on_fake(fake_llm: FakeLLM) -> Iterator[FakeLLM]:
    """The demo model's server is the fake LLM (it speaks llama.cpp's OpenAI-compatible API)."""
    embedded.set_local_directory(FakeServers(fake_llm.url))
    try:
        yield fake_llm
    finally:
        embedded.set_local_directory(None)


def weather() -> FakeToolCatalog:
    async def get_weather(city: str) -> str:
        return f"sunny in {city}"

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    return FakeToolCatalog().add("get_weather", get_weather, schema=schema, read_only=True)


def answer_and_json_requests(fake: FakeLLM) -> tuple[list[dict], list[dict]]:
    bodies = fake.chat_requests()
    return [b for b in bodies if requested_schema(b) is None], [b for b in bodies if requested_schema(b) is not None]


async def test_the_demo_models_answers_are_sampled_against_loops_and_its_choices_are_not(grobot_env, embedded_on_fake):
    bot_id = make_bot()  # no LLM configured: every category is the embedded demo model
    embedded_on_fake.script(pick("get_weather", city="Paris"), Reply(text="It is sunny in Paris."))

    result = await run_chain(message(bot_id, "What's the weather in Paris?"), tools=weather())
    await wait_for_background()

    assert result.error is None and result.text == "It is sunny in Paris."
    answers, choices = answer_and_json_requests(embedded_on_fake)
    assert len(answers) == 1 and choices
    body = answers[0]
    assert body["repeat_penalty"] == sampling.EMBEDDED_REPEAT_PENALTY and body["repeat_last_n"] == sampling.REPEAT_LAST_N
    assert body["dry_multiplier"] == sampling.DRY_MULTIPLIER and body["min_p"] == sampling.MIN_P
    for choice in choices:  # the Tool Identifier's and Extractor's JSON: no penalty on keys and quotes
        assert choice["temperature"] == 0 and not {"repeat_penalty", "dry_multiplier", "min_p"} & set(choice)


async def test_an_admin_sets_the_penalty_for_any_provider_and_1_turns_it_off(grobot_env, fake_llm, capsys):
    bot_id = make_bot(name="Tuned")
    use_fake_llm(fake_llm, bot_id=bot_id)  # Ollama: by default nothing is sent (the server's own default)
    fake_llm.script(Reply(text="One."), Reply(text="Two."), Reply(text="Three."), Reply(text="Four."))

    await run_chain(message(bot_id, "hello"), tools=FakeToolCatalog())
    assert "repeat_penalty" not in fake_llm.chat_requests()[-1]["options"]

    assert main(["llm", "set", "--bot", "Tuned", "--category", "output", "--provider", "ollama",
                 "--base-url", fake_llm.url, "--model", "fake-model", "--repeat-penalty", "1.3"]) == 0
    await run_chain(message(bot_id, "hello again"), tools=FakeToolCatalog())
    assert fake_llm.chat_requests()[-1]["options"]["repeat_penalty"] == 1.3

    assert main(["llm", "set", "--bot", "Tuned", "--category", "output", "--provider", "openai",
                 "--base-url", fake_llm.openai_url, "--model", "fake-model", "--repeat-penalty", "1.2"]) == 0
    await run_chain(message(bot_id, "and again"), tools=FakeToolCatalog())
    assert fake_llm.chat_requests()[-1]["frequency_penalty"] == 0.4  # OpenAI's own field, on its scale

    assert main(["llm", "set", "--bot", "Tuned", "--category", "output", "--provider", "llamacpp",
                 "--model", embedded.DEMO_MODEL, "--repeat-penalty", "1"]) == 0
    embedded.set_local_directory(FakeServers(fake_llm.url))
    try:
        await run_chain(message(bot_id, "once more"), tools=FakeToolCatalog())
    finally:
        embedded.set_local_directory(None)
    last = fake_llm.chat_requests()[-1]
    assert not {"repeat_penalty", "dry_multiplier"} & set(last)  # 1: off, even on the embedded model
    await wait_for_background()

    assert main(["llm", "set", "--bot", "Tuned", "--category", "output", "--provider", "ollama",
                 "--repeat-penalty", "3"]) == 2
    assert "--repeat-penalty: must be between 1 and 2" in capsys.readouterr().err
