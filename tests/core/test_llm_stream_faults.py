"""LLM servers that go wrong in the middle of a streamed answer: the run always ends, and says what happened."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from sqlmodel import select

from grobot.core.agents import prompts
from grobot.core.db import session_scope
from grobot.core.llm.service import call_llm
from grobot.core.models import Message
from grobot.core.services import llm_settings
from grobot.core.settings import get_settings
from tests.core.test_chain_basic import make_bot, message
from tests.fakes.llm import EventCollector, FakeToolCatalog, Reply, use_fake_llm
from tests.fakes.mcp_servers import HtmlServer
from tests.helpers import answered, async_wait_for

# A run that never ends fails the test instead of hanging it.
RUN_DEADLINE_SECONDS = 60


@pytest.mark.parametrize("provider", ["openai", "ollama"])
async def test_an_answer_streamed_past_its_cap_is_cut_off_and_the_run_ends(grobot_env, fake_llm, provider, caplog):
    caplog.set_level(logging.WARNING, logger="grobot.core.llm.service")
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id, provider=provider)
    # The server ignores max_tokens: its answer would stream for minutes.
    # (Sentences that differ, so that it is the cap that cuts it, not the check for a repetition loop.)
    words = ["river", "lantern", "copper", "meadow", "violin", "harbor", "pepper", "glacier", "saddle", "comet"]
    endless = " ".join(f"The {words[i % 10]} {words[i // 10 % 10]} {words[i // 100 % 10]} number {i} goes on."
                       for i in range(20_000))
    fake_llm.script(Reply(text=endless, chunks=40_000, chunk_delay=0.0005))
    sink = EventCollector()
    started = time.monotonic()

    result = await asyncio.wait_for(answered(message(bot_id, "hi there"), sink=sink, tools=FakeToolCatalog()),
                                    RUN_DEADLINE_SECONDS)

    assert time.monotonic() - started < 30
    assert result.error is None and result.replied
    # Cut off a little past its cap (the server's tokens are only estimated), at a full sentence.
    assert 0 < len(result.text) < 12 * prompts.ANSWER_MAX_TOKENS and result.text.endswith("goes on.")
    done = sink.of("done")[0].data
    assert done["usage"]["capped_calls"] == 1 and done["text"] == result.text
    assert f"ignored the output cap of {prompts.ANSWER_MAX_TOKENS} tokens" in caplog.text
    await async_wait_for(lambda: fake_llm.hangups >= 1, timeout=10, message="the endless stream was not closed")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
async def test_a_server_that_dies_mid_answer_ends_the_run_with_an_error_not_half_an_answer(grobot_env, fake_llm,
                                                                                         provider):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id, provider=provider)
    # Its body ends when its connection closes: at the HTTP level, the cut looks like the end.
    fake_llm.script(Reply(text="The capital of France is Paris, and the capital of Italy is Rome.", chunks=6,
                          cut_after=3))
    sink = EventCollector()

    result = await asyncio.wait_for(answered(message(bot_id, "capitals?"), sink=sink, tools=FakeToolCatalog()),
                                    RUN_DEADLINE_SECONDS)

    assert result.error is not None and "ended the answer early" in result.error, result.error
    assert [k for k in sink.kinds() if k in ("done", "error")] == ["error"]
    with session_scope(readonly=True) as session:  # the part that came is not stored as the whole answer
        status = session.exec(select(Message.status).where(Message.id == result.run_id)).first()
        answers = session.exec(select(Message.content).where(Message.role == "assistant")).all()
    assert status is None or status != "done"
    assert answers == []


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_server_that_only_keeps_the_stream_alive_times_out(grobot_env, fake_llm, provider, monkeypatch):
    monkeypatch.setenv("GROBOT_LLM_TIMEOUT_SECONDS", "1")
    get_settings.cache_clear()
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id, provider=provider)
    # Its upstream hangs: after the first words it sends only ": PROCESSING" comments, for ever.
    fake_llm.script(Reply(text="Let me think", stall=0.1))
    sink = EventCollector()

    result = await asyncio.wait_for(answered(message(bot_id, "hi there"), sink=sink, tools=FakeToolCatalog()),
                                    RUN_DEADLINE_SECONDS)

    assert result.error == f"{provider} at {fake_llm.base_url_for(provider)} did not answer within 1 s"
    assert sink.text() == "Let me think" and [k for k in sink.kinds() if k in ("done", "error")] == ["error"]
    await async_wait_for(lambda: fake_llm.hangups >= 1, timeout=10, message="the stalled stream was not closed")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
async def test_a_base_url_that_answers_with_a_web_page_is_named_as_such(grobot_env, provider):
    bot_id = make_bot()
    with HtmlServer() as site:  # a web app whose catch-all page answers every path with HTTP 200
        base_url = site.url.removesuffix("/mcp")
        with session_scope() as session:
            for category in ("decision", "tools", "output"):
                llm_settings.set_llm(session=session, category=category, bot_id=bot_id, provider=provider,
                                     base_url=base_url, model="some-model", api_key="sk-test")
        result = await asyncio.wait_for(answered(message(bot_id, "hi"), tools=FakeToolCatalog()),
                                        RUN_DEADLINE_SECONDS)

    assert result.error == (f"{provider} at {base_url} returned an HTML page (HTTP 200), not an answer of its API: "
                            "is the base URL right?")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_tool_call_arguments_streamed_past_the_cap_are_cut_off_and_the_run_ends(grobot_env, fake_llm, provider,
                                                                                     caplog):
    caplog.set_level(logging.WARNING, logger="grobot.core.llm.service")
    bot_id = make_bot(agent_mode="native")
    use_fake_llm(fake_llm, bot_id=bot_id, provider=provider)
    # The model loops inside a tool call's arguments and the server ignores max_tokens: minutes of arguments.
    endless = '{"query": "' + "and again " * 50_000 + '"}'
    fake_llm.script(Reply(tool_calls=[{"name": "search", "arguments": endless}], tool_chunks=50_000,
                          chunk_delay=0.0005))
    catalog = FakeToolCatalog().add("search", _search, schema={"type": "object", "properties": {
        "query": {"type": "string"}}, "required": ["query"]}, read_only=True)
    started = time.monotonic()

    result = await asyncio.wait_for(answered(message(bot_id, "search for cats"), tools=catalog), RUN_DEADLINE_SECONDS)

    assert time.monotonic() - started < 30
    assert catalog.calls == []  # a cut-off call is never made
    assert result.error is None and result.text  # the next attempt answered
    assert f"ignored the output cap of {prompts.ANSWER_MAX_TOKENS} tokens" in caplog.text
    await async_wait_for(lambda: fake_llm.hangups >= 1, timeout=10, message="the endless stream was not closed")


async def _search(query: str) -> str:
    return f"results for {query}"


async def test_an_answer_ended_early_is_counted_within_the_cap_the_server_kept(grobot_env, fake_llm):
    """A stream the caller ends (a loop, an answer it has) has no usage from the server: its output tokens
    are estimated from the text, and an estimate never claims more than the cap the server was held to
    (the cost and the run's accounting read it)."""
    use_fake_llm(fake_llm, provider="openai")
    long_words = " ".join(["extraordinarily"] * 40)  # 40 tokens for a tokenizer, 160 by the 4-characters estimate
    fake_llm.script(Reply(text=long_words, chunks=40))
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="output")
    seen: list[str] = []

    async def on_text(piece: str) -> None:
        seen.append(piece)

    result = await call_llm(llm, [{"role": "user", "content": "hi"}], role="synthesizer", max_tokens=50,
                            on_text=on_text, stop=lambda: len("".join(seen)) > 400)

    assert 400 < len(result.text) < len(long_words)  # ended by the caller, not by the server
    assert result.usage.estimated and result.usage.tokens_out == 50
    assert result.records[-1].tokens_out == 50
