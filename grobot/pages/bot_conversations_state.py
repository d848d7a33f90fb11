"""The Conversations tab: its state, what it reads and does through the services with the checks of each event (the view
is in :mod:`grobot.pages.bot_conversations`)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from urllib.parse import urlencode

import reflex as rx
from sqlmodel import Session

from grobot.components.url_state import replace_url
from grobot.core.models import AppUser, Bot
from grobot.core.services import conversation_list, discord_users
from grobot.core.services.users import NotSignedIn
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

logger = logging.getLogger(__name__)

CONVERSATION_LIMIT = 100
MESSAGE_LIMIT = 200
PEOPLE_LIMIT = 200
EVERYONE = "everyone"  # the user filter's "no filter" value (a select item cannot be empty)
KIND_LABELS = {"guild": "channel", "thread": "thread", "dm": "DM"}


@dataclass
class ConversationRow:
    id: int
    kind: str
    title: str
    messages: int
    people: int
    last: str
    last_author: str


@dataclass
class LineRow:
    id: int
    role: str
    author_id: str
    author: str
    content: str
    time: str


@dataclass
class Person:
    id: str
    name: str


@dataclass
class ConversationsView:
    people: list[Person]
    conversations: list[ConversationRow]


def _time(value: object) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else ""  # type: ignore[attr-defined]


def _row(c: conversation_list.ConversationSummary) -> ConversationRow:
    title = c.title if c.kind != "dm" else f"DM with {c.title}" if c.title else "DM"
    return ConversationRow(id=c.id, kind=KIND_LABELS.get(c.kind, c.kind), title=title or "(untitled)",
                           messages=c.messages, people=c.people, last=_time(c.last_at), last_author=c.last_author)


def load_view(token: str, bot_id: int, user_id: str) -> ConversationsView:
    """The people who wrote to the bot, and its conversations (those of ``user_id`` when given)."""

    def work(session: Session, _user: AppUser, bot: Bot) -> ConversationsView:
        people = [Person(u.discord_user_id, u.display_name or u.discord_user_id)
                  for u in discord_users.known_users(session=session, bot_id=bot.id or 0, limit=PEOPLE_LIMIT)
                  if u.message_count]
        found = conversation_list.discord_conversations(session=session, bot_id=bot.id or 0, user_id=user_id,
                                                        limit=CONVERSATION_LIMIT)
        return ConversationsView(people, [_row(c) for c in found])

    return run_for_bot(token, bot_id, work, admin=True)


def load_lines(token: str, bot_id: int, conversation_id: int) -> tuple[ConversationRow, list[LineRow]]:
    """One conversation's messages, oldest first, each author by name."""

    def work(session: Session, _user: AppUser, bot: Bot) -> tuple[ConversationRow, list[LineRow]]:
        summary, lines = conversation_list.conversation_lines(session=session, bot_id=bot.id or 0,
                                                              conversation_id=conversation_id, limit=MESSAGE_LIMIT)
        names = discord_users.display_names(session=session, bot_id=bot.id or 0,
                                            user_ids=[line.author_id for line in lines if line.role == "user"])
        rows = [LineRow(id=line.id, role=line.role, author_id=line.author_id if line.role == "user" else "",
                        author=(names.get(line.author_id) or line.author_name or line.author_id
                                if line.role == "user" else line.author_name or bot.name),
                        content=line.content, time=_time(line.created_at)) for line in lines]
        return _row(summary), rows  # type: ignore[arg-type]

    return run_for_bot(token, bot_id, work, admin=True)


class ConversationsState(BotPageState):
    """The open bot's Discord conversations."""

    people: list[Person] = []
    conversations: list[ConversationRow] = []
    user_filter: str = EVERYONE
    selected: int = 0
    selected_title: str = ""
    lines: list[LineRow] = []
    conv_loaded: bool = False
    conv_error: str = ""

    def _url(self) -> str:
        query = {k: v for k, v in (("user", "" if self.user_filter == EVERYONE else self.user_filter),
                                   ("c", str(self.selected) if self.selected else "")) if v}
        return f"/bots/{self.current_bot_id}/conversations" + (f"?{urlencode(query)}" if query else "")

    @rx.event
    async def load(self):
        """On load: the list (filtered by the address's user) and the address's conversation opened."""
        self.conv_loaded, self.conv_error, self.selected, self.lines = False, "", 0, []
        if not self.bot_ready:
            return None
        params = self.router.url.query_parameters
        user = str(params.get("user") or "")
        self.user_filter = user if user.isdigit() else EVERYONE
        wanted = str(params.get("c") or "")
        try:
            await self._reload()
            if wanted.isdigit():
                await self._open(int(wanted))
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.conv_error = user_message(exc)
        self.conv_loaded = True
        return None

    async def _reload(self) -> None:
        user = "" if self.user_filter == EVERYONE else self.user_filter
        view = await asyncio.to_thread(load_view, self.session_token, self.current_bot_id, user)
        self.people, self.conversations = view.people, view.conversations

    async def _open(self, conversation_id: int) -> None:
        summary, self.lines = await asyncio.to_thread(load_lines, self.session_token, self.current_bot_id,
                                                      conversation_id)
        self.selected, self.selected_title = summary.id, summary.title

    @rx.event
    async def filter_user(self, value: str):
        """Only the conversations this user wrote in (``everyone``: all of them)."""
        self.user_filter = value if value.isdigit() else EVERYONE
        try:
            await self._reload()
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        if self.selected and all(c.id != self.selected for c in self.conversations):
            self.selected, self.lines = 0, []
        return replace_url(self._url())

    @rx.event
    async def open_conversation(self, conversation_id: int):
        try:
            await self._open(int(conversation_id))
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        return replace_url(self._url())

    @rx.event
    def close_conversation(self):
        self.selected, self.lines = 0, []
        return replace_url(self._url())
