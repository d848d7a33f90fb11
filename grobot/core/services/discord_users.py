"""What a bot knows of a Discord user: profile directives, notes; forgetting all of it."""

from __future__ import annotations

import logging

from sqlmodel import Session, delete, select

from grobot.core.models import UserNote, UserProfile, utcnow

logger = logging.getLogger(__name__)


def get_profile(*, session: Session, bot_id: int, discord_user_id: str) -> UserProfile | None:
    return session.exec(
        select(UserProfile).where(UserProfile.bot_id == bot_id, UserProfile.discord_user_id == discord_user_id)
    ).first()


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
    """Delete the profile and notes of a user (memories: once the memory store exists)."""
    profiles = session.exec(
        delete(UserProfile).where(UserProfile.bot_id == bot_id, UserProfile.discord_user_id == discord_user_id)
    ).rowcount
    notes = session.exec(
        delete(UserNote).where(UserNote.bot_id == bot_id, UserNote.discord_user_id == discord_user_id)
    ).rowcount
    logger.info("Bot %s forgot a user: %s profile(s), %s note(s)", bot_id, profiles, notes)
    return {"profiles": profiles or 0, "notes": notes or 0}
