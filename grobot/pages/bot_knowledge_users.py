"""What the Knowledge Base tab reads and changes: the bot's Discord users (by name), one user's
directives and notes, forgetting a user. Blocking: call these with ``asyncio.to_thread``; each
checks the session, the admin role and the bot (:func:`run_for_bot`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from grobot.core.errors import ValidationError
from grobot.core.models import AppUser, Bot, LLMCategory
from grobot.core.services import discord_users, llm_settings, user_notes
from grobot.state.bot_page import run_for_bot

logger = logging.getLogger(__name__)

USER_LIMIT = 200
MAX_USER_ID_CHARS = 32


@dataclass
class UserRow:
    """A Discord user in the list."""

    discord_user_id: str
    display_name: str
    has_directives: bool
    note_count: int
    updated: str
    message_count: int = 0
    suggestion_count: int = 0


@dataclass
class NoteRow:
    """A note about the selected user."""

    id: int
    note: str
    reliability: float
    percent: str
    source: str
    updated: str


@dataclass
class UserDetail:
    display_name: str
    directives: str
    notes: list[NoteRow]
    context_window: int = 0  # of the bot's output model, which reads the directives
    context_model: str = ""


def _users(session: Session, bot: Bot, search: str) -> list[UserRow]:
    return [UserRow(discord_user_id=u.discord_user_id, display_name=u.display_name, has_directives=u.has_directives,
                    note_count=u.note_count, updated=u.updated_at.strftime("%Y-%m-%d %H:%M") if u.updated_at else "",
                    message_count=u.message_count, suggestion_count=u.suggestion_count)
            for u in discord_users.known_users(session=session, bot_id=bot.id or 0, search=search, limit=USER_LIMIT)]


def _detail(session: Session, bot: Bot, user_id: str) -> UserDetail:
    profile = discord_users.get_profile(session=session, bot_id=bot.id or 0, discord_user_id=user_id)
    notes = [NoteRow(id=n.id or 0, note=n.note, reliability=n.reliability, percent=f"{round(n.reliability * 100)}%",
                     source=n.source, updated=n.updated_at.strftime("%Y-%m-%d"))
             for n in user_notes.list_notes(session=session, bot_id=bot.id or 0, discord_user_id=user_id)]
    name = discord_users.display_names(session=session, bot_id=bot.id or 0, user_ids=[user_id]).get(user_id, "")
    output = llm_settings.effective_llms(session=session, bot_id=bot.id)[LLMCategory.OUTPUT.value]
    return UserDetail(display_name=name, directives=profile.directives if profile else "", notes=notes,
                      context_window=int(output.context_window or 0),
                      context_model=f"the output model ({output.model})" if output.model else "the output model")


def clean_user_id(value: str) -> str:
    """A Discord user id as typed (digits only), or :class:`ValidationError`."""
    text = (value or "").strip()
    if not text.isdigit() or len(text) > MAX_USER_ID_CHARS:
        raise ValidationError("a Discord user id is a number (right-click the user in Discord, Copy User ID)")
    return text


def load_users(token: str, bot_id: int, search: str) -> list[UserRow]:
    return run_for_bot(token, bot_id, lambda session, _user, bot: _users(session, bot, search), admin=True)


def load_detail(token: str, bot_id: int, user_id: str) -> UserDetail:
    return run_for_bot(token, bot_id, lambda session, _user, bot: _detail(session, bot, user_id), admin=True)


def change_user(token: str, bot_id: int, user_id: str, change: Any) -> UserDetail:
    """``change(session, bot)`` as an admin, then the user's detail again (one transaction)."""

    def work(session: Session, user: AppUser, bot: Bot) -> UserDetail:
        change(session, bot)
        logger.info("User %s changed what bot %s knows of a Discord user", user.username, bot.id)
        return _detail(session, bot, user_id)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


def forget(token: str, bot_id: int, user_id: str) -> dict[str, int]:
    """Delete the profile, notes and memories of a user (after the admin check)."""
    checked_bot = run_for_bot(token, bot_id, lambda _session, _user, bot: bot.id or 0, admin=True)
    return discord_users.forget_user_everywhere(bot_id=checked_bot, discord_user_id=user_id)
