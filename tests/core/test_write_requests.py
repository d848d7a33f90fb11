"""No write the user did not ask for: a tool that changes things (the built-in notes and memory, any tool
marked as writing) is called only when the message asks for it, with what the user said.

The model's picks are scripted as the demo model made them ("I remember my first computer" ->
``memory_remember("Good times, good times")``); the tools are the real built-ins on the database.
"""

from __future__ import annotations

from grobot.core.agents.chain import wait_for_background
from grobot.core.db import session_scope
from grobot.core.services import user_notes
from grobot.core.store.local import run_chain
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.catalog import catalog_for_bot
from grobot.core.tools.mcp_hub import McpHub
from tests.core.tool_chain_helpers import make_bot, message
from tests.fakes.llm import EventCollector, FakeToolCatalog, Reply, is_write_check, requested_schema, use_fake_llm


def asks_for(key: str):
    """Match the requests whose answer schema has ``key`` ("tool": the Tool Identifier, "arguments": the
    Parameter Extractor, "asked": the write check); "" matches an answer in prose."""
    def match(body: dict) -> bool:
        schema = requested_schema(body)
        return key in ((schema or {}).get("properties") or {}) if key else schema is None
    return match


def script(fake_llm, *, tool: str, arguments: dict, answer: str, asked: str = "no") -> None:
    """The model's part of one message: it picks ``tool`` with ``arguments``, answers ``answer``."""
    fake_llm.reset()
    fake_llm.script_for(asks_for("tool"), Reply(json={"tool": tool}), persistent=True)
    fake_llm.script_for(asks_for("arguments"), Reply(json={"arguments": arguments}), persistent=True)
    fake_llm.script_for(asks_for("asked"), Reply(json={"asked": asked}), persistent=True)
    fake_llm.script_for(asks_for(""), Reply(text=answer), persistent=True)


class Memory:
    """A bot's long-term memory that keeps what it is given."""

    def __init__(self) -> None:
        self.kept: list[str] = []

    async def remember(self, bot_id, texts, metadata):
        self.kept.extend(texts)

    async def search(self, bot_id, query, k=5):
        return []


async def _ask(bot_id: int, text: str, memory: Memory, sink: EventCollector | None = None):
    hub = McpHub()
    try:
        catalog = await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub, memory=memory)
        result = await run_chain(message(bot_id, text), sink=sink, tools=catalog)
        await wait_for_background()
    finally:
        await hub.aclose()
    return result


def _notes(bot_id: int) -> list[str]:
    with session_scope(readonly=True) as session:
        return [n.note for n in user_notes.list_notes(session=session, bot_id=bot_id, discord_user_id="7")]


async def test_plain_chat_about_remembering_stores_nothing(bot, fake_llm):
    """The tools model is not even asked: a statement or a question is no request (the demo model says "yes"
    to "I like tea.")."""
    memory = Memory()
    script(fake_llm, tool="memory_remember", arguments={"text": "Good times, good times, good times"},
           answer="The Commodore 64 was a great machine!", asked="yes")
    sink = EventCollector()

    told = await _ask(bot, "I remember my first computer, it was a Commodore 64", memory, sink)
    checks = [body for body in fake_llm.chat_requests() if is_write_check(body)]

    script(fake_llm, tool="user_notes_add", arguments={"note": "not a required property", "reliability": 0.9},
           answer="Try repeating a name when you hear it.", asked="yes")
    asked = await _ask(bot, "Any tips for remembering people's names?", memory)
    checks += [body for body in fake_llm.chat_requests() if is_write_check(body)]

    assert memory.kept == [] and _notes(bot) == [] and checks == []
    assert told.text == "The Commodore 64 was a great machine!"
    assert asked.text == "Try repeating a name when you hear it."
    steps = [e.data["text"] for e in sink.of("thinking") if e.data.get("step") == "write_check"]
    assert steps == ["memory_remember changes things: the message does not ask for it, so it is not called"]


async def test_a_request_to_keep_something_keeps_it_in_the_users_words(bot, fake_llm):
    memory = Memory()
    script(fake_llm, tool="memory_remember", arguments={"text": "Good times"}, answer="Sure.")
    remembered = await _ask(bot, "Remember that the team meeting is on Friday.", memory)
    asked_model = [body for body in fake_llm.chat_requests() if is_write_check(body)]
    script(fake_llm, tool="user_notes_add", arguments={"note": "Favourite colour: blue", "reliability": 0.9},
           answer="Sure.")
    noted = await _ask(bot, "Please note that my favourite colour is blue.", memory)
    asked_model += [body for body in fake_llm.chat_requests() if is_write_check(body)]

    assert memory.kept == ["the team meeting is on Friday"]  # the model's "Good times" was not the user's
    assert remembered.text == 'Remembered: "the team meeting is on Friday".'
    assert _notes(bot) == ["Favourite colour: blue"] and noted.text == 'Noted: "Favourite colour: blue".'
    assert asked_model == []  # the requests said it: no yes/no call


async def test_a_request_in_other_words_is_the_tools_models_call(bot, fake_llm):
    memory = Memory()
    script(fake_llm, tool="memory_remember", arguments={"text": "my dentist is Dr. Smith"}, answer="Sure.", asked="yes")

    result = await _ask(bot, "Put this in your memory: my dentist is Dr. Smith.", memory)

    assert memory.kept == ["my dentist is Dr. Smith"] and result.text == 'Remembered: "my dentist is Dr. Smith".'
    check = next(body for body in fake_llm.chat_requests() if is_write_check(body))
    assert "memory_remember" in check["messages"][0]["content"] and check["options"]["temperature"] == 0


async def test_the_native_loop_cannot_write_what_was_not_asked_for(grobot_env, fake_llm):
    bot_id = make_bot(agent_mode="native")
    use_fake_llm(fake_llm, bot_id=bot_id)
    written: list[str] = []

    async def save(entry: str) -> str:
        written.append(entry)
        return "saved"

    schema = {"type": "object", "properties": {"entry": {"type": "string"}}, "required": ["entry"]}
    catalog = FakeToolCatalog().add("journal__save_entry", save, schema=schema, writes=True, source="journal",
                                    description="Save an entry in the journal.")
    fake_llm.script_for(is_write_check, Reply(json={"asked": "no"}), persistent=True)
    fake_llm.script(Reply(tool_calls=[{"name": "journal__save_entry", "arguments": {"entry": "A lovely day"}}]),
                    Reply(text="What a lovely day!"))

    result = await run_chain(message(bot_id, "It was a lovely day at the beach."), tools=catalog)
    told = fake_llm.chat_requests()[-1]["messages"][-1]["content"]  # what the model heard of the refused call

    fake_llm.script(Reply(tool_calls=[{"name": "journal__save_entry", "arguments": {"entry": "Beach day"}}]),
                    Reply(text="Saved."))
    saved = await run_chain(message(bot_id, "Save an entry: beach day with Tom", key="test:two"), tools=catalog)

    assert result.text == "What a lovely day!"
    assert "does not ask for it" in told
    assert written == ["Beach day"] and saved.text == 'Saved: "Beach day".'


async def test_an_explicit_request_to_keep_something_in_another_language_is_kept(bot, fake_llm):
    """"Retiens que ...", "Jot this down: ...": the request is in the user's words, so the tool is called even
    when the tools model says "no" to it; chat about remembering still keeps nothing."""
    memory = Memory()
    script(fake_llm, tool="memory_remember", arguments={"text": "mon anniversaire est le 4 mars"}, answer="D'accord.",
           asked="no")
    retained = await _ask(bot, "Retiens que mon anniversaire est le 4 mars.", memory)
    script(fake_llm, tool="user_notes_add", arguments={"note": "prefers email over phone calls", "reliability": 0.9},
           answer="Sure.", asked="no")
    jotted = await _ask(bot, "Jot this down: I prefer email over phone calls.", memory)
    script(fake_llm, tool="memory_remember", arguments={"text": "we talked about cats"}, answer="Cats are great!",
           asked="no")
    chat = await _ask(bot, "Remember when we talked about cats? That was fun.", memory)

    assert memory.kept == ["mon anniversaire est le 4 mars"]
    assert retained.text == 'Remembered: "mon anniversaire est le 4 mars".'
    assert _notes(bot) == ["prefers email over phone calls"]
    assert jotted.text == 'Noted: "prefers email over phone calls".'
    assert chat.text == "Cats are great!"


async def test_what_a_request_to_keep_asks_is_kept_in_the_users_words_and_nothing_the_model_wrote_on(bot, fake_llm):
    """"Jot down that ...": when the model gives no usable fact, the user's words after the request are kept
    (not a question back); a fact the model wrote on past the user's words keeps only what the user said."""
    memory = Memory()
    script(fake_llm, tool="user_notes_add", arguments={"note": "note", "reliability": 0.9}, answer="Sure.")
    jotted = await _ask(bot, "Jot down that I'm allergic to peanuts.", memory)
    script(fake_llm, tool="memory_remember", answer="Gut.",
           arguments={"text": "Merk dir bitte, dass mein Zug um 8 Uhr fährt. Diese Fortschlüfte würden wir einzelten."})
    trained = await _ask(bot, "Merk dir bitte, dass mein Zug um 8 Uhr fährt.", memory)

    assert _notes(bot) == ["I'm allergic to peanuts"] and jotted.text == 'Noted: "I\'m allergic to peanuts".'
    assert memory.kept == ["Merk dir bitte, dass mein Zug um 8 Uhr fährt."]
    assert "Fortschlüfte" not in trained.text
