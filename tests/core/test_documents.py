"""Answers from a bot's documents: files uploaded as the Files tab stores them, indexed by the supervisor's
indexer (its converter in a child process, the real embedder and Chroma), found for a question with
their source, kept in step when a file is replaced or deleted, and bad files each said in one line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from grobot.core.agents.chain import wait_for_background
from grobot.core.agents.types import BotConfig, IncomingMessage
from grobot.core.db import session_scope
from grobot.core.documents import message as doc_message
from grobot.core.documents.convert import convert
from grobot.core.documents.message import TOOL_NAME, offered
from grobot.core.memory.local import LocalMemory
from grobot.core.memory.vector_store import ChromaMemory
from grobot.core.models import BotDocument
from grobot.core.services import bots, documents, files
from grobot.core.services.document_sync import DocumentsIndexer
from grobot.core.store.local import local_deps, run_chain
from grobot.core.tools.base import ToolSpec
from tests.documents_helpers import docx_bytes, pdf_bytes, scanned_pdf_bytes
from tests.fakes.llm import is_archivist_request, use_fake_llm

FAQ = """# Brightwave FAQ

## Delivery

Orders ship within 2 working days. Shipping within Germany costs 3.90 euros.

## Gift cards

Gift cards are valid for three years from the end of the year they were bought in.
"""

MANUAL = """# Barista Pro 3 manual

## Before the first use

Rinse the water tank and fill it with fresh water up to the MAX mark; the tank holds 2.1 litres.
Switch the machine on with the main switch on the back.

## Cleaning and descaling

Descale the machine every three months, or when the descaling light turns orange.
"""


def _db(fn: Any, *args: Any, **kwargs: Any) -> Any:
    with session_scope() as session:
        return fn(*args, session=session, **kwargs)


@pytest.fixture
def index(grobot_env) -> Iterator[tuple[LocalMemory, DocumentsIndexer]]:
    """The supervisor's memory and its document indexer (converter in its own child process)."""
    memory = LocalMemory(ChromaMemory())
    indexer = DocumentsIndexer(memory.documents_index, _db)
    try:
        yield memory, indexer
    finally:
        indexer.close()
        memory.close()


def _bot(name: str = "keeper", **fields: Any) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name, personality="You are Keeper.", **fields).id or 0


def _upload(bot_id: int, *items: tuple[str, bytes]) -> None:
    """As the Files tab stores an upload."""
    with session_scope() as session:
        files.write_files(session=session, bot_id=bot_id, files=[(path, data, None) for path, data in items])


def _lines(bot_id: int) -> dict[str, str]:
    with session_scope(readonly=True) as session:
        return {path: state.line for path, state in documents.file_states(session=session, bot_id=bot_id).items()}


async def test_a_markdown_file_and_a_pdf_are_found_with_their_file_section_and_page(index):
    memory, indexer = index
    bot_id = _bot()
    _upload(bot_id, ("faq.md", FAQ.encode()), ("manuals/barista.pdf", pdf_bytes(MANUAL)))
    assert set(_lines(bot_id).values()) == {"Waiting to be indexed"}

    await indexer.sync()

    assert _lines(bot_id) == {"faq.md": "Indexed: 2 passages", "manuals/barista.pdf": "Indexed: 1 page, 2 passages"}
    found = await memory.documents(bot_id, "How much water does the tank hold?", 3, threshold=0.3)
    assert found, "no passage passed the threshold"
    best = found[0]
    assert (best.path, best.page) == ("manuals/barista.pdf", 1)
    assert best.source() == "manuals/barista.pdf › Barista Pro 3 manual › Before the first use, page 1"
    assert "2.1 litres" in best.quote
    found = await memory.documents(bot_id, "how long is a gift card valid?", 3, threshold=0.3)
    assert found[0].source() == "faq.md › Brightwave FAQ › Gift cards"
    assert await memory.documents(bot_id, "Tell me a joke.", 3, threshold=0.3) == []


async def test_replacing_or_deleting_a_file_updates_the_index(index):
    memory, indexer = index
    bot_id = _bot()
    _upload(bot_id, ("faq.md", FAQ.encode()), ("manual.pdf", pdf_bytes(MANUAL)))
    await indexer.sync()

    _upload(bot_id, ("faq.md", FAQ.replace("3.90 euros", "4.50 euros").encode()))  # a new version
    assert _lines(bot_id)["faq.md"] == "Waiting to be indexed"
    await indexer.sync()
    assert _lines(bot_id)["faq.md"] == "Indexed: 2 passages"
    texts = [p.text for p in await memory.documents(bot_id, "What does shipping cost in Germany?", 5) or []]
    assert any("4.50 euros" in t for t in texts) and not any("3.90" in t for t in texts)
    assert memory.documents_index.count(bot_id, "faq.md") == 2  # the old version's passages are gone

    with session_scope() as session:
        files.delete_file(session=session, bot_id=bot_id, path="manual.pdf")
    await indexer.sync()
    found = await memory.documents(bot_id, "How much water does the tank hold?", 5) or []
    assert [p.path for p in found] == ["faq.md", "faq.md"]
    with session_scope(readonly=True) as session:
        assert [d.path for d in session.query(BotDocument).all()] == ["faq.md"]
    with session_scope() as session:
        files.delete_file(session=session, bot_id=bot_id, path="faq.md")
    await indexer.sync()
    assert await memory.documents(bot_id, "shipping", 3) is None  # nothing indexed any more


async def test_bad_files_each_get_one_plain_line_and_the_others_are_indexed(index):
    memory, indexer = index
    bot_id = _bot(documents_max_file_bytes=64 * 1024)
    _upload(bot_id,
            ("scan.pdf", scanned_pdf_bytes()),
            ("locked.pdf", pdf_bytes(MANUAL, password="secret")),
            ("program.bin", bytes(range(256)) * 64),
            ("huge.txt", b"Coffee facts. " * 10_000),
            ("broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 4),
            ("faq.md", FAQ.encode()))

    await indexer.sync()

    assert _lines(bot_id) == {
        "broken.pdf": "Not indexed: the PDF could not be read (it may be damaged)",
        "faq.md": "Indexed: 2 passages",
        "huge.txt": "Not indexed: too large to index: 136.7 KB; this bot indexes files up to 64.0 KB",
        "locked.pdf": "Not indexed: the PDF is password-protected: upload a copy without a password",
        "program.bin": "Not indexed: not a document: a binary file (GroBot reads text, Markdown, PDF, HTML or "
                       "Word (DOCX) files)",
        "scan.pdf": "Not indexed: no text found: the PDF holds only images of pages (a scan?); upload one with a "
                    "text layer, or its text",
    }
    found = await memory.documents(bot_id, "What does shipping cost in Germany?", 3, threshold=0.3)
    assert found and found[0].path == "faq.md"
    # A failed file is not tried again at every poll, but its next version is.
    assert await indexer.sync() == 0
    _upload(bot_id, ("locked.pdf", pdf_bytes(MANUAL)))
    await indexer.sync()
    assert _lines(bot_id)["locked.pdf"] == "Indexed: 1 page, 2 passages"


async def test_documents_off_index_nothing_and_a_bot_over_its_passage_limit_says_so(index):
    memory, indexer = index
    off = _bot("off", documents_enabled=False)
    small = _bot("small", documents_max_passages=3)
    _upload(off, ("faq.md", FAQ.encode()))
    _upload(small, ("faq.md", FAQ.encode()), ("manual.md", MANUAL.encode()))
    await indexer.sync()
    assert _lines(off) == {"faq.md": "Not indexed: documents are off for this bot"}
    assert await memory.documents(off, "gift card", 3) is None
    lines = _lines(small)
    assert sorted(lines.values()) == ["Indexed: 2 passages", "Not indexed: the bot's documents would hold 4 passages; "
                                      "its limit is 3 (raise it, or remove files)"]


def test_html_and_word_files_keep_their_headings():
    page = ("<html><head><title>x</title><style>p{color:red}</style><script>alert('no')</script></head><body>"
            "<nav>Home | Shop</nav><h1>Shipping</h1><p>We ship <b>fast</b>.</p><h2>Costs</h2>"
            "<ul><li>Germany: 3.90 euros</li></ul></body></html>")
    sections = [(s.title, s.text) for s in convert("shipping.html", page.encode()).sections]
    assert sections == [("Shipping", "We ship **fast**."), ("Shipping › Costs", "- Germany: 3.90 euros")]
    word = docx_bytes([("Heading1", "Warranty"), (None, "Two years on parts & labour."), ("Heading2", "Claims"),
                       (None, "Write to us.")])
    assert [(s.title, s.text) for s in convert("warranty.docx", word).sections] == [
        ("Warranty", "Two years on parts & labour."), ("Warranty › Claims", "Write to us.")]
    markdown = "# Guide\n\n```\n# not a heading\n```\n\nSetup\n-----\n\nPlug it in.\n"
    assert [(s.title, s.text) for s in convert("guide.md", markdown.encode()).sections] == [
        ("Guide", "```\n# not a heading\n```"), ("Guide › Setup", "Plug it in.")]


def _message(bot_id: int, text: str, key: str) -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key=key, content=text, author_id="42", author_name="ada",
                           platform="test_chat")


async def test_an_answer_from_a_document_names_its_source_and_plain_chat_costs_no_added_call(index, fake_llm):
    memory, indexer = index
    bot_id = _bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    _upload(bot_id, ("faq.md", FAQ.encode()), ("manual.pdf", pdf_bytes(MANUAL)))
    await indexer.sync()
    deps = local_deps(memory)
    try:
        fake_llm.script("The tank holds 2.1 litres.")
        result = await run_chain(_message(bot_id, "How much water does the tank hold?", "test:a"), deps)
        assert result.error is None
        assert result.text == ("The tank holds 2.1 litres.\n\nSource: manual.pdf › Barista Pro 3 manual › Before the "
                               "first use, page 1 — “Rinse the water tank and fill it with fresh water up to the MAX "
                               "mark; the tank holds 2.1 litres.”")
        prompt = str(fake_llm.chat_requests()[-1]["messages"][0]["content"])
        assert "[manual.pdf › Barista Pro 3 manual › Before the first use, page 1] Rinse the water tank" in prompt
        assert result.llm_calls == 1  # the passages came with the memory lookup: no call of their own

        calls = {}
        for label, enabled in (("on", True), ("off", False)):
            with session_scope() as session:
                documents.update_settings(bot_id, {"documents_enabled": enabled}, session=session)
            await wait_for_background()  # the Archivist of the message before
            before = len(fake_llm.chat_requests())
            plain = await run_chain(_message(bot_id, "Hello, how are you today?", f"test:{label}"), deps)
            assert plain.error is None and "Source" not in plain.text
            asked = [r for r in fake_llm.chat_requests()[before:] if not is_archivist_request(r)]
            calls[label] = (plain.llm_calls, len(asked))
            assert "From your documents" not in str(asked[-1]["messages"][0]["content"])
        assert calls["on"] == calls["off"] == (1, 1)
        # Chat gets no documents_search tool (choosing among the tools could cost a call); a question whose
        # closest passage comes near the threshold without passing it does.
        tools = [ToolSpec(TOOL_NAME, "", {}), ToolSpec("datetime_now", "", {})]
        config = BotConfig(id=bot_id, name="keeper", personality="", agent_mode="chain", max_tool_rounds=5)
        chat = await doc_message.lookup(memory, _message(bot_id, "Thanks, that's all for now.", "x"), config)
        assert (chat.indexed, chat.passages, chat.near) == (True, [], False)
        assert [t.name for t in offered(tools, chat)] == ["datetime_now"]
        question = _message(bot_id, "How long is a gift card valid?", "x")
        best = (await memory.documents(bot_id, question.content, 1, quote=False))[0].score
        close = await doc_message.lookup(memory, question, replace(config, documents_threshold=best + 0.02))
        assert (close.passages, close.near) == ([], True)
        assert [t.name for t in offered(tools, close)] == [TOOL_NAME, "datetime_now"]
        found = await doc_message.lookup(memory, question, config)
        assert found.passages and [t.name for t in offered(tools, found)] == ["datetime_now"]
        await wait_for_background()
    finally:
        await deps.aclose()


async def test_a_bot_without_documents_does_not_have_each_message_embedded_for_them(index):
    """Most bots have no documents: their messages cost no embedding for a lookup that finds nothing
    (nor does the Tool Router then reuse that vector instead of its word filter: bench/fleet.py)."""
    memory, _ = index
    memory.embedder_loaded = lambda: True  # as in a supervisor that has loaded the model
    bot_id = _bot()
    assert await memory.documents(bot_id, "question number 3", 3, threshold=0.3) is None
    assert "question number 3" not in memory._messages  # no vector started for it


async def test_a_sync_asked_while_one_runs_returns_once_a_pass_that_started_after_it_has_ended():
    """A file deleted while a sync runs: the sync asked for next must not return before its passages are gone
    (it used to return at once, and a search right after it still found them)."""
    import asyncio

    from tests.helpers import async_wait_for

    indexer = DocumentsIndexer(index=None, db=None)  # type: ignore[arg-type]  # its passes are this test's
    seen: list[str] = []
    first_started, release = asyncio.Event(), asyncio.Event()

    async def one_pass() -> int:
        seen.append(f"pass {len([s for s in seen if s.startswith('pass')]) + 1}")
        if not first_started.is_set():
            first_started.set()
            await release.wait()
        seen.append("ended")
        return 1

    indexer._sync_once = one_pass  # type: ignore[method-assign]
    first = asyncio.create_task(indexer.sync())
    await asyncio.wait_for(first_started.wait(), 10)

    async def asked_later() -> None:
        await indexer.sync()
        seen.append("the later sync returned")

    later = asyncio.create_task(asked_later())
    await async_wait_for(lambda: indexer._asked == 2, 10, message="the later sync asked while the first runs")
    release.set()
    assert await asyncio.wait_for(first, 10) == 2  # its pass, and the one asked meanwhile
    await asyncio.wait_for(later, 10)
    assert seen == ["pass 1", "ended", "pass 2", "ended", "the later sync returned"]
