"""Answers from documents across a real fleet: files uploaded as the Files tab stores them are indexed by
the supervisor, a question on the fake Discord and in Test Chat is answered with their passages and names
its source, a replaced or deleted file changes what the bot knows, and a bad file is one line."""

from __future__ import annotations

import pytest

from grobot.core.db import session_scope
from grobot.core.models import Message
from grobot.core.services import documents, files, tester_chat
from tests.documents_helpers import pdf_bytes, scanned_pdf_bytes
from tests.helpers import wait_for
from tests.worker.harness import fleet

pytestmark = pytest.mark.slow

FAQ = """# Brightwave FAQ

## Gift cards

Gift cards are valid for three years from the end of the year they were bought in.

## Delivery

Shipping within Germany costs 3.90 euros; it is free for orders over 35 euros.
"""

RETURNS = """# Returns policy

## Right of withdrawal

You may withdraw from a purchase within 14 days of receiving the goods, without giving a reason.

## Refunds

We refund the purchase price within 10 working days of receiving the returned item.
"""


def _answer_prompt(world, question: str) -> str:
    """The system prompt of the answer to ``question`` (the last request that ends with it, not a JSON call)."""
    for body in reversed(world.llm.chat_requests()):
        messages = body.get("messages") or []
        if question in str(messages[-1:]) and not body.get("format") and not body.get("response_format"):
            return str(messages[0].get("content"))
    return ""


def test_documents_are_indexed_answered_from_with_their_source_and_kept_in_step(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        bot = world.add_bot("librarian", user_cooldown_seconds=0)
        world.start_supervisor(GROBOT_MEMORY_BUDGET_SECONDS="5", GROBOT_MEMORY_PRELOAD="1")  # a loaded machine
        world.wait_online(bot, timeout=150)
        with session_scope() as session:  # as the Files tab uploads them, then asks the worker to index now
            files.write_files(session=session, bot_id=bot, files=[
                ("faq.md", FAQ.encode(), None), ("policies/returns.pdf", pdf_bytes(RETURNS), None),
                ("scan.pdf", scanned_pdf_bytes(), None)])
        with session_scope(readonly=True) as session:
            assert documents.request_sync(session=session)

        def lines() -> dict[str, str]:
            with session_scope(readonly=True) as session:
                return {p: s.line for p, s in documents.file_states(session=session, bot_id=bot).items()}

        def settled() -> dict[str, str] | None:
            found = lines()
            return found if not any(line in ("Waiting to be indexed", "Indexing…") for line in found.values()) else None

        assert wait_for(settled, 90, message=lambda: f"the files indexed; log:\n{world._tail()}") == {
            "faq.md": "Indexed: 2 passages",
            "policies/returns.pdf": "Indexed: 1 page, 2 passages",
            "scan.pdf": "Not indexed: no text found: the PDF holds only images of pages (a scan?); upload one with "
                        "a text layer, or its text",
        }

        # On Discord: the passage reaches the answer's prompt with the memory lookup, and the reply names it.
        question = "How many days do I have to withdraw from a purchase?"
        asked = world.mention(bot, question)
        reply = world.wait_reply(asked, containing="Source: policies/returns.pdf › Returns policy › Right of "
                                                   "withdrawal, page 1", timeout=40)
        assert "within 14 days of receiving the goods" in reply["content"]
        assert "[policies/returns.pdf › Returns policy › Right of withdrawal, page 1] You may withdraw" in \
            _answer_prompt(world, question)

        # In Test Chat (the supervisor's own run): the same.
        with session_scope() as session:
            conversation = tester_chat.create_session(bot, session=session)
            pending = tester_chat.submit(conversation.id, "How long is a gift card valid?", session=session).id

        def answered() -> Message | None:
            with session_scope(readonly=True) as session:
                message = session.get(Message, pending)
                return message if message is not None and message.status in ("done", "error") else None

        wait_for(answered, 40, message=lambda: f"the Test Chat answer; log:\n{world._tail()}")
        with session_scope(readonly=True) as session:
            texts = [m.content for m in tester_chat.messages(conversation.id, session=session)]
        assert any("Source: faq.md › Brightwave FAQ › Gift cards" in t for t in texts), texts

        # A new version of the FAQ replaces the old passages; a deleted file leaves the index.
        with session_scope() as session:
            files.write_file(session=session, bot_id=bot, path="faq.md",
                             data=FAQ.replace("three years", "five years").encode())
            files.delete_file(session=session, bot_id=bot, path="policies/returns.pdf")
        with session_scope(readonly=True) as session:
            documents.request_sync(session=session)
        wait_for(lambda: lines() == {"faq.md": "Indexed: 2 passages", "scan.pdf": lines().get("scan.pdf")}
                 and settled(), 60, message=lambda: f"the index updated; log:\n{world._tail()}")
        asked = world.mention(bot, "How long is a gift card valid?")
        reply = world.wait_reply(asked, containing="Source: faq.md", timeout=40)
        assert "five years" in reply["content"] and "three years" not in reply["content"]
        question = "How many days do I have to withdraw from a purchase, again?"
        asked = world.mention(bot, question)
        world.wait_reply(asked, containing="again?", timeout=40)
        prompt = _answer_prompt(world, question)
        assert "You are librarian" in prompt or prompt, "the answer's request was not recorded"
        assert "returns.pdf" not in prompt
