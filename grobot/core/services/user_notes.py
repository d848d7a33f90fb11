"""Notes about a Discord user of a bot: facts with a reliability between 0 and 1.

A note is ``active`` (the bot knows it), ``suggested`` (an Archivist note waiting for an admin,
when the bot's ``notes_need_approval`` is on) or ``dismissed`` (refused: kept only so that the
Archivist never suggests it again). Only active notes reach the bot and its tools.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from sqlalchemy import bindparam, literal, literal_column, null, union_all
from sqlmodel import Session, col, select

from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import UserNote, UserProfile, utcnow
from grobot.core.tools.builtins import MAX_NOTE_CHARS

logger = logging.getLogger(__name__)

SOURCES = ("admin", "tool", "archivist")
ACTIVE, SUGGESTED, DISMISSED = "active", "suggested", "dismissed"
STATUSES = (ACTIVE, SUGGESTED, DISMISSED)
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
_NOTE_PAIRS = (select(UserNote.note, UserNote.reliability)
               .where(UserNote.bot_id == bindparam("bot_id"), UserNote.discord_user_id == bindparam("user_id"),
                      UserNote.status == ACTIVE)
               .order_by(*_NOTES_ORDER))


def _query_notes(session: Session, bot_id: int, discord_user_id: str, status: str | None = ACTIVE) -> list[UserNote]:
    stmt = (
        select(UserNote)
        .where(UserNote.bot_id == bot_id, UserNote.discord_user_id == str(discord_user_id))
        .order_by(*_NOTES_ORDER)
    )
    if status is not None:
        stmt = stmt.where(UserNote.status == status)
    return list(session.exec(stmt).all())


def note_pairs(*, session: Session, bot_id: int, discord_user_id: str) -> list[tuple[str, float]]:
    """``(note, reliability)`` of one user, in :func:`list_notes` order, without ORM objects (per message)."""
    rows = session.connection().execute(_NOTE_PAIRS, {"bot_id": bot_id, "user_id": str(discord_user_id)}).all()
    return [(note, reliability) for note, reliability in rows]


# The admin's directives for a user (kind 0) and the user's active notes (kind 1, in _NOTES_ORDER), in one
# statement: read for every message a bot answers.
_WHO: dict[str, Any] = {"bot_id": bindparam("bot_id"), "user_id": bindparam("user_id")}
_KNOWLEDGE = union_all(
    select(literal(0).label("kind"), col(UserProfile.directives).label("text"), null().label("reliability"),
           null().label("updated_at"), null().label("id"))
    .where(UserProfile.bot_id == _WHO["bot_id"], UserProfile.discord_user_id == _WHO["user_id"]),
    select(literal(1).label("kind"), col(UserNote.note).label("text"), col(UserNote.reliability).label("reliability"),
           col(UserNote.updated_at).label("updated_at"), col(UserNote.id).label("id"))
    .where(UserNote.bot_id == _WHO["bot_id"], UserNote.discord_user_id == _WHO["user_id"], UserNote.status == ACTIVE),
).order_by(literal_column("kind"), literal_column("reliability").desc(), literal_column("updated_at").desc(),
           literal_column("id").desc())


def directives_and_notes(*, session: Session, bot_id: int, discord_user_id: str) -> tuple[str, list[tuple[str, float]]]:
    """The admin's directives for one user ("" when none) and the user's :func:`note_pairs`, in one query."""
    directives, notes = "", []
    for kind, text, reliability, _, _ in session.connection().execute(
            _KNOWLEDGE, {"bot_id": bot_id, "user_id": str(discord_user_id)}).all():
        if kind == 0:
            directives = str(text or "")
        else:
            notes.append((str(text), float(reliability)))
    return directives, notes


def list_notes(*, session: Session, bot_id: int, discord_user_id: str, status: str = ACTIVE) -> list[UserNote]:
    """The notes of one user of one bot (``status``: active ones, or the suggestions), most reliable first.

    The rows are detached from the session, so they stay readable after a read-only
    session ends (which rolls back and would otherwise expire them).
    """
    rows = _query_notes(session, bot_id, str(discord_user_id), status)
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
    *, session: Session, bot_id: int, discord_user_id: str, note: str, reliability: float, source: str,
    status: str = ACTIVE,
) -> UserNote:
    """Add a note; the same text again (normalised) raises the existing note's reliability instead.

    ``status`` ``suggested``: it waits for an admin. A suggestion the admin dismissed is never
    suggested again; an active note given for a suggested one accepts it.
    """
    text = _clean_note(note)
    value = _check_reliability(reliability)
    if source not in SOURCES:
        raise ValidationError(f"note source must be one of {', '.join(SOURCES)}, not {source!r}")
    user = str(discord_user_id or "").strip()
    if not user:
        raise ValidationError("a note needs the Discord user id it is about")
    if status not in (ACTIVE, SUGGESTED):
        raise ValidationError(f"a new note is active or suggested, not {status!r}")
    key = normalise(text)
    for existing in _query_notes(session, bot_id, user, None):
        if normalise(existing.note) == key:
            if existing.status == DISMISSED and status == SUGGESTED:
                return existing
            changed = False
            if existing.status != ACTIVE and status == ACTIVE:
                existing.status, changed = ACTIVE, True
            if value > existing.reliability:
                existing.reliability, changed = value, True
            if changed:
                existing.updated_at = utcnow()
                session.add(existing)
                session.flush()
            return existing
    row = UserNote(bot_id=bot_id, discord_user_id=user, note=text, reliability=value, source=source, status=status)
    session.add(row)
    session.flush()
    logger.info("user note %s added for bot %s (source %s, %s)", row.id, bot_id, source, status)
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


def suggestions(*, session: Session, bot_id: int, limit: int = 200) -> list[UserNote]:
    """The bot's notes waiting for an admin, newest first (detached from the session)."""
    rows = list(session.exec(select(UserNote).where(UserNote.bot_id == bot_id, UserNote.status == SUGGESTED)
                             .order_by(col(UserNote.created_at).desc(), col(UserNote.id).desc()).limit(limit)).all())
    for row in rows:
        session.expunge(row)
    return rows


def _suggested(session: Session, bot_id: int, note_id: int) -> UserNote:
    row = get_note(session=session, note_id=note_id)
    if row.bot_id != bot_id:
        raise NotFoundError(f"no user note numbered {note_id} for this bot")
    if row.status != SUGGESTED:
        raise ValidationError(f"note {note_id} is not a suggestion (it is {row.status})")
    return row


def _decide(session: Session, row: UserNote, status: str) -> UserNote:
    row.status = status
    row.updated_at = utcnow()
    session.add(row)
    session.flush()
    return row


def accept_suggestion(*, session: Session, bot_id: int, note_id: int, note: str | None = None) -> UserNote:
    """The admin accepts a suggested note (``note``: as the admin edited it): the bot knows it from now on."""
    row = _suggested(session, bot_id, note_id)
    if note is not None:
        row.note = _clean_note(note)
    return _decide(session, row, ACTIVE)


def dismiss_suggestion(*, session: Session, bot_id: int, note_id: int) -> UserNote:
    """The admin dismisses a suggested note: the bot never knows it, and it is not suggested again."""
    return _decide(session, _suggested(session, bot_id, note_id), DISMISSED)
