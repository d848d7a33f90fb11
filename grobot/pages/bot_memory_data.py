"""What the Memory tab reads and changes in the bot worker's memory service, its Discord users by
name. Blocking: call these with ``asyncio.to_thread``; each checks the session, the admin role and
the bot (:func:`run_for_bot`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from sqlmodel import Session

from grobot.core.services import discord_users, memories
from grobot.state.bot_page import run_for_bot

logger = logging.getLogger(__name__)

T = TypeVar("T")

SEARCH_RESULTS = 20


@dataclass
class MemoryRow:
    """One memory as the list shows it."""

    id: str
    text: str
    kind: str
    user: str
    user_id: str
    channel_id: str
    time: str
    source: str
    relevance: str


def _rows(items: list[memories.MemoryItem], session: Session, bot_id: int) -> list[MemoryRow]:
    """The memories as rows, their Discord users by name (one query for all of them)."""
    names = discord_users.display_names(session=session, bot_id=bot_id, user_ids=[i.user_id for i in items])
    return [_row(item, names.get(item.user_id, "")) for item in items]


def _row(item: memories.MemoryItem, name: str = "") -> MemoryRow:
    when = item.created_at.replace("T", " ")[:16]
    user = name or item.user_name or item.user_id
    relevance = "" if item.distance is None else f"{max(0.0, 1.0 - item.distance) * 100:.0f}%"
    return MemoryRow(id=item.id, text=item.text, kind=item.kind, user=user, user_id=item.user_id,
                     channel_id=item.channel_id, time=when, source=item.source, relevance=relevance)


def memory_call(token: str, bot_id: int, work: Callable[[Session, int], T]) -> T:
    """``work(session, bot_id)`` after the admin check on the bot (blocking: run it in a thread)."""
    return run_for_bot(token, bot_id, lambda session, _user, bot: work(session, bot.id or 0), admin=True)


def load_page(token: str, bot_id: int, user_id: str, limit: int) -> tuple[list[MemoryRow], int]:
    """The newest ``limit`` memories (of one Discord user when given) and how many there are in all."""

    def work(session: Session, bid: int) -> tuple[list[MemoryRow], int]:
        page = memories.list_memories(bid, session=session, limit=limit, user_id=user_id or None)
        return _rows(page.items, session, bid), page.total

    return memory_call(token, bot_id, work)


def search(token: str, bot_id: int, query: str, user_id: str) -> list[MemoryRow]:
    """The memories closest in meaning to ``query`` (of one user when given), with their relevance."""

    def work(session: Session, bid: int) -> list[MemoryRow]:
        found = memories.search_memories(bid, query, session=session, k=SEARCH_RESULTS, user_id=user_id or None)
        return _rows(found, session, bid)

    return memory_call(token, bot_id, work)


def add(token: str, bot_id: int, text: str, user_id: str, added_by: str = "admin") -> str:
    """Store a memory typed by an admin; returns its id."""
    return memory_call(token, bot_id, lambda session, bid: memories.add_memory(
        bid, text, session=session, user_id=user_id or None, added_by=added_by))


def delete(token: str, bot_id: int, memory_id: str) -> None:
    memory_call(token, bot_id, lambda session, bid: memories.delete_memory(bid, memory_id, session=session))


def delete_user(token: str, bot_id: int, user_id: str) -> int:
    return memory_call(token, bot_id, lambda session, bid: memories.delete_user_memories(bid, user_id,
                                                                                          session=session))
