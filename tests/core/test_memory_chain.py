"""Memory in the chain: a dead or slow memory never breaks or delays the answer; bot processes stay light."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import time

from bot_worker.bot_link import BotLinkClient
from grobot.core.agents.chain import wait_for_background
from grobot.core.agents.run_store import Prepared
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.memory.lookup import start_memory_lookup
from grobot.core.services import bots
from grobot.core.store.local import local_deps, run_chain
from tests.fakes.llm import FakeToolCatalog, Reply, is_archivist_request, use_fake_llm
from tests.memory_helpers import memory_service


def _bot() -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name="Keeper", personality="You are Keeper.").id


def _message(bot_id: int, text: str, key: str = "test:one") -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key=key, content=text, author_id="42", author_name="alice",
                           platform="test_chat", channel_id="55", discord_message_id="900")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_dead_memory_service_does_not_break_the_answer_and_is_logged_once(grobot_env, fake_llm, caplog):
    bot_id = _bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    link = BotLinkClient(f"tcp://127.0.0.1:{_closed_port()}", "token")  # a supervisor that is gone
    dead = link.memory()
    fake_llm.script_for(is_archivist_request, Reply(json={"notes": [], "memories": [{"text": "alice has a boat"}]}))
    caplog.set_level(logging.INFO)
    for text in ("I have a boat on the lake", "My boat is painted red and white"):
        result = await run_chain(_message(bot_id, text), local_deps(dead), tools=FakeToolCatalog())
        await wait_for_background()
        assert result.error is None and text in result.text
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "Memory unavailable" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    await link.close()


async def test_slow_retrieval_costs_at_most_the_budget(grobot_env, fake_llm, monkeypatch):
    class SlowMemory:
        async def remember(self, bot_id, texts, metadata):
            return None

        async def search(self, bot_id, query, k=5):
            await asyncio.sleep(60)  # a memory that hangs: the chain must not wait for it
            return ["never seen"]

    monkeypatch.setenv("GROBOT_MEMORY_BUDGET_SECONDS", "0.3")
    from grobot.core.settings import get_settings

    get_settings.cache_clear()
    bot_id = _bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    started = time.perf_counter()
    result = await run_chain(_message(bot_id, "what do you remember?"), local_deps(SlowMemory()), tools=FakeToolCatalog())
    elapsed = time.perf_counter() - started
    assert result.error is None and result.text
    assert elapsed < 20, f"the chain waited {elapsed:.1f} s for a memory that hangs for 60 s"
    assert "never seen" not in fake_llm.chat_requests()[-1]["messages"][0]["content"]


async def test_a_lookup_started_early_is_the_one_the_chain_uses(grobot_env, fake_llm):
    """A store starts the lookup when it reads a message the bot may answer (:attr:`Prepared.memories`);
    the chain then uses that result and does not search again."""
    searches: list[str] = []

    class CountingMemory:
        async def remember(self, bot_id, texts, metadata):
            return None

        async def search(self, bot_id, query, k=5):
            searches.append(query)
            return ["alice keeps bees on her roof"]

    bot_id = _bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    message = _message(bot_id, "what do I keep on my roof?")
    early = start_memory_lookup(message, CountingMemory())
    assert early is not None
    result = await run_chain(Prepared(message, decision=True, memories=early), local_deps(CountingMemory()),
                             tools=FakeToolCatalog())
    assert result.error is None and searches == ["what do I keep on my roof?"]
    assert "alice keeps bees on her roof" in fake_llm.chat_requests()[-1]["messages"][0]["content"]
    assert start_memory_lookup(_message(bot_id, "   "), CountingMemory()) is None  # nothing to look up


async def test_the_chain_stores_and_retrieves_through_the_service(grobot_env, fake_llm, monkeypatch):
    monkeypatch.setenv("GROBOT_MEMORY_BUDGET_SECONDS", "5")  # a loaded test machine; the budget has its own test
    from grobot.core.settings import get_settings

    get_settings.cache_clear()
    bot_id = _bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    with memory_service() as service:
        remote = service.bot_memory(bot_id)
        fake_llm.script_for(is_archivist_request, Reply(json={"notes": [], "memories": [
            {"text": "alice said the team decided to ship on Thursday", "kind": "decision"}]}))
        await run_chain(_message(bot_id, "we decided to ship the release on Thursday"), local_deps(remote), tools=FakeToolCatalog())
        await wait_for_background()
        # The same decision again is not stored twice.
        await run_chain(_message(bot_id, "so we decided to ship the release on Thursday"), local_deps(remote), tools=FakeToolCatalog())
        await wait_for_background()
        stored = service.call(service.local.list(bot_id))
        assert len(stored) == 1 and stored[0].text == "alice said the team decided to ship on Thursday"
        assert {k: stored[0].metadata[k] for k in ("user_id", "channel_id", "source_message_id", "kind", "source")} == \
            {"user_id": "42", "channel_id": "55", "source_message_id": "900", "kind": "decision", "source": "archivist"}
        await run_chain(_message(bot_id, "when do we ship the release?", key="test:other"), local_deps(remote),
                        tools=FakeToolCatalog())
        system = fake_llm.chat_requests()[-1]["messages"][0]["content"]
        assert "Things you remember" in system and "ship on Thursday" in system
        await service.close_clients()


def test_a_bot_process_does_not_import_the_store_the_model_or_httpx(grobot_env):
    """Bots stay light: no vector store or embedding model, and no second HTTP stack (aiohttp
    serves discord.py and the LLM providers; the memory goes over the bot's link)."""
    code = (
        "import os, sys\n"
        "os.environ['GROBOT_SUPERVISOR_URL'] = 'tcp://127.0.0.1:9'\n"
        "os.environ['GROBOT_SUPERVISOR_TOKEN'] = 'bot-1.0'\n"
        "import bot_worker.bot_process, grobot.core.agents.chain, grobot.core.tools.catalog\n"
        "from bot_worker.bot_link import BotLinkClient\n"
        "memory = BotLinkClient.from_env().memory()\n"
        "assert type(memory).__name__ == 'RemoteMemory', memory\n"
        "print(sorted(m for m in ('numpy', 'chromadb', 'onnxruntime', 'tokenizers', 'httpx', 'ollama') if sys.modules.get(m)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=grobot_env.environ())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


async def test_a_request_a_question_or_a_reaction_costs_one_llm_call_and_a_fact_gets_the_archivists(grobot_env, fake_llm):
    """With a memory, the Archivist's call (a second LLM call, on the model that answers the next message)
    is made for what may hold something to keep, not for a request, a question without its mark, a
    reaction or a state of the moment; what it offers then reaches the memory."""
    kept: list[str] = []

    class RecordingMemory:
        async def remember(self, bot_id, texts, metadata):
            kept.extend(texts)

        async def search(self, bot_id, query, k=5):
            return []

    bot_id = _bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script_for(is_archivist_request, Reply(json={"notes": [], "memories": [
        {"text": "the retro happens every other Friday", "kind": "event"}]}))
    nothing_to_keep = ("summarize the meeting notes for me", "where do I find the logs", "haha that made my day",
                       "I'm waiting for my coffee right now")
    for i, text in enumerate(nothing_to_keep):
        before = len(fake_llm.chat_requests())
        result = await run_chain(_message(bot_id, text, key=f"test:{i}"), local_deps(RecordingMemory()),
                                 tools=FakeToolCatalog())
        await wait_for_background()
        assert result.error is None and result.text
        requests = fake_llm.chat_requests()[before:]
        assert len(requests) == 1 and not is_archivist_request(requests[0]), (text, len(requests))
    assert kept == []
    result = await run_chain(_message(bot_id, "our retro happens every other Friday", key="test:fact"),
                             local_deps(RecordingMemory()), tools=FakeToolCatalog())
    await wait_for_background()
    assert result.error is None
    assert sum(map(is_archivist_request, fake_llm.chat_requests())) == 1
    assert kept == ["the retro happens every other Friday"]
