"""The Files tab's documents in a real browser: each uploaded file's state in the bot's index (waiting,
indexed with its passages, or the error in one line), followed live, and the bot's documents settings.

No bot worker runs here: the indexer runs in the test process as the supervisor runs it, on the same
database and data folder as the web app.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.memory.local import LocalMemory
from grobot.core.memory.vector_store import ChromaMemory
from grobot.core.services import documents
from grobot.core.services.document_sync import DocumentsIndexer
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, unique
from tests.ui.screens import PHONE, WIDE, assert_fits_the_width, sized_page

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

LIVE_TIMEOUT_MS = 20_000
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "documents"
FAQ = b"# FAQ\n\n## Opening hours\n\nWe are open from 9:00 to 17:00.\n\n## Returns\n\nReturns within 14 days.\n"


def _index_now() -> None:
    """What the worker's indexer does at its next poll."""
    def db(fn: Any, *args: Any, **kwargs: Any) -> Any:
        with session_scope() as session:
            return fn(*args, session=session, **kwargs)

    memory = LocalMemory(ChromaMemory())
    indexer = DocumentsIndexer(memory.documents_index, db)
    try:  # on a thread of its own: Playwright runs an event loop on this one
        with ThreadPoolExecutor(1) as pool:
            pool.submit(lambda: asyncio.run(indexer.sync())).result(300)
    finally:
        indexer.close()
        memory.close()


def test_uploaded_files_show_their_state_in_the_index_and_the_settings_save(browser, web_app, ui_admin) -> None:
    bot_id = add_bot(unique("Archive"))
    with sized_page(browser, web_app.url, WIDE, ui_admin) as page:
        page.goto(f"/bots/{bot_id}/files")
        expect(page.get_by_text("Answers from documents")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        chooser = page.locator("#bot-files-upload input[type=file]")
        chooser.set_input_files([
            {"name": "faq.md", "mimeType": "text/markdown", "buffer": FAQ},
            {"name": "logo.bin", "mimeType": "application/octet-stream", "buffer": bytes(range(256)) * 8},
        ])
        faq, binary = page.locator('[data-path="faq.md"]'), page.locator('[data-path="logo.bin"]')
        expect(faq.get_by_test_id("document-state")).to_have_text("Waiting to be indexed", timeout=LIVE_TIMEOUT_MS)
        expect(page.get_by_test_id("documents-no-worker")).to_be_visible()

        _index_now()  # the page follows the states while a file waits
        expect(faq.get_by_test_id("document-state")).to_have_text("Indexed: 2 passages", timeout=LIVE_TIMEOUT_MS)
        expect(binary.get_by_test_id("document-state")).to_have_text(
            "Not indexed: not a document: a binary file (GroBot reads text, Markdown, PDF, HTML or Word (DOCX) files)")
        expect(page.get_by_test_id("documents-no-worker")).to_have_count(0)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "files-documents-1400.png"), full_page=True)

        threshold = page.get_by_role("textbox", name="Threshold")
        expect(threshold).to_have_value("0.3")
        threshold.fill("0.45")
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.get_by_text("Documents settings saved.")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
        threshold.fill("7")
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.get_by_test_id("documents-error")).to_have_text(
            "Threshold must be between 0 and 1.", timeout=LIVE_TIMEOUT_MS)
        with session_scope(readonly=True) as session:
            assert documents.settings_for(bot_id, session=session).threshold == 0.45

        page.get_by_role("switch", name="Answers from documents").click()
        expect(faq.get_by_test_id("document-state")).to_have_text("Not indexed: documents are off for this bot",
                                                                    timeout=LIVE_TIMEOUT_MS)
        with session_scope(readonly=True) as session:
            assert documents.settings_for(bot_id, session=session).enabled is False
        assert not page.grobot_errors, page.grobot_errors

    with sized_page(browser, web_app.url, PHONE, ui_admin) as page:
        page.goto(f"/bots/{bot_id}/files")
        expect(page.locator('[data-path="faq.md"]').get_by_test_id("document-state")).to_be_visible(
            timeout=PAGE_TIMEOUT_MS)
        assert_fits_the_width(page, "the Files tab with its documents")
        page.screenshot(path=str(SHOTS / "files-documents-phone.png"), full_page=True)
