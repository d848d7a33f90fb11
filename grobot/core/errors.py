"""Domain errors: each carries a message fit to show a user as is."""

from __future__ import annotations

import errno


class GroBotError(Exception):
    """Base of every error GroBot reports to a user (CLI: one line, exit code 2)."""


class ValidationError(GroBotError):
    """Input that breaks a rule (bad name, bad token, unknown field, ...)."""


class NotFoundError(GroBotError):
    """A named thing does not exist."""


class ConflictError(GroBotError):
    """A unique name or similar constraint is already taken."""


class SecretKeyError(GroBotError):
    """Secrets cannot be decrypted (wrong key) or the key is unusable."""


class SettingsError(GroBotError, ValueError):
    """An environment variable holds a value GroBot cannot use (the message names the variable)."""


class PermissionDenied(GroBotError):
    """The session's role does not allow the action."""


class StorageError(GroBotError):
    """The data folder cannot take what is written to it (its disk full or read-only)."""


class MemoryUnavailable(GroBotError):
    """The memory (served by the bot worker on its link) cannot be reached."""

    def __init__(self, message: str = "memory service unavailable: is the bot worker running?") -> None:
        super().__init__(message)


# Why the data folder refused a write, in words an admin can act on, by the OS error number.
DISK_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the disk is read-only",
    errno.EACCES: "GroBot may not write there",
    errno.EPERM: "GroBot may not write there",
}
# The same, where a library only says it in words (SQLite and Chroma: "database or disk is full").
_DISK_WORDS = (("disk is full", errno.ENOSPC), ("no space left", errno.ENOSPC),
               ("readonly database", errno.EROFS), ("read-only file system", errno.EROFS))


def disk_problem(exc: BaseException) -> int | None:
    """The OS error number of a write the disk refused (full, read-only, forbidden: a key of
    :data:`DISK_REASONS`), from ``exc`` or its words; None for any other failure."""
    code = getattr(exc, "errno", None)
    if code in DISK_REASONS:
        return int(code)
    text = str(exc).lower()
    return next((number for words, number in _DISK_WORDS if words in text), None)


def first_line(exc: BaseException) -> str:
    """The first line of what ``exc`` says (its type's name when it says nothing)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def error_line(exc: BaseException, limit: int = 500) -> str:
    """An error in one line for a user: a domain error's own message, else its type and message."""
    if isinstance(exc, GroBotError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())[:limit] or "the run failed"
