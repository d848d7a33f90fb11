"""What a bot knows of a Discord user: profile directives, notes; forgetting all of it."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, case, func, union
from sqlmodel import Session, col, delete, select

from grobot.core.models import Conversation, Message, UserNote, UserProfile, utcnow

logger = logging.getLogger(__name__)


def get_profile(*, session: Session, bot_id: int, discord_user_id: str) -> UserProfile | None:
    return session.exec(
        select(UserProfile).where(UserProfile.bot_id == bot_id, UserProfile.discord_user_id == discord_user_id)
    ).first()


_DIRECTIVES = select(UserProfile.directives).where(UserProfile.bot_id == bindparam("bot_id"),
                                                   UserProfile.discord_user_id == bindparam("user_id"))


def get_directives(*, session: Session, bot_id: int, discord_user_id: str) -> str:
    """The admin's directives for this user ("" when none), without ORM objects (per message)."""
    return session.connection().execute(_DIRECTIVES, {"bot_id": bot_id, "user_id": str(discord_user_id)}).scalar() or ""


def set_directives(
    *, session: Session, bot_id: int, discord_user_id: str, directives: str, display_name: str = ""
) -> UserProfile:
    """Admin-written directives for how the bot treats this user."""
    profile = get_profile(session=session, bot_id=bot_id, discord_user_id=discord_user_id) or UserProfile(
        bot_id=bot_id, discord_user_id=discord_user_id
    )
    profile.directives = directives.strip()[:5000]
    if display_name:
        profile.display_name = display_name[:100]
    profile.updated_at = utcnow()
    session.add(profile)
    session.flush()
    return profile


def forget_user(*, session: Session, bot_id: int, discord_user_id: str) -> dict[str, int]:
    """Delete the profile and the notes of a user (memories: :func:`forget_user_everywhere`)."""
    profiles = session.exec(
        delete(UserProfile).where(UserProfile.bot_id == bot_id, UserProfile.discord_user_id == discord_user_id)
    ).rowcount
    notes = session.exec(
        delete(UserNote).where(UserNote.bot_id == bot_id, UserNote.discord_user_id == discord_user_id)
    ).rowcount
    logger.info("Bot %s forgot a user: %s profile(s), %s note(s)", bot_id, profiles, notes)
    return {"profiles": profiles or 0, "notes": notes or 0}


def forget_user_everywhere(*, bot_id: int, discord_user_id: str) -> dict[str, int]:
    """Profile and notes (one transaction, committed first), then the memories (the worker's memory).

    The worker's memory is asked after the database transaction ends, never while it holds
    the write lock. Without a running worker the memories cannot be deleted: the profile and
    notes are gone, and :class:`MemoryUnavailable` says what is left to do.
    """
    from grobot.core.db import session_scope
    from grobot.core.errors import MemoryUnavailable

    with session_scope() as session:
        counts = forget_user(session=session, bot_id=bot_id, discord_user_id=discord_user_id)
    try:
        counts["memories"] = forget_user_memories(bot_id=bot_id, discord_user_id=discord_user_id)
    except MemoryUnavailable as exc:
        raise MemoryUnavailable(f"profile and notes forgotten ({counts['profiles']} profile(s), {counts['notes']} "
                                f"note(s)), but not the memories: {exc}; run the command again once it runs") from None
    return counts


def forget_user_memories(*, bot_id: int, discord_user_id: str) -> int:
    """Delete the memories whose ``user_id`` metadata is this user (the worker's memory); returns how many."""
    from grobot.core.db import session_scope
    from grobot.core.services.memories import delete_user_memories

    with session_scope(readonly=True) as session:
        return delete_user_memories(bot_id, discord_user_id, session=session)


DISCORD_KINDS = ("guild", "dm", "thread")  # conversations on Discord (not Test Chat, not the CLI)


@dataclass(frozen=True)
class KnownUser:
    """A Discord user of a bot: someone who talked to it, or it knows something about."""

    discord_user_id: str
    display_name: str
    has_directives: bool
    note_count: int  # active notes
    updated_at: datetime | None  # last message, note or profile change
    message_count: int = 0
    suggestion_count: int = 0  # notes waiting for an admin


def known_users(*, session: Session, bot_id: int, search: str = "", limit: int = 200) -> list[KnownUser]:
    """Everyone who wrote to ``bot_id`` on Discord, and everyone with a profile or notes, latest first.

    Aggregated in SQL: per user the messages (count, last time, the newest display name), the
    active and suggested notes, and the profile.
    """
    active = func.sum(case((UserNote.status == "active", 1), else_=0))
    suggested = func.sum(case((UserNote.status == "suggested", 1), else_=0))
    notes = (
        select(UserNote.discord_user_id.label("uid"), active.label("notes"), suggested.label("suggested"),  # type: ignore[attr-defined]
               func.max(UserNote.updated_at).label("updated"))
        .where(UserNote.bot_id == bot_id).group_by(UserNote.discord_user_id).subquery()
    )
    spoke = (
        select(Message.author_id.label("uid"), func.count().label("messages"),  # type: ignore[union-attr]
               func.max(Message.created_at).label("last"), func.max(Message.id).label("last_id"))
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(Conversation.bot_id == bot_id, col(Conversation.kind).in_(DISCORD_KINDS), Message.role == "user",
               Message.author_id.is_not(None))  # type: ignore[union-attr]
        .group_by(Message.author_id).subquery()
    )
    profiles = select(UserProfile.discord_user_id.label("uid")).where(UserProfile.bot_id == bot_id)  # type: ignore[attr-defined]
    ids = select(notes.c.uid).union(profiles, select(spoke.c.uid)).subquery()
    spoken_name = select(Message.author_name).where(Message.id == spoke.c.last_id).scalar_subquery()
    stmt = (
        select(ids.c.uid, UserProfile.display_name, spoken_name, UserProfile.directives, notes.c.notes,
               notes.c.suggested, notes.c.updated, UserProfile.updated_at, spoke.c.messages, spoke.c.last)
        .select_from(ids)
        .join(UserProfile, (UserProfile.bot_id == bot_id) & (UserProfile.discord_user_id == ids.c.uid), isouter=True)
        .join(notes, notes.c.uid == ids.c.uid, isouter=True)
        .join(spoke, spoke.c.uid == ids.c.uid, isouter=True)
    )
    search = (search or "").strip()
    if search:
        pattern = f"%{search}%"
        stmt = stmt.where(ids.c.uid.ilike(pattern) | col(UserProfile.display_name).ilike(pattern)
                          | spoken_name.ilike(pattern))
    last = func.coalesce(spoke.c.last, notes.c.updated, UserProfile.updated_at)
    stmt = stmt.order_by(last.desc(), ids.c.uid).limit(limit)
    result = []
    for (uid, name, spoken, directives, note_count, suggestion_count, notes_at, profile_at, messages,
         spoke_at) in session.exec(stmt).all():
        times = [t for t in (notes_at, profile_at, spoke_at) if t is not None]
        result.append(KnownUser(discord_user_id=str(uid), display_name=name or spoken or "",
                                has_directives=bool(directives), note_count=int(note_count or 0),
                                updated_at=max(times) if times else None, message_count=int(messages or 0),
                                suggestion_count=int(suggestion_count or 0)))
    return result


def display_names(*, session: Session, bot_id: int, user_ids: Iterable[str]) -> dict[str, str]:
    """The name of each Discord user in ``user_ids`` that ``bot_id`` knows: the profile's name, else the
    name they last wrote to the bot under (one query; users without a name are left out)."""
    ids = sorted({str(u) for u in user_ids if u})
    if not ids:
        return {}
    last = (
        select(Message.author_id.label("uid"), func.max(Message.id).label("last_id"))  # type: ignore[union-attr]
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(Conversation.bot_id == bot_id, col(Conversation.kind).in_(DISCORD_KINDS), Message.role == "user",
               col(Message.author_id).in_(ids))
        .group_by(Message.author_id).subquery()
    )
    profiled = select(UserProfile.discord_user_id.label("uid")).where(  # type: ignore[attr-defined]
        UserProfile.bot_id == bot_id, col(UserProfile.discord_user_id).in_(ids))
    every = union(profiled, select(last.c.uid)).subquery()
    stmt = (
        select(every.c.uid, UserProfile.display_name, Message.author_name)
        .select_from(every)
        .join(UserProfile, (UserProfile.bot_id == bot_id) & (UserProfile.discord_user_id == every.c.uid), isouter=True)
        .join(last, last.c.uid == every.c.uid, isouter=True)
        .join(Message, Message.id == last.c.last_id, isouter=True)
    )
    return {str(uid): str(profile or spoken) for uid, profile, spoken in session.exec(stmt).all()
            if profile or spoken}
