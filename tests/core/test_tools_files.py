"""Bot files: confined to the bot's folder, size-capped; the files tools read them."""

from __future__ import annotations

import errno
import os

import pytest

from grobot.core.db import session_scope
from grobot.core.errors import NotFoundError, StorageError, ValidationError
from grobot.core.models import Role
from grobot.core.services import app_settings, bots, files, users
from grobot.core.settings import get_settings
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.base import ToolContext, ToolError
from grobot.core.tools.catalog import catalog_for_bot


@pytest.fixture
def bot_id(grobot_env) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name="files-bot").id


def _write(bot_id: int, path: str, data: bytes):
    with session_scope() as session:
        return files.write_file(session=session, bot_id=bot_id, path=path, data=data)


def test_write_list_read_delete(bot_id):
    row = _write(bot_id, "docs/readme.md", b"# Hello\n")
    assert (row.path, row.size, row.content_type) == ("docs/readme.md", 8, "text/markdown")
    assert (get_settings().bot_files_dir(bot_id) / "docs" / "readme.md").read_bytes() == b"# Hello\n"
    _write(bot_id, "./notes.txt", b"one")
    _write(bot_id, "notes.txt", b"two")  # replaced, not duplicated
    with session_scope(readonly=True) as session:
        listed = [(f.path, f.size) for f in files.list_files(session=session, bot_id=bot_id)]
        assert listed == [("docs/readme.md", 8), ("notes.txt", 3)]
        assert files.read_text(session=session, bot_id=bot_id, path="notes.txt") == ("two", False)
    with session_scope() as session:
        files.delete_file(session=session, bot_id=bot_id, path="notes.txt")
    assert not (get_settings().bot_files_dir(bot_id) / "notes.txt").exists()
    with session_scope(readonly=True) as session, pytest.raises(NotFoundError, match="no file 'notes.txt'"):
        files.read_bytes(session=session, bot_id=bot_id, path="notes.txt")


@pytest.mark.parametrize(
    "path, message",
    [
        ("../other/secret.txt", "'..' is not allowed"),
        ("docs/../../x", "'..' is not allowed"),
        ("/etc/passwd", "absolute path"),
        ("C:/Windows/win.ini", "absolute path"),
        ("a\\..\\b", "backslashes"),
        ("", "required"),
    ],
)
def test_paths_that_escape_are_refused(bot_id, path, message):
    with pytest.raises(ValidationError, match=message):
        _write(bot_id, path, b"x")


def test_symlinks_out_of_the_folder_are_refused(bot_id, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    root = files.bot_root(bot_id)
    os.symlink(outside, root / "link")
    os.symlink(outside / "secret.txt", root / "secret.txt")
    with pytest.raises(ValidationError, match="outside the bot's folder"):
        _write(bot_id, "link/new.txt", b"x")
    with pytest.raises(ValidationError, match="outside the bot's folder"):
        files.resolve(bot_id, "secret.txt")
    assert not (outside / "new.txt").exists()


def test_size_limit_comes_from_the_settings(bot_id):
    with session_scope() as session:
        app_settings.set_value("max_file_bytes", 10, session=session)
    _write(bot_id, "small.txt", b"0123456789")
    with pytest.raises(ValidationError, match="the limit is 10 bytes"):
        _write(bot_id, "big.txt", b"01234567890")


async def test_files_tools_list_and_read_text_only(bot_id):
    _write(bot_id, "faq.txt", "Opening hours: 9-17 ☀".encode())
    _write(bot_id, "logo.png", b"\x89PNG\r\n\x1a\n\0\0\0binary")
    catalog = await catalog_for_bot(bot_id, store=DatabaseStore())
    ctx = ToolContext(bot_id=bot_id, user_id="42")
    listed = await catalog.call_tool("files_list", {}, context=ctx, timeout=10)
    assert [f["path"] for f in listed.structured] == ["faq.txt", "logo.png"]
    read = await catalog.call_tool("files_read", {"path": "faq.txt"}, context=ctx, timeout=10)
    assert read.content == "Opening hours: 9-17 ☀"
    with pytest.raises(ToolError, match="not a text file"):
        await catalog.call_tool("files_read", {"path": "logo.png"}, context=ctx, timeout=10)
    with pytest.raises(ToolError, match=r"'\.\.' is not allowed"):
        await catalog.call_tool("files_read", {"path": "../1/faq.txt"}, context=ctx, timeout=10)
    with pytest.raises(ToolError, match="'path' is a required property"):
        await catalog.call_tool("files_read", {}, context=ctx, timeout=10)


class _DiskWithLittleRoom:
    """The bots' disk with ``free`` bytes left: writes past them fail as on a full disk (ENOSPC)."""

    def __init__(self, free: int) -> None:
        self.free = free
        self._fdopen = os.fdopen

    def fdopen(self, fd: int, mode: str = "r", *args, **kwargs):
        handle = self._fdopen(fd, mode, *args, **kwargs)
        disk = self

        class Handle:
            def write(self, data: bytes) -> int:
                if len(data) > disk.free:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                disk.free -= len(data)
                return handle.write(data)

            def __enter__(self):
                return self

            def __exit__(self, *exc) -> None:
                handle.close()

        return Handle()


def test_an_upload_to_a_full_disk_says_so_and_changes_no_file(bot_id, monkeypatch):
    from grobot.pages.bot_files_state import store_files
    from grobot.state.bot_page import user_message

    _write(bot_id, "notes.txt", b"old notes")
    with session_scope() as session:
        admin = users.create_user(session=session, username="root-admin", password=users.generate_password(),
                                  role=Role.ADMIN.value)
        token = users.start_session(admin)
    folder = get_settings().bot_files_dir(bot_id)
    monkeypatch.setattr(files.os, "fdopen", _DiskWithLittleRoom(free=1000).fdopen)

    with pytest.raises(StorageError) as caught:
        store_files(token, bot_id, [("notes.txt", b"new notes", "text/plain"), ("big.bin", b"x" * 5000, None)])

    assert user_message(caught.value) == (f"The file big.bin could not be stored: the disk is full ({folder}); "
                                          "no file was changed")  # its name as it is, not "Big.bin"
    assert (folder / "notes.txt").read_bytes() == b"old notes"  # all or none: the first file is not replaced
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]  # no half-written or temporary file
    with session_scope(readonly=True) as session:
        assert [(f.path, f.size) for f in files.list_files(session=session, bot_id=bot_id)] == [("notes.txt", 9)]
