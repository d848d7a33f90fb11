"""``/reset``: forget what one user said in one conversation of a bot (and the bot's answers to it)."""

from __future__ import annotations

import logging

from sqlalchemy import delete
from sqlmodel import Session, select

from grobot.core.models import Conversation, Message

logger = logging.getLogger(__name__)


def messages_to_forget(rows: list[tuple[int, str, str | None]], user_id: str) -> list[int]:
    """Ids of the user's messages and of everything that answered them (until the next user message).

    ``rows`` are (id, role, author id), oldest first.
    """
    ids: list[int] = []
    following = False
    for mid, role, author in rows:
        if role == "user":
            following = author == user_id
        if following:
            ids.append(mid)
    return ids


def forget(bot_id: int, key: str, user_id: str, *, session: Session) -> int:
    """Delete the user's part of conversation ``key``; returns how many messages went."""
    conv = session.exec(select(Conversation).where(Conversation.bot_id == bot_id, Conversation.key == key)).first()
    if conv is None:
        return 0
    rows = session.exec(select(Message.id, Message.role, Message.author_id)
                        .where(Message.conversation_id == conv.id).order_by(Message.created_at, Message.id)).all()
    ids = messages_to_forget([(r[0], r[1], r[2]) for r in rows], user_id)
    if ids:
        session.execute(delete(Message).where(Message.id.in_(ids)))  # type: ignore[union-attr]
    logger.info("Forgot %d message(s) of a user in conversation %s", len(ids), conv.id, extra={"bot_id": bot_id})
    return len(ids)
