"""``python -m grobot documents ...``: what an admin types and sees, against a real supervisor link whose
indexer (as the supervisor's) indexes what the commands add."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grobot.cli.main import main
from grobot.core.db import session_scope
from grobot.core.services import bots
from grobot.core.services.document_sync import DocumentsIndexer
from tests.documents_helpers import scanned_pdf_bytes
from tests.memory_helpers import memory_service

FAQ = "# FAQ\n\n## Gift cards\n\nGift cards are valid for three years.\n\n## Delivery\n\nShipping costs 3.90 euros.\n"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _db(fn: Any, *args: Any, **kwargs: Any) -> Any:
    with session_scope() as session:
        return fn(*args, session=session, **kwargs)


def test_documents_commands_add_list_search_delete_and_set(grobot_env, capsys, tmp_path: Path):
    with session_scope() as session:
        bots.create_bot(session=session, name="clerk")
    faq, scan = tmp_path / "faq.md", tmp_path / "scan.pdf"
    faq.write_text(FAQ)
    scan.write_bytes(scanned_pdf_bytes(1))

    # No worker: the file is stored and waits.
    code, out, _ = run(capsys, "documents", "add", "clerk", str(faq))
    assert code == 0
    assert out.splitlines() == ["faq.md (101 bytes) added to bot 'clerk': Waiting to be indexed",
                                "No bot worker is running: it is indexed when the worker starts."]

    with memory_service() as service:
        indexer = DocumentsIndexer(service.local.documents_index, _db)
        service.sync_documents = indexer.sync  # as the supervisor gives its link the indexer
        try:
            code, out, _ = run(capsys, "documents", "add", "clerk", str(scan), "--as", "scans/menu.pdf")
            assert (code, out.strip()) == (0, f"scans/menu.pdf ({_size(scan)}) added to bot 'clerk': Not indexed: no "
                                              "text found: the PDF holds only images of pages (a scan?); upload one "
                                              "with a text layer, or its text")
            code, out, _ = run(capsys, "documents", "list", "clerk")
            assert code == 0
            lines = out.splitlines()
            assert lines[0] == "Documents: on; threshold 0.3; files up to 5.0 MB; at most 20,000 passages"
            assert [line.split(None, 1) for line in lines[2:]] == [
                ["faq.md", "Indexed: 2 passages"],
                ["scans/menu.pdf", "Not indexed: no text found: the PDF holds only images of pages (a scan?); upload "
                                   "one with a text layer, or its text"]]

            code, out, _ = run(capsys, "documents", "search", "clerk", "how long is a gift card valid?", "-k", "1")
            assert code == 0 and "faq.md › FAQ › Gift cards" in out and "three years" in out

            code, out, _ = run(capsys, "documents", "delete", "clerk", "faq.md")
            assert (code, out.strip()) == (0, "faq.md deleted from bot 'clerk' (its passages go with it)")
            service.call(indexer.sync())
            code, out, _ = run(capsys, "documents", "search", "clerk", "gift card")
            assert (code, out.strip()) == (0, "no passage (the bot has no document indexed)")
        finally:
            indexer.close()

    code, out, _ = run(capsys, "documents", "set", "clerk", "--threshold", "0.45", "--max-file-mb", "2", "--off")
    assert (code, out.strip()) == (0, "Documents: off (documents set BOT --on)")
    code, out, _ = run(capsys, "documents", "set", "clerk", "--on")
    assert out.strip() == "Documents: on; threshold 0.45; files up to 2.0 MB; at most 20,000 passages"
    code, _, err = run(capsys, "documents", "set", "clerk", "--threshold", "1.5")
    assert code == 2 and err.strip() == "error: --threshold: must be between 0 and 1"
    code, _, err = run(capsys, "documents", "set", "clerk", "--max-file-mb", "0")
    assert code == 2 and err.strip() == "error: --max-file-mb: must be between 0.001 MB and 1024 MB"


def _size(path: Path) -> str:
    from grobot.core.wording import human_size

    return human_size(path.stat().st_size)
