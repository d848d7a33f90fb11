"""Arguments a small model gets wrong: time zones named by a place, values left out of a fixed form."""

from __future__ import annotations

import pytest

from grobot.core.store.local import run_chain
from grobot.core.time_zones import is_zone_argument, resolve, zone_choices
from tests.core.tool_chain_helpers import make_bot, message, pick
from tests.fakes.llm import EventCollector, FakeToolCatalog, Reply, use_fake_llm

ZONE = {"type": "object", "properties": {"timezone": {"type": "string", "description": "IANA time zone name"}},
        "required": ["timezone"]}
CONVERT = {"type": "object", "required": ["source_timezone", "time", "target_timezone"], "properties": {
    "source_timezone": {"type": "string", "description": "Source IANA timezone name"},
    "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
    "target_timezone": {"type": "string", "description": "Target IANA timezone name"}}}


@pytest.mark.parametrize(("text", "zones"), [
    ("What time is it now in Tokyo?", ["Asia/Tokyo"]),
    ("what's the time in new york", ["America/New_York"]),
    ("Convert 15:00 from Europe/London to Sydney, in UTC", ["Europe/London", "Australia/Sydney", "UTC"]),
    ("Time in São Paulo and Port of Spain?", ["America/Sao_Paulo", "America/Port_of_Spain"]),
    ("What time is it in Japan?", ["Japan"]),
    ("Tokyo and/or Paris", ["Asia/Tokyo", "Europe/Paris"]),
    # A zone that does not exist: no choices, the tool is to say it is unknown.
    ("What time is it in Mars/Olympus, or Tokyo?", []),
    # Words that are also zone names are not places.
    ("I wake up at Easter, south of the river", []),
    ("What is the date today?", []),
])
def test_the_zones_a_message_names(text, zones):
    assert zone_choices(text) == zones


@pytest.mark.parametrize(("value", "zone"), [("Tokyo", "Asia/Tokyo"), ("new york", "America/New_York"),
                                             ("europe/paris", "Europe/Paris"), ("utc", "UTC"), ("UTC+08:30", None),
                                             ("Atlantis", None)])
def test_a_place_written_for_a_zone_is_read_as_the_zone(value, zone):
    assert resolve(value) == zone


def test_which_arguments_take_a_time_zone():
    assert is_zone_argument("timezone", {"type": "string"}) and is_zone_argument("source_tz", {"type": "string"})
    assert is_zone_argument("where", {"type": "string", "description": "An IANA time zone"})
    assert not is_zone_argument("time", CONVERT["properties"]["time"])
    assert not is_zone_argument("timezone", {"type": "string", "enum": ["UTC"]})  # its own choices stand


def zone_catalog() -> FakeToolCatalog:
    async def local_time(timezone: str) -> str:
        return f"12:00 in {timezone}"

    return FakeToolCatalog().add("local_time", local_time, schema=ZONE, read_only=True)


async def test_a_zone_argument_may_only_take_the_zones_the_message_names(bot, fake_llm):
    catalog = zone_catalog()
    fake_llm.script(pick("local_time"), Reply(json={"arguments": {"timezone": "Australia/Sydney"}}), Reply(text="Noon."))

    await run_chain(message(bot, "What time is it in Sydney right now?"), tools=catalog)

    extractor = fake_llm.chat_requests()[1]["format"]["properties"]["arguments"]["properties"]["timezone"]
    assert extractor["enum"] == ["Australia/Sydney"]
    assert catalog.calls == [("local_time", {"timezone": "Australia/Sydney"})]


async def test_a_place_the_model_writes_for_a_zone_is_called_with_the_zone(bot, fake_llm):
    """A model free of the grammar (or a message that names no zone) may write the city: the tool gets its zone."""
    catalog = zone_catalog()
    fake_llm.script(pick("local_time"), Reply(json={"arguments": {"timezone": "Tokyo"}}), Reply(text="Noon."))
    sink = EventCollector()

    await run_chain(message(bot, "What time is it now where the sun rises first?"), sink=sink, tools=catalog)

    assert "enum" not in fake_llm.chat_requests()[1]["format"]["properties"]["arguments"]["properties"]["timezone"]
    assert catalog.calls == [("local_time", {"timezone": "Asia/Tokyo"})]
    assert any("read as the time zone Asia/Tokyo" in e.data["text"] for e in sink.of("thinking"))


async def test_a_native_bot_s_call_gets_the_zone_of_the_place_it_names(grobot_env, fake_llm):
    bot_id = make_bot(agent_mode="native")
    use_fake_llm(fake_llm, bot_id=bot_id)
    catalog = zone_catalog()
    fake_llm.script(Reply(tool_calls=[{"name": "local_time", "arguments": {"timezone": "new york"}}]), Reply(text="Noon."))

    await run_chain(message(bot_id, "What time is it in New York?"), tools=catalog)

    assert catalog.calls == [("local_time", {"timezone": "America/New_York"})]
    # The conversation the model sees next holds the call as it ran.
    assert fake_llm.chat_requests()[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"] == {
        "timezone": "America/New_York"}


async def test_a_zone_that_does_not_exist_reaches_the_tool(bot, fake_llm):
    async def local_time(timezone: str) -> str:
        raise ValueError(f"unknown time zone {timezone}")

    catalog = FakeToolCatalog().add("local_time", local_time, schema=ZONE, read_only=True)
    fake_llm.script(pick("local_time"), Reply(json={"arguments": {"timezone": "Mars/Olympus"}}),
                    Reply(text="There is no such time zone."))
    sink = EventCollector()

    result = await run_chain(message(bot, "What time is it now in Mars/Olympus?"), sink=sink, tools=catalog)

    assert "enum" not in fake_llm.chat_requests()[1]["format"]["properties"]["arguments"]["properties"]["timezone"]
    assert sink.of("tool_result")[0].data["is_error"] and result.text == "There is no such time zone."


def convert_catalog() -> FakeToolCatalog:
    async def convert(source_timezone: str, time: str, target_timezone: str) -> str:
        return f"{time} in {source_timezone} is later in {target_timezone}"

    return FakeToolCatalog().add("convert", convert, schema=CONVERT, read_only=True)


async def test_a_left_out_value_of_a_fixed_form_is_chosen_from_what_the_message_writes(bot, fake_llm):
    """"time" left out: the retry offers the values written in a fixed form, less those the zones took."""
    catalog = convert_catalog()
    zones = {"source_timezone": "Asia/Tokyo", "target_timezone": "Europe/Berlin"}
    fake_llm.script(pick("convert"), Reply(json={"arguments": zones}), Reply(json={"arguments": {"time": "09:30"}}),
                    Reply(text="16:30 in Berlin."))

    await run_chain(message(bot, "Convert 09:30 in Asia/Tokyo to Europe/Berlin time."), tools=catalog)

    first, retry = (r["format"]["properties"]["arguments"] for r in fake_llm.chat_requests()[1:3])
    assert first["properties"]["source_timezone"]["enum"] == ["Asia/Tokyo", "Europe/Berlin"]
    assert "enum" not in first["properties"]["time"] and retry["required"] == ["time"]
    assert retry["properties"]["time"]["enum"] == ["09:30"]
    assert catalog.calls == [("convert", {**zones, "time": "09:30"})]


async def test_a_free_text_argument_gets_no_choices_on_the_retry(bot, fake_llm):
    schema = {"type": "object", "properties": {"text": {"type": "string", "description": "what to remember"}},
              "required": ["text"]}

    async def remember(text: str) -> str:
        return "remembered"

    catalog = FakeToolCatalog().add("remember", remember, schema=schema)
    fake_llm.script(pick("remember"), Reply(json={"arguments": {}}),
                    Reply(json={"arguments": {"text": "the meeting is at 10:00"}}), Reply(text="Noted."))

    await run_chain(message(bot, "Remember: the meeting is at 10:00 in room 4.2"), tools=catalog)

    retry = fake_llm.chat_requests()[2]["format"]["properties"]["arguments"]
    assert retry["required"] == ["text"] and "enum" not in retry["properties"]["text"]
    assert catalog.calls == [("remember", {"text": "the meeting is at 10:00"})]


def docs_catalog(listing: str = "plan.md, notes.txt") -> FakeToolCatalog:
    async def list_docs() -> str:
        return listing

    async def read_doc(path: str) -> str:
        return f"the text of {path}"

    path = {"type": "object", "properties": {"path": {"type": "string", "description": "the file name"}},
            "required": ["path"]}
    return FakeToolCatalog().add("list_docs", list_docs, read_only=True).add("read_doc", read_doc, schema=path,
                                                                             read_only=True)


async def test_a_later_round_takes_its_arguments_from_the_results_so_far(bot, fake_llm):
    catalog = docs_catalog()
    fake_llm.script(Reply(json={"tool": "list_docs"}), Reply(json={"tool": "read_doc"}),
                    Reply(json={"arguments": {"path": "plan.md"}}), Reply(text="The plan says ..."))

    await run_chain(message(bot, "Show me the doc"), tools=catalog)

    assert catalog.calls == [("list_docs", {}), ("read_doc", {"path": "plan.md"})]
    extractor = fake_llm.chat_requests()[2]["messages"]
    assert '- list_docs({}) -> "plan.md, notes.txt"' in extractor[-1]["content"]


async def test_a_forced_value_the_results_hold_is_used(bot, fake_llm):
    """Left out, then forced: a file name the listing gave is not made up."""
    catalog = docs_catalog()
    fake_llm.script(Reply(json={"tool": "list_docs"}), Reply(json={"tool": "read_doc"}), Reply(json={"arguments": {}}),
                    Reply(json={"arguments": {"path": "plan.md"}}), Reply(text="The plan says ..."))

    result = await run_chain(message(bot, "Show me the doc"), tools=catalog)

    assert catalog.calls == [("list_docs", {}), ("read_doc", {"path": "plan.md"})]
    assert result.text == "The plan says ..."


async def test_a_file_name_on_a_line_of_its_own_in_the_results_is_not_made_up(bot, fake_llm):
    """A listing with one file a line (shown to the model inside a JSON string) still names its files."""
    catalog = docs_catalog("plan.md\nnotes.txt")
    fake_llm.script(Reply(json={"tool": "list_docs"}), Reply(json={"tool": "read_doc"}),
                    Reply(json={"arguments": {"path": "notes.txt"}}), Reply(text="The notes say ..."))

    result = await run_chain(message(bot, "Show me the docs"), tools=catalog)

    assert catalog.calls == [("list_docs", {}), ("read_doc", {"path": "notes.txt"})]
    assert result.text == "The notes say ..."


async def test_a_file_name_the_conversation_never_wrote_goes_to_the_clarifier(bot, fake_llm):
    """"Read a file for me": a model that writes ``path.txt`` made it up; the bot asks which file."""
    catalog = docs_catalog()
    fake_llm.script(pick("read_doc"), Reply(json={"arguments": {"path": "path.txt"}}), Reply(text="Which file?"))
    sink = EventCollector()

    result = await run_chain(message(bot, "Read a file for me."), sink=sink, tools=catalog)

    assert catalog.calls == [] and result.text == "Which file?" and result.llm_calls == 3
    assert any('path "path.txt" is not in the conversation' in e.data.get("text", "") for e in sink.of("thinking"))
    clarifier = fake_llm.chat_requests()[-1]["messages"][0]["content"]
    assert "path: the file name" in clarifier


@pytest.mark.parametrize(("text", "path"), [
    ("Read notes.txt please", "notes.txt"),
    ("Read my grocery plans", "grocery_plan.txt"),
    ("Read me my notes", "notes.txt"),
    ("Read /srv/share/Report-2024.pdf", "/srv/share/Report-2024.pdf"),
    ("Read ../../etc/passwd", "../../etc/passwd"),
])
async def test_a_file_name_the_message_gives_is_used(bot, fake_llm, text, path):
    catalog = docs_catalog()
    fake_llm.script(pick("read_doc"), Reply(json={"arguments": {"path": path}}), Reply(text="Here it is."))

    result = await run_chain(message(bot, text), tools=catalog)

    assert catalog.calls == [("read_doc", {"path": path})]
    assert result.text == f'{path}: "the text of {path}"'  # the model's words did not say it: the reply does


async def test_a_question_the_model_could_not_write_is_asked_plainly(bot, fake_llm):
    catalog = docs_catalog()
    fake_llm.script(pick("read_doc"), Reply(json={"arguments": {"path": "path.txt"}}), Reply(text="Sure thing."))

    result = await run_chain(message(bot, "Read a file for me."), tools=catalog)

    assert catalog.calls == [] and result.text == "I need the path for that. Could you tell me?"


def memory_catalog() -> FakeToolCatalog:
    """A tool that keeps a fact the user tells (as the built-in memory and notes tools do)."""
    async def remember(text: str) -> str:
        return "remembered"

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    return FakeToolCatalog().add("remember", remember, schema=schema, from_user=("text",))


async def test_a_fact_the_user_never_said_is_not_kept_and_the_bot_asks(bot, fake_llm):
    """"Please remember something": a small model writes a fact of its own. Nothing is stored; the bot asks."""
    catalog = memory_catalog()
    fake_llm.script(pick("remember"), Reply(json={"arguments": {"text": "The user's favourite colour is blue."}}),
                    Reply(text="What should I remember?"))
    sink = EventCollector()

    result = await run_chain(message(bot, "Please remember something for me."), sink=sink, tools=catalog)

    assert catalog.calls == [] and result.text == "What should I remember?" and result.llm_calls == 3
    assert any("is not in the conversation" in e.data.get("text", "") for e in sink.of("thinking"))


@pytest.mark.parametrize(("text", "fact", "kept"), [
    ("Remember that I like tea", "The user likes tea", "The user likes tea"),
    ("Please remember: the team meeting is on Friday.", "Team meeting on Friday", "Team meeting on Friday"),
    ("remember I live in Berlin", "User lives in Berlin.", "User lives in Berlin."),
    # The model's own wording, or another language: the user's own words are kept instead.
    ("Remember that I don't eat meat.", "The user is vegetarian.", "I don't eat meat"),
    ("Please remember this: je bois du thé tous les matins.", "The user drinks tea every morning.",
     "je bois du thé tous les matins"),
    # Left out: the request says it.
    ("Can you remember that the dentist is on Monday?", None, "the dentist is on Monday"),
])
async def test_a_fact_in_the_users_words_is_kept(bot, fake_llm, text, fact, kept):
    catalog = memory_catalog()
    fake_llm.script(pick("remember"), Reply(json={"arguments": {"text": fact} if fact else {}}), Reply(text="Noted."))

    result = await run_chain(message(bot, text), tools=catalog)

    assert catalog.calls == [("remember", {"text": kept})]
    assert result.text == f'Remembered: "{kept}"' + ("" if kept.endswith(".") else ".")  # says what was kept


def test_the_built_in_tools_that_keep_facts_take_them_from_the_user():
    from grobot.core.tools.builtins import builtin_tools

    specs = {t.spec.name: t.spec for t in builtin_tools(1, store=object(), memory=object())}
    assert specs["memory_remember"].from_user == ("text",)
    assert specs["user_notes_add"].from_user == ("note",) and specs["user_notes_update"].from_user == ("note",)
    assert specs["files_read"].from_user == ()
