"""Conversations and their messages, in OpenAI format.

One conversation per bot and key (a Discord channel, thread or DM, or a Test Chat
session). The chain rebuilds the history from here for every message and saves the new
messages of a run in one transaction.
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy import bindparam, delete, insert, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from grobot.core.db import execute_dml
from grobot.core.errors import NotFoundError
from grobot.core.models import AgentEvent, Conversation, Message, MessageStatus, utcnow

logger = logging.getLogger(__name__)

HISTORY_LIMIT = 200  # messages read back per run (trimmed further to the context window)


def kind_of(key: str) -> str:
    """``guild`` / ``dm`` / ``thread`` / ``test`` / ``cli`` from a key like ``dm:123``."""
    prefix = key.split(":", 1)[0]
    return prefix if prefix in ("guild", "dm", "thread", "test", "cli") else "guild"


def find_conversation(*, session: Session, bot_id: int, key: str) -> Conversation | None:
    return session.exec(select(Conversation).where(Conversation.bot_id == bot_id, Conversation.key == key)).first()


def get_or_create_conversation(
    *,
    session: Session,
    bot_id: int,
    key: str,
    title: str = "",
    guild_id: str | None = None,
    channel_id: str | None = None,
) -> Conversation:
    """The conversation of ``bot_id`` with ``key``, created when missing (safe against races)."""
    conv = find_conversation(session=session, bot_id=bot_id, key=key)
    if conv is not None:
        return conv
    conv = Conversation(bot_id=bot_id, key=key, kind=kind_of(key), title=(title or key)[:200],
                        discord_guild_id=guild_id, discord_channel_id=channel_id)
    try:
        with session.begin_nested():
            session.add(conv)
            session.flush()
    except IntegrityError:  # another process created it in between
        conv = find_conversation(session=session, bot_id=bot_id, key=key)
        if conv is None:
            raise
    return conv


# Per-message statements, built once (building a statement costs about as much as running
# it) and run as plain Core statements: rows, not ORM objects.
_HISTORY_BY_KEY = (
    sa.select(col(Message.conversation_id), col(Message.role), col(Message.content), col(Message.tool_calls),
              col(Message.tool_call_id), col(Message.name), col(Message.author_name), col(Message.status))
    .join(Conversation, Conversation.id == Message.conversation_id)
    .where(Conversation.bot_id == bindparam("bot_id"), Conversation.key == bindparam("key"))
    .order_by(col(Message.id).desc()).limit(bindparam("limit"))
)
_CONVERSATION_ID = select(Conversation.id).where(Conversation.bot_id == bindparam("bot_id"),
                                                 Conversation.key == bindparam("key"))
_MESSAGE_TABLE = Message.__table__  # type: ignore[attr-defined]
_INSERT_MESSAGE_RETURNING_ID = insert(_MESSAGE_TABLE).returning(_MESSAGE_TABLE.c.id)
_TOUCH_CONVERSATION = (update(Conversation.__table__)  # type: ignore[attr-defined]
                       .where(Conversation.__table__.c.id == bindparam("conversation_id"))  # type: ignore[attr-defined]
                       .values(updated_at=bindparam("now")))


def load_history_by_key(
    *, session: Session, bot_id: int, key: str, limit: int = HISTORY_LIMIT
) -> tuple[int | None, list[dict[str, Any]]]:
    """``(conversation id or None, history)`` of the conversation ``key`` of a bot, in one query when it has messages."""
    connection = session.connection()
    keys = {"bot_id": bot_id, "key": key}
    rows = list(reversed(connection.execute(_HISTORY_BY_KEY, {**keys, "limit": limit}).all()))
    if rows:
        return rows[0][0], _to_history(rows)
    return connection.execute(_CONVERSATION_ID, keys).scalar(), []


def load_history(
    *, session: Session, conversation_id: int, before_id: int | None = None, limit: int = HISTORY_LIMIT
) -> list[dict[str, Any]]:
    """The newest ``limit`` messages before message ``before_id``, oldest first, in OpenAI format.

    User messages of runs still waiting or running (Test Chat) are left out, and so are
    tool results whose call was cut off by ``limit``. (Reads plain columns, no ORM objects:
    this runs for every message a bot answers.)
    """
    columns = (Message.id, Message.role, Message.content, Message.tool_calls, Message.tool_call_id, Message.name,
               Message.author_name, Message.status)
    stmt = select(*columns).where(Message.conversation_id == conversation_id)
    if before_id is not None:
        stmt = stmt.where(col(Message.id) < before_id)
    stmt = stmt.order_by(col(Message.id).desc()).limit(limit)
    rows = list(reversed(session.exec(stmt).all()))
    return _to_history(rows)


def _to_history(rows: list[Any]) -> list[dict[str, Any]]:
    busy = (MessageStatus.PENDING.value, MessageStatus.RUNNING.value)
    result = []
    for _id, role, content, tool_calls, tool_call_id, name, author_name, status in rows:
        if role == "user" and status in busy:
            continue
        item: dict[str, Any] = {"role": role, "content": content or ""}
        if role == "assistant" and tool_calls:
            item["tool_calls"] = tool_calls
        elif role == "tool":
            item["tool_call_id"] = tool_call_id or ""
            if name:
                item["name"] = name
        elif role == "user" and author_name:
            item["name"] = author_name
        result.append(item)
    while result and result[0]["role"] == "tool":
        result.pop(0)
    return result


def _message_values(conversation_id: int, item: dict[str, Any], author_name: str | None) -> dict[str, Any]:
    role = item["role"]
    return {
        "conversation_id": conversation_id,
        "role": role,
        "content": item.get("content") or "",
        "tool_calls": item.get("tool_calls") or None,
        "tool_call_id": item.get("tool_call_id"),
        "name": (item.get("name") or None) if role == "tool" else None,
        "author_name": author_name if role == "assistant" else None,
        "error": "",
        "created_at": utcnow(),
    }


def append_run_messages(
    *, session: Session, conversation_id: int, messages: list[dict[str, Any]], author_name: str | None = None
) -> None:
    """Store the assistant and tool messages of a run in one bulk INSERT (the caller's session is the transaction)."""
    connection = session.connection()
    if messages:
        connection.execute(insert(_MESSAGE_TABLE), [_message_values(conversation_id, m, author_name) for m in messages])
    connection.execute(_TOUCH_CONVERSATION, {"conversation_id": conversation_id, "now": utcnow()})


def insert_user_message(
    *, session: Session, conversation_id: int, content: str, author_id: str | None = None, author_name: str | None = None,
    discord_message_id: str | None = None, attachments: list[dict[str, Any]] | None = None,
) -> int:
    """Store a user message with one INSERT; returns its id (the run id)."""
    values = {"conversation_id": conversation_id, "role": "user", "content": content, "author_id": author_id,
              "author_name": (author_name or "")[:100] or None, "discord_message_id": discord_message_id,
              "attachments": attachments or None, "error": "", "created_at": utcnow()}
    return int(session.connection().execute(_INSERT_MESSAGE_RETURNING_ID, values).scalar_one())


def reset_conversation(*, session: Session, bot_id: int, key: str) -> int:
    """Forget the messages (and their events) of one conversation; returns how many were removed."""
    conv = find_conversation(session=session, bot_id=bot_id, key=key)
    if conv is None:
        raise NotFoundError(f"bot {bot_id} has no conversation {key!r}")
    ids = select(Message.id).where(Message.conversation_id == conv.id)
    session.execute(delete(AgentEvent).where(col(AgentEvent.run_id).in_(ids)))
    deleted = execute_dml(session, delete(Message).where(col(Message.conversation_id) == conv.id))
    conv.updated_at = utcnow()
    session.add(conv)
    session.flush()
    return deleted


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


def forget_user(*, session: Session, bot_id: int, key: str, user_id: str) -> int:
    """``/reset``: delete what one user said in conversation ``key`` of a bot, and the bot's answers
    to it; returns how many messages went."""
    conv = find_conversation(session=session, bot_id=bot_id, key=key)
    if conv is None:
        return 0
    rows = session.exec(select(Message.id, Message.role, Message.author_id)
                        .where(Message.conversation_id == conv.id).order_by(col(Message.created_at), col(Message.id))).all()
    ids = messages_to_forget([(int(r[0] or 0), r[1], r[2]) for r in rows], user_id)
    if ids:
        session.execute(delete(Message).where(col(Message.id).in_(ids)))
    logger.info("Forgot %d message(s) of a user in conversation %s", len(ids), conv.id, extra={"bot_id": bot_id})
    return len(ids)


def run_events(*, session: Session, run_id: int, after_seq: int = 0) -> list[AgentEvent]:
    """The stored events of one run after ``after_seq``, in order (the Test Chat polls this)."""
    stmt = select(AgentEvent).where(AgentEvent.run_id == run_id, AgentEvent.seq > after_seq).order_by(col(AgentEvent.seq))
    return list(session.exec(stmt).all())
