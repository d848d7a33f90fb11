"""What a message reads of its bot's settings, kept per bot under the bot's settings version.

A message of a bot reads the bot's row (its reply rules, access lists, moderation, personality),
its LLM settings, MCP servers, the Tool Router's texts of its tools and the persona of its
channel. They change when an admin changes them, and every such change moves the bot's settings
version in the same transaction (:mod:`grobot.core.settings_version`). So the store reads the
version for each message (one column more in the statement of its usage counters) and rebuilds
what it keeps of a bot only when the version moved: a change takes effect at the bot's next
message, as before.

What belongs to a message (history, the user's notes and directives, usage and limits) and the
app's own settings are read for every message, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import bindparam, exists
from sqlmodel import Session, select

from grobot.core.models import Bot, BotMcpServer, ChannelPersona
from grobot.core.services.fleet import config_version

T = TypeVar("T")
MAX_CHANNELS = 1000  # personas kept per bot (by channel): beyond, the bot's are forgotten and read again

_BOT_QUERY: Any = None


def bot_query() -> Any:
    """``SELECT bot.*, EXISTS(its MCP associations), EXISTS(its channel personas) WHERE id = :bot_id`` (built once).

    Core, not the ORM: the row's columns read like a ``Bot``'s attributes, without an entity
    to build and track."""
    global _BOT_QUERY
    if _BOT_QUERY is None:
        has_links = exists().where(BotMcpServer.bot_id == Bot.id).label("has_links")
        has_personas = exists().where(ChannelPersona.bot_id == Bot.id).label("has_personas")
        _BOT_QUERY = select(*Bot.__table__.columns, has_links, has_personas).where(Bot.id == bindparam("bot_id"))  # type: ignore[attr-defined]
    return _BOT_QUERY


_UNREAD: Any = object()


@dataclass
class CachedBot:
    """What is kept of one bot at one settings version; each part read at its first use."""

    version: str
    bot: Any  # the bot's row (its columns, as attributes; ``has_links``, ``has_personas``)
    parts: dict[str, Any] = field(default_factory=dict)
    personas: dict[tuple[str | None, str | None], Any] = field(default_factory=dict)

    def part(self, name: str, read: Callable[[], T]) -> T:
        """Part ``name`` (the MCP links, the LLM settings, the tool texts ...), read by ``read`` the first time."""
        found = self.parts.get(name, _UNREAD)
        if found is _UNREAD:
            found = self.parts[name] = read()
        return found

    def persona(self, channel_id: str | None, parent_channel_id: str | None, read: Callable[[], Any]) -> Any:
        key = (channel_id, parent_channel_id)
        found = self.personas.get(key, _UNREAD)
        if found is _UNREAD:
            if len(self.personas) >= MAX_CHANNELS:
                self.personas.clear()
            found = self.personas[key] = read()
        return found


class BotSettingsCache:
    """The settings of the bots a store serves, each at its version (threads may share it: at
    worst two of them read the same part)."""

    def __init__(self) -> None:
        self._bots: dict[int, CachedBot] = {}
        self._lock = threading.Lock()

    def current(self, bot_id: int, *, session: Session, version: Any) -> CachedBot | None:
        """Bot ``bot_id``'s settings as they are now (None: no such bot): what is kept, if its
        version has not moved since; else its row read again, with nothing else kept. ``version``:
        its ``updated_at`` as the caller read it in the same session (None: no such row; it comes
        with the message's usage counters: :func:`grobot.core.services.usage_limits.read_counters`)."""
        connection = session.connection()
        kept = self._bots.get(bot_id)
        if kept is not None and version is not None and config_version(version) == kept.version:
            return kept
        # The row carries its version: what is kept under it is read after it, so never older.
        bot = connection.execute(bot_query(), {"bot_id": bot_id}).first()
        with self._lock:
            if bot is None:
                self._bots.pop(bot_id, None)
                return None
            fresh = self._bots[bot_id] = CachedBot(config_version(bot.updated_at), bot)
        return fresh

    def clear(self) -> None:
        with self._lock:
            self._bots.clear()
