"""Web search end to end on the demo model: a bot with its web tools on, the whole chain (the Tool
Router, the Parameter Extractor, the built-in web_search, the Synthesizer), and a fake web on
127.0.0.1 behind a proxy (DuckDuckGo's HTML endpoint, as the ddgs library reaches it)."""

from __future__ import annotations

import pytest

from grobot.core.agents.chain import wait_for_background
from grobot.core.store.local import local_deps, run_chain
from grobot.core.tools.web import SEARCH_UNAVAILABLE
from tests.fakes.llm import EventCollector
from tests.fakes.web import FakeWeb, Hit, closed_port
from tests.real_llm.test_chain_on_real_model import make_bot, message, terminal

# The demo model on a busy 2-core machine: a run with a tool call takes minutes when other work competes.
pytestmark = pytest.mark.timeout(900)

QUESTION = "Search the web for the GroBot 2.0 release date."


@pytest.fixture
def web(monkeypatch):
    from grobot.core.settings import get_settings

    with FakeWeb() as fake:
        fake.hits = [Hit("GroBot 2.0 released", "https://news.example/grobot-2",
                         "GroBot 2.0 came out on 3 March 2026.")]
        monkeypatch.setenv("GROBOT_WEB_PROXY", fake.proxy_url)
        monkeypatch.setenv("GROBOT_WEB_CA_FILE", str(fake.ca_file))
        get_settings.cache_clear()
        yield fake


async def ask(bot_id: int, text: str) -> tuple[object, EventCollector]:
    from grobot.core.memory.local import LocalMemory

    memory = LocalMemory()  # the Tool Router's embedder, as in the supervisor
    await memory.warm()
    sink = EventCollector()
    deps = local_deps(memory)
    try:
        result = await run_chain(message(bot_id, text), deps, sink=sink)  # the chain builds the bot's catalog
        await wait_for_background()
    finally:
        await deps.aclose()
        memory.close()
    return result, sink


async def test_a_question_for_the_web_is_searched_and_answered(grobot_env, demo_directory, web):
    bot_id = make_bot(web_search=True)

    result, sink = await ask(bot_id, QUESTION)

    assert result.error is None and terminal(sink) == ["done"]
    steps = [e.data.get("text") for e in sink.of("thinking")]
    assert [e.data["name"] for e in sink.of("tool_call")][:1] == ["web_search"], steps
    assert web.searches and "grobot" in web.searches[0].lower()  # the model's query reached DuckDuckGo
    searched = sink.of("tool_result")[0].data
    assert not searched["is_error"] and "https://news.example/grobot-2" in searched["content"]
    assert result.text.strip()


async def test_a_bot_without_web_search_does_not_search(grobot_env, demo_directory, web, short_answer):
    bot_id = make_bot()

    result, sink = await ask(bot_id, QUESTION)

    assert terminal(sink) == ["done"] and web.searches == []
    assert "web_search" not in [e.data["name"] for e in sink.of("tool_call")]


async def test_without_network_the_model_hears_that_search_is_unavailable(grobot_env, demo_directory, web,
                                                                           monkeypatch, short_answer):
    from grobot.core.settings import get_settings

    monkeypatch.setenv("GROBOT_WEB_PROXY", closed_port())
    get_settings.cache_clear()
    bot_id = make_bot(web_search=True)

    result, sink = await ask(bot_id, QUESTION)

    assert result.error is None and terminal(sink) == ["done"]  # the run answers all the same
    failed = sink.of("tool_result")[0].data
    assert failed["is_error"] and failed["name"] == "web_search"
    # What the Synthesizer read is in the stored tool message: the plain sentence, not the proxy's address.
    from sqlmodel import select

    from grobot.core.db import session_scope
    from grobot.core.models import Message

    with session_scope(readonly=True) as session:
        tool_messages = [m.content for m in session.exec(select(Message).where(Message.role == "tool")).all()]
    assert tool_messages and SEARCH_UNAVAILABLE in tool_messages[0] and "127.0.0.1" not in tool_messages[0]
