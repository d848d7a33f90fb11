"""The files of a bot: bytes on disk under the bot's folder, metadata in ``bot_file``.

Every path is relative to ``settings.bot_files_dir(bot_id)``; absolute paths, ``..``
and symbolic links that lead outside the folder are refused. Files written together are
written all or none: each goes to a temporary file first (a full or read-only disk fails
there, with :class:`StorageError`, before any file changes), then they take their places.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import os
import tempfile
from collections.abc import Collection
from pathlib import Path, PurePosixPath

from sqlmodel import Session, col, select

from grobot.core.errors import DISK_REASONS, NotFoundError, StorageError, ValidationError, disk_problem
from grobot.core.models import BotFile, utcnow
from grobot.core.services import app_settings
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

MAX_PATH_CHARS = 500
MAX_NAME_BYTES = 255  # one file or folder name (the limit of common filesystems)
TEXT_READ_LIMIT = 100_000  # characters a text read returns at most


def bot_root(bot_id: int) -> Path:
    """The bot's folder (created when missing)."""
    root = get_settings().bot_files_dir(bot_id)
    root.mkdir(parents=True, exist_ok=True)
    return root


def clean_path(path: str) -> str:
    """``path`` as a normalised relative POSIX path, or :class:`ValidationError` when it could escape."""
    raw = (path or "").strip()
    if not raw:
        raise ValidationError("a file path is required")
    if len(raw) > MAX_PATH_CHARS:
        raise ValidationError(f"a file path is at most {MAX_PATH_CHARS} characters")
    if "\0" in raw or "\\" in raw:
        raise ValidationError(f"{path!r} is not a valid file path (no backslashes or NUL characters)")
    pure = PurePosixPath(raw)
    if pure.is_absolute() or (len(raw) > 1 and raw[1] == ":"):
        raise ValidationError(f"{path!r} is an absolute path; give a path inside the bot's folder")
    parts = [p for p in pure.parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ValidationError(f"{path!r} goes outside the bot's folder ('..' is not allowed)")
    if not parts:
        raise ValidationError("a file path is required")
    if any(len(p.encode("utf-8")) > MAX_NAME_BYTES for p in parts):
        raise ValidationError(f"a file or folder name is at most {MAX_NAME_BYTES} bytes")
    return "/".join(parts)


def resolve(bot_id: int, path: str) -> tuple[str, Path]:
    """The clean relative path and the real location of ``path``, confined to the bot's folder."""
    rel = clean_path(path)
    root = bot_root(bot_id).resolve()
    target = (root / rel).resolve()
    if target != root and root not in target.parents:
        raise ValidationError(f"{path!r} leads outside the bot's folder (through a symbolic link)")
    return rel, target


def max_file_bytes(*, session: Session) -> int:
    return int(app_settings.get_value("max_file_bytes", session=session))


def list_files(*, session: Session, bot_id: int) -> list[BotFile]:
    """The bot's files by path (rows detached, so they outlive a read-only session)."""
    rows = list(session.exec(select(BotFile).where(BotFile.bot_id == bot_id).order_by(BotFile.path)).all())
    for row in rows:
        session.expunge(row)
    return rows


def existing_sizes(*, session: Session, bot_id: int, paths: list[str]) -> dict[str, int]:
    """The files among ``paths`` (clean relative paths) the bot has already, with their sizes."""
    if not paths:
        return {}
    rows = session.exec(select(BotFile.path, BotFile.size).where(BotFile.bot_id == bot_id,
                                                                 col(BotFile.path).in_(paths))).all()
    return {path: size for path, size in rows}


def free_path(*, session: Session, bot_id: int, path: str, taken: Collection[str] = ()) -> str:
    """``path``, or ``name (2).ext``, ``name (3).ext``... when the bot has a file there (or it is in ``taken``):
    where an upload that keeps both files goes."""
    rel = clean_path(path)
    pure = PurePosixPath(rel)
    stem, suffix = pure.stem, pure.suffix
    used = set(taken) | set(session.exec(select(BotFile.path).where(BotFile.bot_id == bot_id)).all())
    candidate, number = rel, 1
    while candidate in used:
        number += 1
        candidate = str(pure.with_name(f"{stem} ({number}){suffix}"))
    return candidate


def get_file(*, session: Session, bot_id: int, path: str) -> BotFile:
    rel = clean_path(path)
    row = session.exec(select(BotFile).where(BotFile.bot_id == bot_id, BotFile.path == rel)).first()
    if row is None:
        raise NotFoundError(f"the bot has no file {rel!r}")
    return row


def read_bytes(*, session: Session, bot_id: int, path: str) -> bytes:
    """The content of one of the bot's files."""
    row = get_file(session=session, bot_id=bot_id, path=path)
    _, target = resolve(bot_id, row.path)
    if not target.is_file():
        raise NotFoundError(f"the file {row.path!r} is missing from disk")
    limit = max(max_file_bytes(session=session), row.size)
    with target.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValidationError(f"the file {row.path!r} is larger than {limit} bytes")
    return data


def read_text(*, session: Session, bot_id: int, path: str, max_chars: int = TEXT_READ_LIMIT) -> tuple[str, bool]:
    """A text file's content (at most ``max_chars``) and whether it was cut."""
    data = read_bytes(session=session, bot_id=bot_id, path=path)
    if b"\0" in data[:8192]:
        raise ValidationError(f"the file {clean_path(path)!r} is not a text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError(f"the file {clean_path(path)!r} is not a UTF-8 text file") from None
    if len(text) > max_chars:
        return text[:max_chars], True
    return text, False


def write_file(
    *, session: Session, bot_id: int, path: str, data: bytes, content_type: str | None = None
) -> BotFile:
    """Create or replace a file (atomically on disk) and its metadata row."""
    return write_files(session=session, bot_id=bot_id, files=[(path, data, content_type)])[0]


def write_files(*, session: Session, bot_id: int, files: list[tuple[str, bytes, str | None]]) -> list[BotFile]:
    """Create or replace files ``(path, data, content type)`` and their rows, all or none on disk."""
    limit = max_file_bytes(session=session)
    staged: list[tuple[str, Path, str]] = []
    try:
        for path, data, _ in files:
            staged.append(_stage(bot_id, path, data, limit))
        for _, target, tmp in staged:
            os.replace(tmp, target)
    finally:
        for _, _, tmp in staged:
            Path(tmp).unlink(missing_ok=True)  # left over only when a file failed
    return [_record(session, bot_id, rel, data, content_type)
            for (rel, _, _), (_, data, content_type) in zip(staged, files, strict=True)]


def _stage(bot_id: int, path: str, data: bytes, limit: int) -> tuple[str, Path, str]:
    """Write ``data`` beside the file of ``path``: ``(clean path, target, temporary file)``."""
    if len(data) > limit:
        raise ValidationError(f"the file is {len(data)} bytes; the limit is {limit} bytes")
    rel = clean_path(path)
    try:
        rel, target = resolve(bot_id, rel)
        if target.exists() and not target.is_file():
            raise ValidationError(f"{rel!r} is a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        _, target = resolve(bot_id, rel)  # again: the folders now exist, links among them are resolved
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".upload-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise _storage_error(bot_id, rel, exc) from None
    return rel, target, tmp


def _storage_error(bot_id: int, rel: str, exc: OSError) -> StorageError:
    reason = DISK_REASONS.get(disk_problem(exc) or 0) or exc.strerror or type(exc).__name__
    folder = get_settings().bot_files_dir(bot_id)
    logger.warning("Bot %s: file %s could not be stored in %s: %s", bot_id, rel, folder, exc.strerror or exc)
    return StorageError(f"the file {rel} could not be stored: {reason} ({folder}); no file was changed")


def _record(session: Session, bot_id: int, rel: str, data: bytes, content_type: str | None) -> BotFile:
    row = session.exec(select(BotFile).where(BotFile.bot_id == bot_id, BotFile.path == rel)).first()
    if row is None:
        row = BotFile(bot_id=bot_id, path=rel)
    row.size = len(data)
    row.content_type = content_type or mimetypes.guess_type(rel)[0] or "application/octet-stream"
    row.sha256 = hashlib.sha256(data).hexdigest()
    row.updated_at = utcnow()
    session.add(row)
    session.flush()
    logger.info("Bot %s: file %s written (%d bytes)", bot_id, rel, len(data))
    return row


def delete_file(*, session: Session, bot_id: int, path: str) -> None:
    """Delete a file from disk and its row."""
    row = get_file(session=session, bot_id=bot_id, path=path)
    _, target = resolve(bot_id, row.path)
    target.unlink(missing_ok=True)
    session.delete(row)
    session.flush()
    logger.info("Bot %s: file %s deleted", bot_id, row.path)
