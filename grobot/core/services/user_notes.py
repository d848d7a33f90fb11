"""Notes about a Discord user of a bot: facts with a reliability between 0 and 1."""

from __future__ import annotations

import logging
import re

from sqlalchemy import bindparam
from sqlmodel import Session, col, select

from grobot.core.agents.context import MAX_NOTE_CHARS
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import UserNote, utcnow

logger = logging.getLogger(__name__)

SOURCES = ("admin", "tool", "archivist")
_SPACES = re.compile(r"\s+")


def normalise(note: str) -> str:
    """The form two notes are compared in: trimmed, single spaces, lower case, no final dot."""
    return _SPACES.sub(" ", (note or "").strip()).rstrip(" .!").casefold()


def _clean_note(note: str) -> str:
    text = _SPACES.sub(" ", (note or "").strip())
    if not text:
        raise ValidationError("a note cannot be empty")
    if len(text) > MAX_NOTE_CHARS:
        raise ValidationError(f"a note is at most {MAX_NOTE_CHARS} characters (this one has {len(text)})")
    return text


def _check_reliability(reliability: float) -> float:
    try:
        value = float(reliability)
    except (TypeError, ValueError):
        raise ValidationError("reliability must be a number between 0 and 1") from None
    if not 0.0 <= value <= 1.0:
        raise ValidationError(f"reliability must be between 0 and 1, not {value:g}")
    return value


# Most reliable first, then newest: the order every reader of notes uses.
_NOTES_ORDER = (col(UserNote.reliability).desc(), col(UserNote.updated_at).desc(), col(UserNote.id).desc())
_NOTE_PAIRS = (select(UserNote.note, UserNote.reliability)  # type: ignore[call-overload]
               .where(UserNote.bot_id == bindparam("bot_id"), UserNote.discord_user_id == bindparam("user_id"))
               .order_by(*_NOTES_ORDER))


def _query_notes(session: Session, bot_id: int, discord_user_id: str) -> list[UserNote]:
    stmt = (
        select(UserNote)
        .where(UserNote.bot_id == bot_id, UserNote.discord_user_id == str(discord_user_id))
        .order_by(*_NOTES_ORDER)
    )
    return list(session.exec(stmt).all())


def note_pairs(*, session: Session, bot_id: int, discord_user_id: str) -> list[tuple[str, float]]:
    """``(note, reliability)`` of one user, in :func:`list_notes` order, without ORM objects (per message)."""
    rows = session.connection().execute(_NOTE_PAIRS, {"bot_id": bot_id, "user_id": str(discord_user_id)}).all()
    return [(note, reliability) for note, reliability in rows]


def list_notes(*, session: Session, bot_id: int, discord_user_id: str) -> list[UserNote]:
    """The notes of one user of one bot, most reliable first (then newest).

    The rows are detached from the session, so they stay readable after a read-only
    session ends (which rolls back and would otherwise expire them).
    """
    rows = _query_notes(session, bot_id, str(discord_user_id))
    for row in rows:
        session.expunge(row)
    return rows


def get_note(*, session: Session, note_id: int) -> UserNote:
    """One note by id."""
    note = session.get(UserNote, note_id)
    if note is None:
        raise NotFoundError(f"no user note numbered {note_id}")
    return note


def add_note(
    *, session: Session, bot_id: int, discord_user_id: str, note: str, reliability: float, source: str
) -> UserNote:
    """Add a note; the same text again (normalised) raises the existing note's reliability instead."""
    text = _clean_note(note)
    value = _check_reliability(reliability)
    if source not in SOURCES:
        raise ValidationError(f"note source must be one of {', '.join(SOURCES)}, not {source!r}")
    user = str(discord_user_id or "").strip()
    if not user:
        raise ValidationError("a note needs the Discord user id it is about")
    key = normalise(text)
    for existing in _query_notes(session, bot_id, user):
        if normalise(existing.note) == key:
            if value > existing.reliability:
                existing.reliability = value
                existing.updated_at = utcnow()
                session.add(existing)
                session.flush()
            return existing
    row = UserNote(bot_id=bot_id, discord_user_id=user, note=text, reliability=value, source=source)
    session.add(row)
    session.flush()
    logger.info("user note %s added for bot %s (source %s)", row.id, bot_id, source)
    return row


def update_note(
    *, session: Session, note_id: int, note: str | None = None, reliability: float | None = None
) -> UserNote:
    """Change the text and/or the reliability of a note."""
    row = get_note(session=session, note_id=note_id)
    if note is not None:
        row.note = _clean_note(note)
    if reliability is not None:
        row.reliability = _check_reliability(reliability)
    row.updated_at = utcnow()
    session.add(row)
    session.flush()
    return row


def delete_note(*, session: Session, note_id: int) -> None:
    """Delete a note."""
    row = get_note(session=session, note_id=note_id)
    session.delete(row)
    session.flush()
