"""The long-term memories of a bot, for the web app's Memory tab and the CLI.

Every call goes to the memory of a live bot worker on this host, over its link (found in the
database): no other process opens the store. Without a worker each call raises
:class:`~grobot.core.errors.MemoryUnavailable` ("memory service unavailable: is the bot
worker running?"). The functions block for a short call; a Reflex handler should run
them with ``asyncio.to_thread``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from grobot.core.errors import MemoryUnavailable, ValidationError
from grobot.core.link_client import AdminLink, find_url
from grobot.core.memory import MAX_MEMORY_CHARS, RELEVANT_DISTANCE, Memory
from grobot.core.memory.remote import MemoryAdmin

logger = logging.getLogger(__name__)

MAX_PAGE_SIZE = 200
MAX_SEARCH_RESULTS = 50


@dataclass(frozen=True)
class MemoryItem:
    """One memory as the Memory tab and the CLI show it."""

    id: str
    text: str
    user_id: str = ""
    user_name: str = ""
    channel_id: str = ""
    source: str = ""
    kind: str = ""
    created_at: str = ""
    source_message_id: str = ""
    distance: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, memory: Memory) -> MemoryItem:
        meta = memory.metadata
        text = lambda key: str(meta.get(key) or "")
        return cls(id=memory.id, text=memory.text, user_id=text("user_id"), user_name=text("user_name"),
                   channel_id=text("channel_id"), source=text("source"), kind=text("kind"),
                   created_at=text("created_at"), source_message_id=text("source_message_id"),
                   distance=memory.distance, metadata=dict(meta))

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "user_id": self.user_id, "user_name": self.user_name,
                "channel_id": self.channel_id, "source": self.source, "kind": self.kind,
                "created_at": self.created_at, "source_message_id": self.source_message_id,
                "distance": self.distance}


@dataclass(frozen=True)
class MemoryPage:
    """One page of a bot's memories, newest first, and how many there are in all."""

    items: list[MemoryItem]
    total: int
    offset: int
    limit: int


def client(*, session: Session) -> MemoryAdmin:
    """A client of a live worker's memory, over its link (or :class:`MemoryUnavailable`)."""
    url = find_url(session=session)
    if url is None:
        raise MemoryUnavailable()
    return MemoryAdmin(AdminLink(url))


def list_memories(bot_id: int, *, session: Session, limit: int = 50, offset: int = 0,
                  user_id: str | None = None) -> MemoryPage:
    """A page of the bot's memories, newest first (optionally of one Discord user)."""
    limit = max(1, min(int(limit), MAX_PAGE_SIZE))
    offset = max(0, int(offset))
    found, total = client(session=session).list(bot_id, limit=limit, offset=offset, user_id=user_id or None)
    return MemoryPage(items=[MemoryItem.of(m) for m in found], total=total, offset=offset, limit=limit)


def search_memories(bot_id: int, query: str, *, session: Session, k: int = 10,
                    max_distance: float | None = RELEVANT_DISTANCE, user_id: str | None = None) -> list[MemoryItem]:
    """The memories closest in meaning to ``query`` (closest first; of one Discord user when given)."""
    if not query.strip():
        raise ValidationError("the search text is empty")
    k = max(1, min(int(k), MAX_SEARCH_RESULTS))
    found = client(session=session).query(bot_id, query, k, max_distance=max_distance, user_id=user_id or None)
    return [MemoryItem.of(m) for m in found]


def add_memory(bot_id: int, text: str, *, session: Session, user_id: str | None = None,
               added_by: str = "admin") -> str:
    """Store one memory by hand; returns its id."""
    text = text.strip()
    if not text:
        raise ValidationError("the memory is empty")
    if len(text) > MAX_MEMORY_CHARS:
        raise ValidationError(f"a memory has at most {MAX_MEMORY_CHARS} characters (this one has {len(text)})")
    metadata: dict[str, Any] = {"source": added_by, "kind": "fact"}
    if user_id:
        metadata["user_id"] = str(user_id)
    ids = client(session=session).add(bot_id, [text], metadata)
    logger.info("A memory was added to bot %s by %s", bot_id, added_by)
    return ids[0]


def delete_memory(bot_id: int, memory_id: str, *, session: Session) -> None:
    """Delete one memory (``NotFoundError`` when the bot has no such memory)."""
    client(session=session).delete(bot_id, memory_id.strip().lower())
    logger.info("Memory %s of bot %s deleted", memory_id, bot_id)


def delete_user_memories(bot_id: int, discord_user_id: str, *, session: Session) -> int:
    """Delete every memory of one Discord user; returns how many."""
    if not str(discord_user_id).strip():
        raise ValidationError("no Discord user id given")
    deleted = client(session=session).forget_user(bot_id, str(discord_user_id).strip())
    logger.info("Bot %s: %d memory(ies) of a user deleted", bot_id, deleted)
    return deleted


def count_memories(bot_id: int, *, session: Session, user_id: str | None = None) -> int:
    return client(session=session).count(bot_id, user_id=user_id or None)


def drop_bot_memories(bot_id: int, *, session: Session) -> None:
    """Delete a bot's whole collection (its memories)."""
    client(session=session).drop_bot(bot_id)
