"""A bot's Discord conversations as an admin reads them: the channels, threads and DMs (optionally
those one user wrote in), and the messages of one, with the people by name."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func
from sqlmodel import Session, col, select

from grobot.core.errors import NotFoundError
from grobot.core.models import Conversation, Message
from grobot.core.services.discord_users import DISCORD_KINDS

logger = logging.getLogger(__name__)

SHOWN_ROLES = ("user", "assistant")  # tool exchanges stay in the Test Chat's steps


@dataclass(frozen=True)
class ConversationSummary:
    """One Discord conversation of a bot: where, how much, with how many people, when last."""

    id: int
    kind: str  # guild | thread | dm
    title: str
    messages: int
    people: int
    last_at: datetime | None
    last_author: str


@dataclass(frozen=True)
class ConversationLine:
    """One message of a conversation as it is shown."""

    id: int
    role: str
    author_id: str
    author_name: str
    content: str
    created_at: datetime


def discord_conversations(*, session: Session, bot_id: int, user_id: str = "", limit: int = 100) -> list[ConversationSummary]:
    """The bot's Discord conversations, the most recent first (only those ``user_id`` wrote in, when given);
    counted in SQL, at most ``limit``."""
    shown = (Message.role.in_(SHOWN_ROLES)) & (Message.content != "")  # type: ignore[attr-defined]
    people = func.count(func.distinct(Message.author_id)).filter(Message.role == "user")
    stats = (
        select(col(Message.conversation_id).label("cid"), func.count().label("messages"), people.label("people"),
               func.max(Message.id).label("last_id"), func.max(Message.created_at).label("last_at"))
        .where(shown).group_by(Message.conversation_id).subquery()
    )
    last_author = select(Message.author_name).where(Message.id == stats.c.last_id).scalar_subquery()
    stmt = (
        select(Conversation.id, Conversation.kind, Conversation.title, stats.c.messages, stats.c.people,
               stats.c.last_at, last_author)
        .join(stats, stats.c.cid == Conversation.id)
        .where(Conversation.bot_id == bot_id, col(Conversation.kind).in_(DISCORD_KINDS))
    )
    if user_id:
        wrote = select(Message.conversation_id).where(Message.author_id == user_id, Message.role == "user")
        stmt = stmt.where(col(Conversation.id).in_(wrote))
    stmt = stmt.order_by(stats.c.last_at.desc(), Conversation.id.desc()).limit(limit)  # type: ignore[union-attr]
    return [ConversationSummary(id=int(cid), kind=str(kind), title=str(title or ""), messages=int(count or 0),
                                people=int(people or 0), last_at=last_at, last_author=str(author or ""))
            for cid, kind, title, count, people, last_at, author in session.exec(stmt).all()]


def conversation_lines(*, session: Session, bot_id: int, conversation_id: int,
                       limit: int = 200) -> tuple[ConversationSummary | None, list[ConversationLine]]:
    """The newest ``limit`` shown messages of one of the bot's Discord conversations, oldest first."""
    conv = session.get(Conversation, conversation_id)
    if conv is None or conv.bot_id != bot_id or conv.kind not in DISCORD_KINDS:
        raise NotFoundError(f"no Discord conversation numbered {conversation_id} for this bot")
    rows = session.exec(
        select(Message.id, Message.role, Message.author_id, Message.author_name, Message.content, Message.created_at)
        .where(Message.conversation_id == conversation_id, col(Message.role).in_(SHOWN_ROLES), Message.content != "")
        .order_by(col(Message.id).desc()).limit(limit)
    ).all()
    lines = [ConversationLine(id=int(i), role=str(role), author_id=str(uid or ""), author_name=str(name or ""),
                              content=str(content), created_at=created)
             for i, role, uid, name, content, created in reversed(rows)]
    summary = ConversationSummary(id=conv.id or 0, kind=conv.kind, title=conv.title, messages=len(lines),
                                  people=len({line.author_id for line in lines if line.role == "user"}),
                                  last_at=lines[-1].created_at if lines else None,
                                  last_author=lines[-1].author_name if lines else "")
    return summary, lines
