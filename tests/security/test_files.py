"""File names an attacker chooses (issue 17): through the web app's upload (the files service it
calls) and through the ``files_read`` tool a Discord user can make the bot call, a name with
``..``, an absolute path, a NUL, 300 characters, or a symbolic link planted in the bot's folder
that points outside it is refused, and nothing outside the bot's folder is read, written or
deleted."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.models import BotFile
from grobot.core.services import bots, files
from grobot.core.tools.base import ToolContext

logger = logging.getLogger(__name__)

HOSTILE_NAMES = ["../escape.txt", "docs/../../escape.txt", "/etc/passwd", "/tmp/escape.txt", "C:/escape.txt",
                 "a\\..\\escape.txt", "notes\0.txt", "a" * 300 + ".txt", "docs/" + "b" * 300, "..", "./"]


@pytest.fixture
def bot_with_outside(grobot_env) -> tuple[int, Path, Path]:
    """A bot, its folder, and a folder next to it with a secret the bot must never reach."""
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Filer").id or 0
    root = files.bot_root(bot_id)
    outside = grobot_env.data_dir / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the admin's secret")
    return bot_id, root, outside


def files_read(bot_id: int, path: str) -> str:
    """What the bot's ``files_read`` tool answers when a Discord user asks for ``path``."""
    from grobot.core.store.run_store_db import DatabaseStore
    from grobot.core.tools.base import ToolError
    from grobot.core.tools.builtins import builtin_tools

    read = next(tool for tool in builtin_tools(bot_id, store=DatabaseStore()) if tool.spec.name == "files_read")
    try:
        return asyncio.run(read.call({"path": path}, ToolContext(bot_id=bot_id, user_id="666"))).content
    except ToolError as exc:  # what the model is told
        return str(exc)


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=lambda n: repr(n[:24]))
def test_a_hostile_upload_name_is_refused(bot_with_outside, name: str) -> None:
    bot_id, root, outside = bot_with_outside
    before = sorted(p for p in root.parent.parent.rglob("*"))
    with session_scope() as session, pytest.raises(ValidationError):
        files.write_file(session=session, bot_id=bot_id, path=name, data=b"pwned")
    with session_scope(readonly=True) as session:
        assert session.exec(select(BotFile).where(BotFile.bot_id == bot_id)).all() == []
    assert sorted(p for p in root.parent.parent.rglob("*")) == before  # nothing written anywhere
    assert not Path("/tmp/escape.txt").exists()


def test_a_symlink_planted_in_the_bots_folder_leads_nowhere(bot_with_outside) -> None:
    bot_id, root, outside = bot_with_outside
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "out").symlink_to(outside, target_is_directory=True)
    with session_scope() as session:  # as if the files were listed (rows pointing at the links)
        session.add(BotFile(bot_id=bot_id, path="leak.txt", size=18, content_type="text/plain", sha256="x"))
        session.add(BotFile(bot_id=bot_id, path="out/secret.txt", size=18, content_type="text/plain", sha256="x"))

    for path in ("leak.txt", "out/secret.txt"):
        with session_scope(readonly=True) as session, pytest.raises(ValidationError, match="outside the bot's folder"):
            files.read_bytes(session=session, bot_id=bot_id, path=path)
        with session_scope() as session, pytest.raises(ValidationError, match="outside the bot's folder"):
            files.write_file(session=session, bot_id=bot_id, path=path, data=b"overwritten")
        with session_scope() as session, pytest.raises(ValidationError, match="outside the bot's folder"):
            files.delete_file(session=session, bot_id=bot_id, path=path)
        answer = files_read(bot_id, path)
        assert "the admin's secret" not in answer and "outside the bot's folder" in answer, answer
    with session_scope() as session, pytest.raises(ValidationError, match="outside the bot's folder"):
        files.write_file(session=session, bot_id=bot_id, path="out/new.txt", data=b"planted")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "the admin's secret"


@pytest.mark.parametrize("name", ["../../outside/secret.txt", "/etc/passwd", "x\0y", "c" * 300])
def test_the_files_read_tool_refuses_hostile_names(bot_with_outside, name: str) -> None:
    bot_id, _root, _outside = bot_with_outside
    answer = files_read(bot_id, name)
    assert "the admin's secret" not in answer and "root:" not in answer
    assert answer  # the model is told why, in words


@pytest.mark.slow
def test_the_web_apps_upload_refuses_hostile_names_and_planted_links(admin_page, ui_env) -> None:
    """The Files tab in a real browser: long names, ``..`` folders and a planted symlink are
    refused in words, and nothing lands outside the bot's folder."""
    from playwright.sync_api import expect

    from tests.ui.auth import PAGE_TIMEOUT_MS
    from tests.ui.chat import add_bot, unique

    page = admin_page
    bot_id = add_bot(unique("Uploader"))
    root = files.bot_root(bot_id)
    outside = ui_env.data_dir.parent / unique("outside")
    outside.mkdir()
    (root / "out").symlink_to(outside, target_is_directory=True)
    page.goto(f"/bots/{bot_id}/files")
    expect(page.get_by_text("No files yet")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    chooser = page.locator("#bot-files-upload input[type=file]")
    folder = page.get_by_role("textbox", name="Folder (optional)")
    error = page.get_by_test_id("upload-error")

    # Each error differs from the one before, so each shows that upload's own refusal. A folder the
    # path rules refuse is said before the upload too; a planted link only the upload can find.
    for typed, hint, name, message in (("out", "out/", "planted.txt", "outside the bot's folder"),
                                       ("docs/..\\..", "no backslashes", "x.txt", "no backslashes"),
                                       ("out/deeper", "out/deeper/", "planted.txt", "outside the bot's folder"),
                                       ("", "the top folder", "a" * 300 + ".txt", "at most 255 bytes"),
                                       ("../../escape", "outside the bot's folder", "x.txt",
                                        "outside the bot's folder")):
        folder.fill(typed)
        expect(page.get_by_test_id("upload-target")).to_contain_text(hint)
        chooser.set_input_files([{"name": name, "mimeType": "text/plain", "buffer": b"pwned"}])
        expect(error).to_contain_text(message, timeout=PAGE_TIMEOUT_MS)
    assert list(outside.iterdir()) == []
    with session_scope(readonly=True) as session:
        assert session.exec(select(BotFile).where(BotFile.bot_id == bot_id)).all() == []
    assert sorted(p.name for p in root.iterdir()) == ["out"]
