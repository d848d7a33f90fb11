"""A tools model that fails for good mid-run: asked again with the error, the tool results kept."""

from __future__ import annotations

import pytest
from sqlmodel import select

from grobot.core.agents import prompts
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.models import LLMCall, Message
from grobot.core.services import bots, tester_chat
from grobot.core.store.local import run_chain
from tests.fakes.llm import EventCollector, FakeToolCatalog, Reply, use_fake_llm

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def make_bot(**fields) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name="Steps", personality="You are Steps.", **fields).id


def message(bot_id: int, text: str) -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key="test:recovery", content=text, author_id="7",
                           author_name="bob", platform="test_chat")


def two_steps() -> FakeToolCatalog:
    catalog = FakeToolCatalog()
    for name in ("step_one", "step_two"):
        async def step(_n=name) -> str:
            return f"{_n} result"

        catalog.add(name, step, read_only=True)
    return catalog


def stored() -> list[Message]:
    with session_scope(readonly=True) as session:
        return list(session.exec(select(Message).order_by(Message.id)).all())


def stored_calls() -> list[LLMCall]:
    with session_scope(readonly=True) as session:
        return list(session.exec(select(LLMCall).order_by(LLMCall.id)).all())


async def test_a_tools_model_failing_once_in_round_two_is_asked_again_with_the_error(grobot_env, fake_llm):
    """The issue's target, as a tester meets it in Test Chat: the run ends ``done``, every tool result stored."""
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    with session_scope() as session:
        conv = tester_chat.create_session(bot_id, session=session)
        run_id, key = tester_chat.submit(conv.id, "do both steps", session=session).id, conv.key
    catalog = two_steps()
    fake_llm.script(Reply(json={"tools": ["step_one"]}),
                    Reply(status=500, error="model crashed: CUDA out of memory"),
                    Reply(json={"tools": ["step_two"]}),
                    Reply(text="Both steps are done."))
    sink = EventCollector()

    result = await run_chain(IncomingMessage(bot_id=bot_id, conversation_key=key, content="do both steps", author_id="t",
                                             author_name="tester", platform="test_chat", run_id=run_id),
                             sink=sink, tools=catalog)

    assert result.error is None and result.text == "Both steps are done." and sink.kinds()[-1] == "done"
    assert [c[0] for c in catalog.calls] == ["step_one", "step_two"]
    retry = fake_llm.chat_requests()[2]
    assert "model crashed: CUDA out of memory" in retry["messages"][-1]["content"]
    assert prompts.SIMPLER_IDENTIFIER in retry["messages"][-1]["content"]
    assert retry["format"]["properties"]["tool"]["enum"] == ["step_two", "none"]  # step_one has its result
    assert any("asking again with the error" in e.data["text"] for e in sink.of("thinking"))
    rows = stored()
    assert [m.role for m in rows] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [m.content for m in rows if m.role == "tool"] == ["step_one result", "step_two result"]
    assert rows[-1].content == "Both steps are done."
    with session_scope(readonly=True) as session:
        assert tester_chat.run_status(run_id, session=session) == ("done", "")
        steps = [e.data.get("text", "") for e in tester_chat.run_steps([run_id], session=session)]
    assert any("asking again with the error" in text for text in steps)
    failed = [c for c in stored_calls() if c.error]
    assert len(failed) == 1 and failed[0].agent_role == "tool_identifier" and "CUDA out of memory" in failed[0].error


async def test_a_tools_model_failing_twice_in_round_two_answers_with_the_results_so_far(grobot_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    catalog = two_steps()
    fake_llm.script(Reply(json={"tools": ["step_one"]}),
                    Reply(status=500, error="model crashed"), Reply(status=500, error="model crashed again"),
                    Reply(text="Step one is done; the next step could not be worked out."))
    sink = EventCollector()

    result = await run_chain(message(bot_id, "do both steps"), sink=sink, tools=catalog)

    assert result.error is None and result.text.startswith("Step one is done") and sink.kinds()[-1] == "done"
    assert catalog.calls == [("step_one", {})]
    answer_request = fake_llm.chat_requests()[-1]["messages"]
    assert prompts.TOOLS_MODEL_FAILED_NOTE in answer_request[0]["content"]
    assert answer_request[-1]["content"] == "step_one result"
    notice = sink.of("done")[0].data["fallbacks"][0]
    assert "tool_identifier: the model failed twice (" in notice and "model crashed again" in notice
    assert [m.role for m in stored()] == ["user", "assistant", "tool", "assistant"]
    assert stored()[2].content == "step_one result"


async def test_the_parameter_extractor_failing_once_in_round_two_is_asked_again(grobot_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    catalog = FakeToolCatalog()

    async def find_city(name: str = "") -> str:
        return "the user lives in Oslo"

    async def get_weather(city: str) -> str:
        return f"sunny in {city}"

    catalog.add("find_city", find_city, read_only=True)
    catalog.add("get_weather", get_weather, schema=CITY, read_only=True)
    # The first round asks about each group of close tools at once: each reply goes to its question.
    for tool in ("find_city", "get_weather"):
        fake_llm.script_for(lambda body, tool=tool: "Which one of these tools" in body["messages"][0]["content"]
                            and f"- {tool}:" in body["messages"][0]["content"], Reply(json={"tools": [tool]}))
    fake_llm.script(Reply(status=500, error="extractor crashed"),
                    Reply(json={"arguments": {"city": "Oslo"}}),
                    Reply(text="Sunny in Oslo."))

    result = await run_chain(message(bot_id, "find my city, then its weather"), tools=catalog)

    assert result.error is None and result.text == "Sunny in Oslo."
    assert catalog.calls == [("find_city", {}), ("get_weather", {"city": "Oslo"})]
    extractor = [r["messages"] for r in fake_llm.chat_requests() if "Fill in the arguments" in r["messages"][0]["content"]]
    assert len(extractor) == 2 and "extractor crashed" in extractor[1][-1]["content"]  # asked again, told why
    assert [m.content for m in stored() if m.role == "tool"] == ["the user lives in Oslo", "sunny in Oslo"]


async def test_a_tools_model_failing_twice_in_round_one_still_ends_in_the_error(grobot_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    catalog = two_steps()
    fake_llm.script(Reply(status=500, error="model crashed"), Reply(status=500, error="model crashed again"))
    sink = EventCollector()

    result = await run_chain(message(bot_id, "do both steps"), sink=sink, tools=catalog)

    assert result.error and "model crashed again" in result.error and sink.kinds()[-1] == "error"
    assert catalog.calls == [] and len(fake_llm.chat_requests()) == 2
    assert [m.role for m in stored()] == ["user"]


async def test_a_refused_key_is_not_asked_again(grobot_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id, provider="openai")
    fake_llm.script(Reply(status=401, error="Incorrect API key provided"))

    result = await run_chain(message(bot_id, "do both steps"), tools=two_steps())

    assert result.error and result.error.startswith("API key rejected") and len(fake_llm.chat_requests()) == 1


@pytest.mark.parametrize("provider", ["ollama", "openai"])
async def test_native_mode_failing_once_after_a_tool_is_asked_again_and_answers(grobot_env, fake_llm, provider):
    bot_id = make_bot(agent_mode="native")
    use_fake_llm(fake_llm, bot_id=bot_id, provider=provider)
    catalog = two_steps()
    fake_llm.script(Reply(tool_calls=[{"name": "step_one", "arguments": {}}]),
                    Reply(status=500, error="model crashed"),
                    Reply(text="Step one gave its result."))
    sink = EventCollector()

    result = await run_chain(message(bot_id, "do step one"), sink=sink, tools=catalog)

    assert result.error is None and result.text == "Step one gave its result." and sink.text() == result.text
    retry = fake_llm.chat_requests()[2]
    assert "model crashed" in retry["messages"][0]["content"] and "tools" in retry
    assert [m.role for m in stored()] == ["user", "assistant", "tool", "assistant"]


async def test_native_mode_failing_twice_after_a_tool_answers_through_the_synthesizer(grobot_env, fake_llm):
    bot_id = make_bot(agent_mode="native")
    use_fake_llm(fake_llm, bot_id=bot_id, provider="openai")
    catalog = two_steps()
    fake_llm.script(Reply(tool_calls=[{"name": "step_one", "arguments": {}}]),
                    Reply(status=500, error="model crashed"), Reply(status=500, error="model crashed again"),
                    Reply(text="Here is what step one found."))
    sink = EventCollector()

    result = await run_chain(message(bot_id, "do step one"), sink=sink, tools=catalog)

    assert result.error is None and result.text == "Here is what step one found."
    last = fake_llm.chat_requests()[-1]
    assert "tools" not in last and prompts.TOOLS_MODEL_FAILED_NOTE in last["messages"][0]["content"]
    assert [m.content for m in stored() if m.role == "tool"] == ["step_one result"]
    assert "native: the model failed twice" in sink.of("done")[0].data["fallbacks"][0]
