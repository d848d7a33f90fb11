"""The chain end to end on a real model: the embedded demo model (SmolLM2-135M) in llama.cpp.

These tests assert what holds for any model (one terminal event per run, caps honoured,
calls and tokens recorded, bounded time, the tool path taken), never a tiny model's wording.
"""

from __future__ import annotations

import json
import re
import time

import jsonschema
from sqlmodel import select

from grobot.core.agents import prompts
from grobot.core.agents.archivist import support
from grobot.core.agents.chain import wait_for_background
from grobot.core.agents.gatekeeper import GATEKEEPER_SCHEMA
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.llm import embedded
from grobot.core.llm.service import call_llm
from grobot.core.memory.local import LocalMemory
from grobot.core.models import LLMCall, Message, UserNote
from grobot.core.services import bots, llm_settings
from grobot.core.store.local import local_deps, run_chain
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.catalog import catalog_for_bot
from grobot.core.tools.mcp_hub import McpHub
from tests.fakes.llm import EventCollector, FakeToolCatalog

TIMEZONE = {"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA time zone, e.g. Asia/Tokyo"}}}


def make_bot(**fields) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=fields.pop("name", "Demo"), **fields).id


def message(bot_id: int, text: str) -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key="test:real", content=text, author_id="7", author_name="ada",
                           platform="test_chat")


def time_catalog() -> FakeToolCatalog:
    async def get_current_time(timezone: str = "UTC") -> str:
        return f"It is 09:30 in {timezone}."

    return FakeToolCatalog().add("get_current_time", get_current_time, schema=TIMEZONE, read_only=True,
                                 description="Get the current time in a time zone.")


def calls() -> list[LLMCall]:
    with session_scope(readonly=True) as session:
        return list(session.exec(select(LLMCall).order_by(LLMCall.id)).all())


def terminal(sink: EventCollector) -> list[str]:
    return [k for k in sink.kinds() if k in ("done", "error")]


def capped(sink: EventCollector) -> bool:
    """Whether a call of the run (a plain message: its answer) stopped at its output cap."""
    return sink.of("done")[0].data["usage"]["capped_calls"] > 0


async def test_no_llm_configured_means_the_embedded_demo_model(grobot_env, demo_directory):
    with session_scope(readonly=True) as session:
        llms = llm_settings.effective_llms(session=session)
    assert {llm.provider for llm in llms.values()} == {"llamacpp"}
    assert {llm.model for llm in llms.values()} == {embedded.DEMO_MODEL}
    assert all(llm.base_url == demo_directory.url and llm.unavailable is None for llm in llms.values())


async def test_a_plain_message_streams_one_capped_answer_from_one_call(grobot_env, demo_directory):
    bot_id = make_bot()
    sink = EventCollector()

    started = time.monotonic()
    result = await run_chain(message(bot_id, "Hello! What is the capital of France?"), sink=sink, tools=time_catalog())
    elapsed = time.monotonic() - started
    await wait_for_background()

    assert result.error is None and terminal(sink) == ["done"] and sink.kinds()[-1] == "done"
    assert len(sink.of("token")) >= 2 and result.text.strip()  # streamed
    assert result.text == sink.of("done")[0].data["text"]  # what settle() decided: every host reads it
    asked_again = any(e.data.get("step") == "reply_check" and "once more" in e.data["text"] for e in sink.of("thinking"))
    assert result.llm_calls == (2 if asked_again else 1)  # no tool comes close: no Tool Identifier round trip
    answer = [c for c in calls() if c.agent_role == "synthesizer"]
    assert len(answer) == result.llm_calls and answer[0].provider == "llamacpp"
    assert answer[0].tokens_in > 0 and 0 < answer[0].tokens_out <= prompts.DEMO_ANSWER_MAX_TOKENS
    assert answer[0].ttft_ms is not None and answer[0].latency_ms >= answer[0].ttft_ms
    assert elapsed < 60


def states_time(text: str, time: str) -> bool:
    """Whether ``text`` names the clock's ``time`` ("02:10:33") to the minute: "02:10", or as a model writes
    it, "2:10" or "02.10"."""
    hours, minutes = time[:5].split(":")
    return any(re.search(rf"(?<!\d){h}[:.]{minutes}(?!\d)", text) for h in {hours, str(int(hours))})


async def test_a_tool_call_goes_through_the_whole_chain(grobot_env, demo_directory):
    bot_id = make_bot()
    catalog = time_catalog()
    sink = EventCollector()
    memory = LocalMemory()  # the embedder the Tool Router ranks tools with (the supervisor's, in the product)
    await memory.warm()  # as the supervisor does at start
    try:
        result = await run_chain(message(bot_id, "What time is it now in Tokyo?"), local_deps(memory), sink=sink,
                                 tools=catalog)
        await wait_for_background()
    finally:
        memory.close()

    assert result.error is None and terminal(sink) == ["done"]
    assert [name for name, _ in catalog.calls] == ["get_current_time"]
    # The zone is optional; if the model gives one, the grammar let it write only the one the message names.
    assert catalog.calls[0][1].get("timezone", "Asia/Tokyo") == "Asia/Tokyo"
    assert len(sink.of("tool_call")) == 1 and len(sink.of("tool_result")) == 1
    roles = [c.agent_role for c in calls() if c.agent_role != "archivist"]
    assert roles == ["parameter_extractor", "synthesizer"]  # the Router was sure of the tool: no Identifier call
    router = [e.data for e in sink.of("thinking") if e.data.get("step") == "tool_router"]
    assert router and router[0]["candidates"] == ["get_current_time"] and "embeddings" in router[0]["detail"]  # the scores: for admins
    caps = {"tool_identifier": prompts.IDENTIFIER_MAX_TOKENS, "synthesizer": prompts.DEMO_ANSWER_MAX_TOKENS,
            "parameter_extractor": prompts.EXTRACTOR_MAX_TOKENS}
    for call in calls():
        if call.agent_role in caps:
            assert call.tokens_out <= caps[call.agent_role], (call.agent_role, call.tokens_out)
    assert sum(c.tokens_out for c in calls() if c.agent_role != "archivist") < 600


async def test_structured_answers_are_valid_json_within_their_cap(grobot_env, demo_directory):
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="decision")

    result = await call_llm(llm, [{"role": "system", "content": prompts.GATEKEEPER.format(bot_name="Demo", personality="-")},
                                  {"role": "user", "content": "Demo, can you help me?"}],
                            role="gatekeeper", schema=GATEKEEPER_SCHEMA, temperature=0.0,
                            max_tokens=prompts.GATEKEEPER_MAX_TOKENS)

    jsonschema.validate(json.loads(result.text), GATEKEEPER_SCHEMA)
    assert 0 < result.usage.tokens_out <= prompts.GATEKEEPER_MAX_TOKENS


async def test_a_runaway_answer_stops_at_the_cap(grobot_env, demo_directory):
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="output")

    result = await call_llm(llm, [{"role": "user", "content": "Count from 1 to 2000, one number per line."}],
                            role="synthesizer", max_tokens=40, temperature=0.0)

    assert result.usage.tokens_out == 40 and result.text.strip()


async def test_an_answer_that_reaches_its_cap_does_not_end_mid_sentence(grobot_env, demo_directory):
    bot_id = make_bot()
    sink = EventCollector()

    result = await run_chain(message(bot_id, "Write a very long story about a dragon and a knight, with many chapters."),
                             sink=sink, tools=FakeToolCatalog())
    await wait_for_background()

    assert result.error is None and terminal(sink) == ["done"]
    assert capped(sink)  # a 135M model asked for a long story writes past its answer cap
    streamed, kept = sink.text().rstrip(), result.text
    assert kept == sink.of("done")[0].data["text"]
    assert kept.endswith(("…", ".", "!", "?", '."', '!"', '?"')), kept[-80:]
    assert streamed.startswith(kept.rstrip("…")) and len(kept) >= len(streamed) // 2


async def test_a_model_that_cannot_run_ends_the_run_with_one_clear_error(grobot_env):
    class Broken:
        def request(self, model: str, context_window: int) -> embedded.ServerInfo:
            return embedded.ServerInfo(model=model, status="error", error="too little memory: the model needs about 900 MiB")

    embedded.set_local_directory(Broken())
    try:
        bot_id = make_bot()
        sink = EventCollector()
        result = await run_chain(message(bot_id, "hello"), sink=sink, tools=FakeToolCatalog())
    finally:
        embedded.set_local_directory(None)

    assert terminal(sink) == ["error"]
    assert result.error == ("the embedded model SmolLM2-135M-Instruct (tiny demo model) cannot run: "
                            "too little memory: the model needs about 900 MiB")


async def test_the_reply_states_the_time_the_tool_returned(grobot_env, demo_directory):
    """"What time is it in Tokyo?" on the demo model with the real built-in clock: whatever the model writes,
    the reply (the done event, the stored history) states the time the tool returned, and holds no markup."""
    bot_id = make_bot()
    sink = EventCollector()
    memory = LocalMemory()
    await memory.warm()
    hub = McpHub()
    try:
        catalog = await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub)
        result = await run_chain(message(bot_id, "What time is it now in Tokyo?"), local_deps(memory), sink=sink,
                                 tools=catalog)
        await wait_for_background()
    finally:
        await hub.aclose()
        memory.close()

    assert result.error is None and terminal(sink) == ["done"]
    returned = [e.data for e in sink.of("tool_result") if e.data["name"] == "datetime_now" and not e.data["is_error"]]
    assert returned, [e.data for e in sink.of("tool_call")]
    said = json.loads(returned[-1]["content"])
    assert states_time(result.text, said["time"]) and "Asia/Tokyo" in said["timezone"], result.text
    assert "<tool_call>" not in result.text and not result.text.lstrip().startswith("{")
    with session_scope(readonly=True) as session:
        stored = session.exec(select(Message).where(Message.role == "assistant", Message.content != "")
                              .order_by(Message.id)).all()[-1].content
    assert stored == result.text == sink.of("done")[0].data["text"]


async def test_the_time_asked_in_french_spanish_or_german_is_the_clocks(grobot_env, demo_directory):
    """The Router's request cues on the demo model: a time asked in another language calls the built-in clock
    (no Tool Identifier call) for the place named, and the reply states the time it returned."""
    bot_id = make_bot()
    memory = LocalMemory()
    await memory.warm()
    hub = McpHub()
    asked = {"Quelle heure est-il à Tokyo en ce moment ?": "Asia/Tokyo", "¿Qué hora es en Lima?": "America/Lima",
             "Wie spät ist es jetzt in Berlin?": "Europe/Berlin"}
    try:
        catalog = await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub)
        for text, zone in asked.items():
            sink = EventCollector()
            result = await run_chain(message(bot_id, text), local_deps(memory), sink=sink, tools=catalog)
            await wait_for_background()
            returned = [e.data for e in sink.of("tool_result") if e.data["name"] == "datetime_now"]
            assert returned and not returned[-1]["is_error"], (text, [e.data for e in sink.of("thinking")])
            said = json.loads(returned[-1]["content"])
            assert said["timezone"] == zone and states_time(result.text, said["time"]), (text, result.text)
            assert zone.split("/")[-1] in result.text, (text, result.text)  # the place asked about, not another
    finally:
        await hub.aclose()
        memory.close()


async def test_the_archivist_keeps_only_notes_the_users_words_support(grobot_env, demo_directory):
    """The demo model once stored the bot's whole greeting as a note about the user, at 0.9. A note it keeps
    now is the user's words, as reliable as they support it, and never the bot's answer."""
    bot_id = make_bot(name="Bob")
    text = "Bonjour! I'm Ada, I live in Lisbon and I work as a nurse. Hi Bob, how are you today?"
    result = await run_chain(message(bot_id, text), sink=EventCollector(), tools=FakeToolCatalog())
    await wait_for_background(timeout=240)

    assert result.error is None
    archivist = [c for c in calls() if c.agent_role == "archivist"]
    assert len(archivist) == 1  # the user said something about themselves: the Archivist looked
    with session_scope(readonly=True) as session:
        notes = [(n.note, n.reliability) for n in session.exec(select(UserNote)).all()]
    for note, reliability in notes:
        share = support(note, text, "ada")
        assert share >= 0.5 and reliability <= 0.5 + 0.5 * share + 1e-9, (note, reliability)
        assert note.strip() not in result.text and result.text.strip() not in note, (note, result.text)


async def run_with_builtin_tools(bot_id: int, text: str) -> tuple[object, EventCollector, set[str]]:
    """``text`` through the chain with the bot's real built-in tools (notes, memory, files, clock); also the
    names of the tools among them that change things."""
    sink = EventCollector()
    memory = LocalMemory()
    await memory.warm()
    hub = McpHub()
    try:
        catalog = await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub, memory=memory)
        writing = {spec.name for spec in await catalog.list_tools() if spec.writes}
        result = await run_chain(message(bot_id, text), local_deps(memory), sink=sink, tools=catalog)
        await wait_for_background(timeout=240)
    finally:
        await hub.aclose()
        memory.close()
    return result, sink, writing


async def test_plain_chat_with_tool_words_changes_nothing(grobot_env, demo_directory):
    """"I remember my first computer, it was a Commodore 64" once made the demo model call memory_remember
    ("Good times, good times, ...") and reply "Remembered: Remembered: ..."; "Any tips for remembering
    people's names?" added a note "not a required property". Plain chat calls no tool that changes things and
    says nothing was remembered or noted."""
    bot_id = make_bot()
    for text in ("I remember my first computer, it was a Commodore 64.", "Any tips for remembering people's names?"):
        result, sink, writing = await run_with_builtin_tools(bot_id, text)
        assert {"memory_remember", "user_notes_add"} <= writing
        assert result.error is None and terminal(sink) == ["done"] and result.text.strip()
        called = [e.data["name"] for e in sink.of("tool_call")]
        assert not writing & set(called), (text, called)
        assert not result.text.lstrip().startswith(("Remembered", "Noted")), (text, result.text)
