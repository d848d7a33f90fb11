"""The Memory tab: its state, what it reads and does through the services with the checks of each event (the view
is in :mod:`grobot.pages.bot_memory`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import reflex as rx
from sqlmodel import Session

from grobot.core.errors import MemoryUnavailable, ValidationError
from grobot.core.services import discord_users, memories
from grobot.core.services.users import NotSignedIn
from grobot.pages.bot_knowledge_state import clean_user_id
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

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


PAGE_SIZE = 50
MAX_SHOWN = 1000
NOT_ADDED_TEXT = "Nothing was added: the bot worker, which keeps the memories, is not running."


class MemoryState(BotPageState):
    """The Memory tab of the open bot."""

    rows: list[MemoryRow] = []
    total: int = 0
    limit: int = PAGE_SIZE
    user_filter: str = ""
    filter_input: str = ""
    filter_error: str = ""
    query: str = ""
    results: list[MemoryRow] = []
    searched: bool = False
    search_error: str = ""
    mem_loaded: bool = False
    mem_error: str = ""
    unavailable: bool = False
    add_text: str = ""
    add_user_id: str = ""
    add_error: str = ""
    confirm_id: str = ""
    confirm_text: str = ""
    confirm_user: bool = False

    @rx.var
    def shown_count(self) -> int:
        return len(self.rows)

    @rx.var
    def has_more(self) -> bool:
        return len(self.rows) < self.total and self.limit < MAX_SHOWN

    @rx.var
    def result_count(self) -> int:
        return len(self.results)

    def _failed(self, exc: Exception) -> Any:
        """Show why a call failed; ``MemoryUnavailable`` becomes the callout, not an error."""
        if isinstance(exc, NotSignedIn):
            self._forget_session()
            return sign_out_script()
        if isinstance(exc, MemoryUnavailable):
            self.unavailable = True
            return None
        self.mem_error = user_message(exc)
        return None

    async def _reload(self) -> Any:
        try:
            self.rows, self.total = await asyncio.to_thread(load_page, self.session_token, self.current_bot_id,
                                                            self.user_filter, self.limit)
        except Exception as exc:
            self.rows, self.total = [], 0
            return self._failed(exc)
        self.unavailable, self.mem_error = False, ""
        if self.add_error == NOT_ADDED_TEXT:
            self.add_error = ""
        return None

    @rx.event
    async def load(self):
        """On load: the newest memories, no filter."""
        self.mem_loaded = False
        self.rows, self.total, self.results, self.searched = [], 0, [], False
        self.limit, self.user_filter, self.filter_input, self.query = PAGE_SIZE, "", "", ""
        self.mem_error = self.search_error = self.add_error = self.filter_error = ""
        self.unavailable = False
        if not self.bot_ready:
            return None
        result = await self._reload()
        self.mem_loaded = True
        return result

    @rx.event
    async def retry(self):
        """Try the worker's memory again (after starting the worker)."""
        return await self._reload()

    @rx.event
    async def load_more(self):
        self.limit = min(self.limit + PAGE_SIZE, MAX_SHOWN)
        return await self._reload()

    @rx.event
    def set_filter_input(self, value: str) -> None:
        self.filter_input = value
        self.filter_error = ""

    @rx.event
    async def apply_filter(self, _form: dict[str, Any] | None = None):
        """Show only the memories of one Discord user (an empty box shows everyone's)."""
        text = self.filter_input.strip()
        if text:
            try:
                text = clean_user_id(text)
            except ValidationError as exc:
                self.filter_error = user_message(exc)
                return None
        self.user_filter, self.limit, self.filter_error = text, PAGE_SIZE, ""
        if self.searched and self.query:
            await self._search()
        return await self._reload()

    @rx.event
    async def clear_filter(self):
        self.user_filter, self.filter_input, self.limit = "", "", PAGE_SIZE
        if self.searched and self.query:
            await self._search()
        return await self._reload()

    @rx.event
    def set_query(self, value: str) -> None:
        self.query = value

    async def _search(self) -> Any:
        try:
            self.results = await asyncio.to_thread(search, self.session_token, self.current_bot_id, self.query,
                                                   self.user_filter)
        except (ValidationError, MemoryUnavailable, NotSignedIn) as exc:
            self.results = []
            if isinstance(exc, ValidationError):
                self.search_error = user_message(exc)
                return None
            return self._failed(exc)
        except Exception as exc:
            self.results, self.search_error = [], user_message(exc)
            return None
        self.searched, self.search_error, self.unavailable = True, "", False
        return None

    @rx.event
    async def run_search(self, _form: dict[str, Any] | None = None):
        """Semantic search: the memories closest in meaning, with their relevance."""
        self.query = self.query.strip()[:500]
        return await self._search()

    @rx.event
    def clear_search(self) -> None:
        self.query, self.results, self.searched, self.search_error = "", [], False, ""

    @rx.event
    def set_add_text(self, value: str) -> None:
        self.add_text = value
        self.add_error = ""

    @rx.event
    def set_add_user_id(self, value: str) -> None:
        self.add_user_id = value
        self.add_error = ""

    @rx.event
    async def add_memory(self, _form: dict[str, Any] | None = None):
        """Store the typed memory (for one Discord user when an id is given)."""
        try:
            user_id = clean_user_id(self.add_user_id) if self.add_user_id.strip() else ""
            await asyncio.to_thread(add, self.session_token, self.current_bot_id, self.add_text, user_id)
        except ValidationError as exc:
            self.add_error = user_message(exc)  # what was typed stays in the boxes
            return None
        except Exception as exc:
            if isinstance(exc, MemoryUnavailable):
                self.add_error = NOT_ADDED_TEXT
            return self._failed(exc)
        self.add_text, self.add_user_id, self.add_error = "", "", ""
        result = await self._reload()
        return result or rx.toast.success("Memory added. The bot can recall it from its next message.")

    @rx.event
    def ask_delete(self, memory_id: str, text: str) -> None:
        self.confirm_id, self.confirm_text = memory_id, text[:200]

    @rx.event
    def cancel_delete(self) -> None:
        self.confirm_id, self.confirm_text = "", ""

    @rx.event
    async def delete_memory(self):
        memory_id, self.confirm_id = self.confirm_id, ""
        if not memory_id:
            return None
        try:
            await asyncio.to_thread(delete, self.session_token, self.current_bot_id, memory_id)
        except Exception as exc:
            if isinstance(exc, (MemoryUnavailable, NotSignedIn)):
                return self._failed(exc)
            return rx.toast.error(user_message(exc))
        self.results = [row for row in self.results if row.id != memory_id]
        result = await self._reload()
        return result or rx.toast.success("Memory deleted.")

    @rx.event
    def ask_delete_user(self) -> None:
        self.confirm_user = bool(self.user_filter)

    @rx.event
    def cancel_delete_user(self) -> None:
        self.confirm_user = False

    @rx.event
    async def delete_user_memories(self):
        user_id, self.confirm_user = self.user_filter, False
        if not user_id:
            return None
        try:
            deleted = await asyncio.to_thread(delete_user, self.session_token, self.current_bot_id, user_id)
        except Exception as exc:
            if isinstance(exc, (MemoryUnavailable, NotSignedIn)):
                return self._failed(exc)
            return rx.toast.error(user_message(exc))
        self.results = [row for row in self.results if row.user_id != user_id]
        result = await self._reload()
        return result or rx.toast.success(f"Deleted {deleted} memor{'y' if deleted == 1 else 'ies'} of user {user_id}.")
