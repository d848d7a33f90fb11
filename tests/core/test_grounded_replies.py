"""Replies a user can trust, whatever the model writes: after a tool ran, the reply states what it
returned (a time in its zone, a list, a file's text, a confirmation, an error); a reply that is tool-call
markup, JSON, code nobody asked for or a repetition loop is never sent as it is.

The model's misbehaviour is scripted (a small model does each of these now and then, never on cue);
the tools are real: the built-ins and mcp-server-time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp_server_time.server import TimeServer
from sqlmodel import select

from grobot.core.agents import grounding, prompts
from grobot.core.agents.chain import wait_for_background
from grobot.core.db import session_scope
from grobot.core.models import Message
from grobot.core.services import mcp_servers
from grobot.core.store.local import run_chain
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools import builtins
from grobot.core.tools.base import ToolContext, ToolSpec
from grobot.core.tools.catalog import catalog_for_bot
from grobot.core.tools.mcp_hub import McpHub
from tests.core.tool_chain_helpers import message, pick
from tests.fakes.llm import EventCollector, FakeToolCatalog, Reply
from tests.helpers import async_wait_for

TIME_COMMAND = str(Path(sys.executable).parent / "mcp-server-time")
MARKUP = '<tool_call>\n{"name": "datetime_now", "arguments": {"timezone": "Asia/Tokyo"}}\n</tool_call>'
RAMBLING = "I'm glad to have you. How about you? Let me know if there is anything else."


def stored_answer(run_id: int) -> str:
    """The answer as the stored history keeps it (what Test Chat shows once the run ended)."""
    with session_scope(readonly=True) as session:
        rows = session.exec(select(Message).where(Message.role == "assistant", Message.content != "")
                            .order_by(Message.id)).all()
    return rows[-1].content


def answer_requests(fake_llm) -> list[dict]:
    """The requests for an answer in prose (no JSON schema asked)."""
    return [r for r in fake_llm.chat_requests() if not r.get("format")]


# --------------------------------------------------------------------------- one line per kind of result


async def test_each_kind_of_tool_result_reads_as_one_exact_line():
    context = ToolContext(bot_id=1, user_id="7")
    now = json.loads((await builtins.DATETIME.call({"timezone": "Asia/Tokyo"}, context)).content)
    line = grounding.ground(builtins.DATETIME.spec, "datetime_now", {"timezone": "Asia/Tokyo"}, json.dumps(now),
                            is_error=False)
    assert line.kind == "time" and line.line.startswith(f"It is {now['time'][:5]} on {now['day_of_week']} ")
    assert line.line.endswith(" in Asia/Tokyo.")

    mcp_now = TimeServer().get_current_time("America/New_York").model_dump_json(indent=2)
    at = json.loads(mcp_now)["datetime"][11:16]
    assert grounding.ground(None, "time__get_current_time", {"timezone": "America/New_York"}, mcp_now,
                            is_error=False).line.startswith(f"It is {at} on ")

    converted = TimeServer().convert_time("Europe/London", "15:00", "America/New_York").model_dump_json()
    line = grounding.ground(None, "time__convert_time", {}, converted, is_error=False,
                            asked="Convert 15:00 from Europe/London to America/New_York.")
    assert line.line.startswith("15:00 in Europe/London is 10:00 in America/New_York (")
    assert line.times == ((10, 0),)  # the time asked for: 15:00 is the user's own

    files = json.dumps([{"path": "notes.txt", "size": 34, "content_type": "text/plain"},
                        {"path": "recipes.md", "size": 44, "content_type": "text/markdown"}])
    assert grounding.ground(None, "files_list", {}, files, is_error=False).line == "Files: notes.txt, recipes.md."
    assert grounding.ground(None, "user_notes_read", {}, "[]", is_error=False).line == "User notes: none."

    text = grounding.ground(None, "files_read", {"path": "notes.txt"}, "Shopping list: milk, eggs, bread.\n",
                            is_error=False)
    assert text.line == 'notes.txt: "Shopping list: milk, eggs, bread."'

    note_spec = next(t.spec for t in builtins._notes_tools(1, None) if t.spec.name == "user_notes_add")
    added = json.dumps({"id": 3, "note": "Favourite colour is blue", "reliability": 0.9})
    assert grounding.ground(note_spec, "user_notes_add", {"note": "Favourite colour is blue", "reliability": 0.9},
                            added, is_error=False).line == 'Noted: "Favourite colour is blue".'
    writes = ToolSpec(name="memory__create_entities", description="", input_schema={}, writes=True, source="memory")
    assert grounding.ground(writes, "memory__create_entities", {"name": "Ada"}, '{"created": 1}',
                            is_error=False).line == 'Done (create entities): "Ada".'

    failed = grounding.ground(None, "time__get_current_time", {"timezone": "Mars/Olympus"},
                              "Tool time__get_current_time failed: Invalid timezone: 'No time zone found with key "
                              "Mars/Olympus'", is_error=True)
    assert failed.line == "That did not work: Invalid timezone: 'No time zone found with key Mars/Olympus'."
    assert failed.stated_in("Sorry, there is no time zone called Mars/Olympus.")
    assert not failed.stated_in("It is 10:15 on Mars.")


def test_a_reply_with_the_right_time_states_it_only_with_the_place_asked_and_no_other_date_or_zone():
    """The demo model wrote "It is 00.13 on Sunday 27 November 2028 in the UTC time zone of the Pacific
    Islands" for Lima at 00:13 on 29 November 2026: the time is right, the rest is made up; the user reads the
    clock's line instead. A reply that names the place and the right date in its own words keeps them."""
    lima = json.dumps({"timezone": "America/Lima", "datetime": "2026-11-29T00:13:05-05:00", "day_of_week": "Sunday"})
    line = grounding.ground(None, "time__get_current_time", {"timezone": "America/Lima"}, lima, is_error=False,
                            asked="¿Qué hora es en Lima?")
    assert line.line == "It is 00:13 on Sunday 29 November 2026 in America/Lima."
    for kept in ["It is 00:13 in Lima.", "In Lima it is 12:13 AM on Sunday, November 29th, 2026.",
                 "It is 00.13 in America/Lima.", "It is 00:13 in Lima, 05:13 UTC.", "May I say: 00:13 in Lima."]:
        assert line.stated_in(kept), kept
    for replaced in ["It is 00.13 on Sunday 27 November 2028 in the UTC time zone of the Pacific Islands.",
                     "It is 00:13.", "It is 00:13 in Lima on Monday.", "It is 00:13 in Lima on 28 November.",
                     "It is 00:13 in Lima, December 2026.", "It is 00:13 in Europe/Lima.", "It is 00:13 in Lima in 2025."]:
        assert not line.stated_in(replaced), replaced
    # The place is asked for only when the user named it ("What time is it?" answered in the bot's own zone).
    assert grounding.ground(None, "time__get_current_time", {}, lima, is_error=False,
                            asked="What time is it?").stated_in("It is 00:13 right now.")


async def test_a_looped_value_is_confirmed_once():
    remember = next(t.spec for t in builtins._memory_tools(1, None) if t.spec.name == "memory_remember")
    looped = "Good times, good times, good times, good times, good times"
    line = grounding.ground(remember, "memory_remember", {"text": looped}, "Remembered.", is_error=False)
    assert line.line == 'Remembered: "Good times".'


async def test_two_clocks_that_give_the_same_time_give_one_line(bot, fake_llm):
    """The tools model called both clocks for "the time in UTC": they agree, and the reply says it once."""
    with session_scope() as session:
        server = mcp_servers.create_server(session=session, name="time", command=TIME_COMMAND)
        mcp_servers.enable_for_bot(session=session, bot_id=bot, server=server, timeout_seconds=15)
    both = Reply(json={"tools": [{"name": "datetime_now", "arguments": {"timezone": "UTC"}},
                                 {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}]})
    fake_llm.script(both, Reply(text=RAMBLING))
    sink = EventCollector()
    hub = McpHub()
    try:
        catalog = await catalog_for_bot(bot, store=DatabaseStore(), hub=hub)
        result = await run_chain(message(bot, "What time is it in UTC, by both of your clocks?"), sink=sink,
                                 tools=catalog)
        await wait_for_background()
    finally:
        await hub.aclose()

    assert len(sink.of("tool_result")) == 2
    assert result.text.startswith("It is ") and result.text.endswith(" in UTC.")
    assert result.text.count("It is ") == 1 and "\n" not in result.text


# --------------------------------------------------------------------------- a tool ran


async def test_after_a_tool_the_reply_states_its_result_when_the_model_does_not(bot, fake_llm):
    """"What time is it in Tokyo?": mcp-server-time answers, the model rambles; the user reads the time
    in Discord's reply (the done event), Test Chat and the history alike, and never the rambling."""
    with session_scope() as session:
        server = mcp_servers.create_server(session=session, name="time", command=TIME_COMMAND)
        mcp_servers.enable_for_bot(session=session, bot_id=bot, server=server, timeout_seconds=15)
    fake_llm.script(pick("time__get_current_time", timezone="Asia/Tokyo"), Reply(text=RAMBLING, chunks=6))
    sink = EventCollector()
    hub = McpHub()
    try:
        catalog = await catalog_for_bot(bot, store=DatabaseStore(), hub=hub)
        result = await run_chain(message(bot, "What time is it in Tokyo?"), sink=sink, tools=catalog)
        await wait_for_background()
    finally:
        await hub.aclose()

    returned = json.loads(sink.of("tool_result")[0].data["content"])
    hour_minute = returned["datetime"][11:16]
    assert result.error is None
    assert result.text.startswith(f"It is {hour_minute} on {returned['day_of_week']} ")
    assert result.text.endswith(" in Asia/Tokyo.")
    assert sink.of("done")[0].data["text"] == result.text == stored_answer(result.run_id)
    assert "glad" not in sink.text() and sink.text() == result.text  # the rambling was held back, never shown
    assert any(e.data.get("step") == "grounding" for e in sink.of("thinking"))


async def test_a_model_that_states_the_result_keeps_its_words_and_streams_them(bot, fake_llm):
    async def tokyo() -> str:
        return json.dumps({"timezone": "Asia/Tokyo", "datetime": "2026-03-14T01:55:09+09:00", "day_of_week": "Saturday"})

    catalog = FakeToolCatalog().add("get_current_time", tokyo, read_only=True)
    answer = "Right now it is 1:55 in the morning in Tokyo, on Saturday. Sleep well!"
    fake_llm.script(pick("get_current_time"), Reply(text=answer, chunks=8))
    sink = EventCollector()

    result = await run_chain(message(bot, "What time is it in Tokyo?"), sink=sink, tools=catalog)

    assert result.text == answer == sink.text()
    kinds = sink.kinds()
    assert kinds.count("token") >= 2 and kinds.index("token") < kinds.index("done")  # streamed once it said the time


async def test_a_failed_tool_is_said_plainly_when_the_model_claims_otherwise(bot, fake_llm):
    async def read(path: str) -> str:
        from grobot.core.tools.base import ToolError

        raise ToolError(f"files_read: the file {path!r} does not exist")

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    catalog = FakeToolCatalog().add("files_read", read, schema=schema, read_only=True)
    # The message names the tool by its words: the Tool Router is sure of it (no Identifier call).
    fake_llm.script(Reply(text='{"path": "missing.txt"}'), Reply(text="Here is the file: hello world."))

    result = await run_chain(message(bot, "Read the file missing.txt."), tools=catalog)

    assert result.text == "That did not work: the file 'missing.txt' does not exist."


async def test_a_clarifying_question_after_a_first_result_still_says_the_result(bot, fake_llm):
    async def listing() -> str:
        return json.dumps([{"path": "notes.txt"}, {"path": "recipes.md"}])

    async def read(path: str) -> str:
        return "text"

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    catalog = (FakeToolCatalog().add("files_list", listing, read_only=True)
               .add("files_read", read, schema=schema, read_only=True))
    fake_llm.script(Reply(json={"tools": [{"name": "files_list"}]}), Reply(json={"tools": [{"name": "files_read"}]}),
                    Reply(json={"arguments": {}, "missing": ["path"], "question": "Which file should I read?"}))

    result = await run_chain(message(bot, "List your files and then read one"), tools=catalog)

    assert result.text == "Files: notes.txt, recipes.md.\n\nWhich file should I read?"


# --------------------------------------------------------------------------- no tool: the answer itself


async def test_an_answer_that_is_tool_call_markup_is_asked_again_under_a_stricter_prompt(bot, fake_llm):
    fake_llm.script(Reply(text=MARKUP, chunks=5), Reply(text="It is a sunny day for a walk."))
    sink = EventCollector()

    result = await run_chain(message(bot, "Is it a good day for a walk?"), sink=sink, tools=FakeToolCatalog())

    assert result.text == "It is a sunny day for a walk." == stored_answer(result.run_id) == sink.of("done")[0].data["text"]
    assert "tool_call" not in sink.text() and "{" not in sink.text()  # the markup never reached the user
    second = answer_requests(fake_llm)[-1]
    assert "could not be sent: it was tool-call markup" in second["messages"][0]["content"]
    assert second["options"]["temperature"] == prompts.STRICT_TEMPERATURE
    assert result.llm_calls == 2


async def test_json_twice_becomes_a_plain_apology(bot, fake_llm):
    fake_llm.script(Reply(json={"answer": "Paris"}), Reply(text='```json\n{"capital": "Paris"}\n```'))
    sink = EventCollector()

    result = await run_chain(message(bot, "What is the capital of France?"), sink=sink, tools=FakeToolCatalog())

    assert result.text == prompts.NO_ANSWER == stored_answer(result.run_id) == sink.text()


async def test_json_the_user_asked_for_is_an_answer(bot, fake_llm):
    fake_llm.script(Reply(text='{"capital": "Paris"}'))

    result = await run_chain(message(bot, "Give me the capital of France as JSON."), tools=FakeToolCatalog())

    assert result.text == '{"capital": "Paris"}' and result.llm_calls == 1


async def test_a_repetition_loop_is_cut_where_it_starts_and_the_model_is_stopped(bot, fake_llm):
    loop = "Thanks for asking! I hope you're well. " + "I hope you're well. " * 60
    fake_llm.script(Reply(text=loop, chunks=60, chunk_delay=0.02))
    sink = EventCollector()
    hangups = fake_llm.hangups

    result = await run_chain(message(bot, "How are you?"), sink=sink, tools=FakeToolCatalog())

    assert result.text == "Thanks for asking! I hope you're well." == stored_answer(result.run_id)
    assert sink.text().count("I hope you're well.") <= 3  # passed on until the loop showed, then no more
    # its stream was closed: the model stopped writing (the fake notices at its next write)
    await async_wait_for(lambda: fake_llm.hangups > hangups, timeout=15, message="the model's stream was never closed")
    assert result.llm_calls == 1


async def test_code_nobody_asked_for_is_taken_out_and_asked_for_code_stays(bot, fake_llm):
    snippet = "Recursion is a function calling itself.\n```python\ndef f(n):\n    return f(n - 1)\n```"
    fake_llm.script(Reply(text=snippet), Reply(text=snippet))

    plain = await run_chain(message(bot, "Explain recursion in one sentence."), tools=FakeToolCatalog())
    asked = await run_chain(message(bot, "Show me recursion in Python code.", key="test:code"), tools=FakeToolCatalog())

    assert plain.text == "Recursion is a function calling itself."
    assert asked.text == snippet


async def test_native_mode_answers_are_checked_too(grobot_env, fake_llm):
    from tests.core.tool_chain_helpers import make_bot
    from tests.fakes.llm import use_fake_llm

    bot_id = make_bot(agent_mode="native")
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script(Reply(text=MARKUP), Reply(text="Hello there, Bob!"))

    result = await run_chain(message(bot_id, "hi"), tools=FakeToolCatalog())

    assert result.text == "Hello there, Bob!"
