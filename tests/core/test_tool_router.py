"""The Tool Router's scores: computed once per message, shared with the memory lookup."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import chromadb

from grobot.core import embeddings
from grobot.core.agents import tool_router
from grobot.core.memory import vector_store as memory_store
from grobot.core.memory.local import LocalMemory
from grobot.core.memory.vector_store import ChromaMemory
from grobot.core.tools.base import ToolSpec

TIME = ToolSpec(name="time__get_current_time", description="Get the current time in a time zone.",
                input_schema={"type": "object", "properties": {}})
FILES = ToolSpec(name="files_list", description="List the files in the bot's folder.",
                 input_schema={"type": "object", "properties": {}})


class NoEmbedder:
    """An embedder that must not be asked."""

    async def similarities(self, text: str, candidates: list[str]) -> list[float]:
        raise AssertionError("the router asked for similarities it was given")


async def test_known_similarities_decide_without_asking_the_embedder():
    known = {tool_router.tool_text(TIME): 0.61, tool_router.tool_text(FILES): 0.05}
    routing = await tool_router.route("what hour is it in Tokyo?", [TIME, FILES], NoEmbedder(), budget=1.0, known=known)
    assert routing.picks == ["time__get_current_time"] and routing.method == "embeddings+words"


async def test_a_tool_missing_from_the_known_scores_is_asked_for():
    asked: list[list[str]] = []

    class Embedder:
        async def similarities(self, text: str, candidates: list[str]) -> list[float]:
            asked.append(candidates)
            return [0.05 for _ in candidates]

    known = {tool_router.tool_text(TIME): 0.61}  # the files tool is new since the scores were computed
    routing = await tool_router.route("hello there", [TIME, FILES], Embedder(), budget=1.0, known=known)
    assert asked == [[tool_router.tool_text(TIME), tool_router.tool_text(FILES)]]
    assert routing.candidates == []  # the fresh scores decide, not the stale ones


async def test_known_scores_are_ignored_for_a_message_of_several_requests():
    asked: list[str] = []

    class Embedder:
        async def similarities(self, text: str, candidates: list[str]) -> list[float]:
            asked.append(text)
            return [0.6 if "time" in text else 0.05, 0.6 if "files" in text else 0.05]

    assert not tool_router.precomputable("list your files and tell me the time")
    known = {tool_router.tool_text(TIME): 0.0, tool_router.tool_text(FILES): 0.0}
    routing = await tool_router.route("list your files and tell me the time", [TIME, FILES], Embedder(), budget=1.0,
                                      known=known)
    assert sorted(asked) == ["list your files", "tell me the time"]
    assert sorted(routing.picks) == ["files_list", "time__get_current_time"]


async def test_the_message_is_embedded_once_for_the_router_and_the_memory_lookup(grobot_env, monkeypatch):
    embedded: list[str] = []
    real = embeddings.get_embedder()

    class Counting:
        def embed(self, texts: list[str]) -> list[list[float]]:
            embedded.extend(texts)
            return real.embed(texts)

        def start_one(self, text: str) -> Any:
            embedded.append(text)
            return real.start_one(text)

    counting = functools.lru_cache(maxsize=1)(Counting)  # loaded, as the process-wide embedder is
    counting()
    monkeypatch.setattr(embeddings, "get_embedder", counting)
    monkeypatch.setattr(memory_store, "get_embedder", counting)
    store = ChromaMemory(chromadb.PersistentClient(path=str(grobot_env.data_dir / "chroma")))
    store.add(1, ["Alice loves green tea"], {})
    embedded.clear()
    memory = LocalMemory(store)
    try:
        message = "what does Alice like to drink?"
        await asyncio.wrap_future(memory.embedding(message))  # the supervisor starts it when the message arrives
        assert embedded == [message]
        tools = [tool_router.tool_text(TIME), tool_router.tool_text(FILES)]
        embedded.clear()
        scores = await memory.similarities(message, tools)
        assert await memory.search(1, message, k=1) == ["Alice loves green tea"]
        assert embedded == tools  # the tool texts once (then cached), the message never again
        assert len(scores) == 2 and all(-1.0 <= s <= 1.0 for s in scores)
        embedded.clear()
        assert await memory.similarities(message, tools) == scores and embedded == []
    finally:
        memory.close()


NEEDS_A_TOOL = [  # bench/tool_use.py's requests that need a tool
    "What is the date today?", "What day of the week is it?", "What time is it in UTC?", "List your files.",
    "Which files do you have?", "Read the file notes.txt.", "What do you know about me?", "Read your notes about me.",
    "Remember that the team meeting is on Friday.", "Search your memory for the team meeting.",
    "What time is it now in Tokyo?", "What's the current time in New York?", "Current time in Europe/Paris, please.",
    "Convert 15:00 from Europe/London to America/New_York.", "Read a file for me.", "Convert a time for me.",
    "Please remember something for me.", "What time is it in the time zone Mars/Olympus?",
]
CHAT = ["question number 12", "lol that is so funny", "Hello!", "Thanks, that's all for now.", "Tell me a joke.",
        "why is the sky blue?", "what's the best pizza topping?", "my dog is sick, what should I do?"]


async def test_a_message_none_of_whose_words_is_near_a_tool_is_not_embedded(grobot_env):
    """The memory's word filter: chat whose words are all far from every tool costs a few dot products
    (its words' vectors are cached), never the message's embedding; a request that needs a tool is
    embedded and routed exactly as without the filter."""
    from grobot.core.tools.builtins import builtin_tools

    placeholder = object()
    specs = [t.spec for t in builtin_tools(0, store=placeholder, discord=placeholder, memory=placeholder)]
    specs += [TIME, ToolSpec(name="time__convert_time", description="Convert time between timezones.",
                             input_schema={"type": "object", "properties": {}})]
    texts = [tool_router.tool_text(s) for s in specs]
    memory = LocalMemory(store=object())
    try:
        for text in NEEDS_A_TOOL:
            filtered = await tool_router.route(text, specs, memory, budget=30.0)
            await asyncio.wrap_future(memory.embedding(text))  # the message's own vector: the exact scores
            exact = dict(zip(texts, await memory.similarities(text, texts)))
            unfiltered = await tool_router.route(text, specs, memory, budget=30.0, known=exact)
            assert unfiltered.candidates and filtered.candidates == unfiltered.candidates, text
        for text in CHAT:
            routing = await tool_router.route(text, specs, memory, budget=30.0)
            assert routing.candidates == [] and text not in memory._messages, text
    finally:
        memory.close()
async def test_a_request_that_names_a_tool_by_its_words_is_sure_of_it():
    from grobot.core.tools.builtins import builtin_tools
    from grobot.core.tools.web import WebAccess

    specs = [t.spec for t in builtin_tools(1, store=object(), web=WebAccess())]
    # Without embeddings (a slow memory): "search the web" holds every word of web_search's name;
    # web_read shares only "web"; "2.0" is a version, not a file name (the file tools stay out).
    routing = await tool_router.route("Search the web for the GroBot 2.0 release date.", specs, None, budget=1.0)
    assert routing.picks == ["web_search"] and routing.groups == []

    # One word of a name alone is still a weak match the tools model may turn down.
    weak = await tool_router.route("Any news on the web?", specs, None, budget=1.0)
    assert weak.picks == [] and "web_search" in weak.candidates


# Written for these tests, apart from bench/tool_use.py's suite: requests in French, Spanish, German and
# indirect English, with the built-in tool each asks for; and chat on the same topics, which asks for none.
ASKED_IN_OTHER_WORDS = {
    "C'est quel jour aujourd'hui ?": "datetime_now",
    "Il est quelle heure à Montréal ?": "datetime_now",
    "¿Qué hora es en Lima ahora mismo?": "datetime_now",
    "¿A cuántos estamos hoy?": "datetime_now",
    "Wie spät ist es gerade in Wien?": "datetime_now",
    "Ist heute schon Freitag?": "datetime_now",
    "Quick, is it already Friday in Auckland?": "datetime_now",
    "Am I too early for lunch, what's the clock say?": "datetime_now",
    "Montre-moi la liste de tes fichiers.": "files_list",
    "¿Qué archivos tienes guardados?": "files_list",
    "Zeig mir den Inhalt von todo.txt": "files_read",
    "Abre el archivo recipes.md por favor": "files_read",
    "Qu'est-ce que tu sais sur moi ?": "user_notes_read",
    "Was weißt du über mich?": "user_notes_read",
    "Retiens que mon anniversaire est le 4 mars.": "memory_remember",
    "Merk dir, dass ich Kaffee ohne Zucker trinke.": "memory_remember",
    "Apunta que soy alérgico a las nueces.": "user_notes_add",
    "Jot this down: I prefer email over phone calls.": "user_notes_add",
    "Cherche dans ta mémoire le rendez-vous chez le dentiste.": "memory_search",
}
CHAT_ON_TOOL_TOPICS = [
    "What's your favourite day of the week?", "Tell me about the history of calendars.",
    "Qu'est-ce qu'un fuseau horaire ?", "Wie viele Tage hat ein Schaltjahr?", "How long is a day on Mars?",
    "I keep forgetting what day it is when I'm on holiday, does that happen to you?",
    "Je me souviens de mon enfance à Lyon.", "¿Recuerdas cuando llovió tanto?",
]


async def test_requests_in_other_languages_and_indirect_words_reach_their_tool_and_chat_none(grobot_env):
    """The real embedder reads English: the built-ins' request cues route the others, and chat on the same
    topics (a day, a calendar, remembering) is still answered without a tool."""
    from grobot.core.tools.builtins import builtin_tools

    placeholder = object()
    specs = [t.spec for t in builtin_tools(0, store=placeholder, memory=placeholder)]
    specs += [ToolSpec(name="time__get_current_time", description="Get current time in a specific timezones",
                       input_schema={"type": "object", "properties": {}}, source="time")]
    memory = LocalMemory(store=object())
    try:
        for text, tool in ASKED_IN_OTHER_WORDS.items():
            routing = await tool_router.route(text, specs, memory, budget=30.0)
            assert routing.picks == [tool], (text, routing.describe(), routing.scores_text())
        for text in CHAT_ON_TOOL_TOPICS:
            routing = await tool_router.route(text, specs, memory, budget=30.0)
            assert routing.candidates == [], (text, routing.describe())
    finally:
        memory.close()
