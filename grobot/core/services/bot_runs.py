"""A bot's own runs, as its bot process may touch them through its supervisor (the bot link).

A bot process asks for its data over the bot link (``bot_worker.link_ops``); the
supervisor serves it with these rules: a bot reads and writes its own conversations and
runs only, and its runs answer Discord messages (stored runs are the supervisor's Test
Chat jobs). What one message reads is read here too, in one session.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, exists
from sqlmodel import Session, select

from grobot.core.agents.reply_rules import rules_decision
from grobot.core.agents.run_store import Loaded, RunWrite
from grobot.core.agents.run_store_db import load_for_run
from grobot.core.agents.types import IncomingMessage
from grobot.core.errors import NotFoundError
from grobot.core.models import Bot, BotMcpServer, Conversation, Message

logger = logging.getLogger(__name__)


def check_run(bot_id: int, run_id: int | None, *, session: Session) -> None:
    """NotFoundError unless run ``run_id`` (a stored user message) is one of bot ``bot_id``'s (None: no run yet)."""
    if run_id is None:
        return
    stored = session.get(Message, run_id)
    owner = session.get(Conversation, stored.conversation_id) if stored is not None else None
    if owner is None or owner.bot_id != bot_id:
        raise NotFoundError(f"bot {bot_id} has no run numbered {run_id}")


def check_conversation(bot_id: int, conversation_id: int | None, *, session: Session) -> None:
    """NotFoundError unless conversation ``conversation_id`` is one of bot ``bot_id``'s (None: none yet)."""
    if conversation_id is None:
        return
    conversation = session.get(Conversation, conversation_id)
    if conversation is None or conversation.bot_id != bot_id:
        raise NotFoundError(f"bot {bot_id} has no conversation numbered {conversation_id}")


def own_write(bot_id: int, write: RunWrite, *, session: Session) -> RunWrite:
    """``write`` as bot ``bot_id`` may make it: into its own conversation and run (else
    NotFoundError), storing its messages and calls for it, never a stored run's status."""
    check_conversation(bot_id, write.conversation_id, session=session)
    check_run(bot_id, write.run_id, session=session)
    if write.user_message is not None:
        write.user_message.bot_id = bot_id
    if write.end is not None:
        write.end.bot_id = bot_id
        write.end.stored_run = False  # stored runs are the supervisor's Test Chat jobs
    return write


_BOT_QUERY: Any = None


def _bot_with_links_flag() -> Any:
    """``SELECT bot.*, EXISTS(its MCP associations) WHERE id = :bot_id`` (built once).

    Core, not the ORM: the row's columns read like a ``Bot``'s attributes, without an
    entity to build and track (read for every message a bot may answer)."""
    global _BOT_QUERY
    if _BOT_QUERY is None:
        has_links = exists().where(BotMcpServer.bot_id == Bot.id).label("has_links")
        _BOT_QUERY = select(*Bot.__table__.columns, has_links).where(Bot.id == bindparam("bot_id"))  # type: ignore[attr-defined]
    return _BOT_QUERY


@dataclass
class MessageRead:
    """What a message of a bot reads: the bot's row (its columns, as attributes), and for a
    message its reply rules may answer its MCP associations and the run's start (None: not
    read, or could not be read)."""

    bot: Any
    decision: bool | None = False  # the reply rules' word (evaluated here, once per message)
    links: list[Any] | None = None
    loaded: Loaded | None = None


def read_for_message(bot_id: int, msg: IncomingMessage, *, session: Session) -> MessageRead | None:
    """The bot's row (None: no such bot); for a message its reply rules may answer, also its MCP
    associations (queried only when it has any: the bot's row says so in the same query) and
    what the chain reads at its start. A part that cannot be read is None."""
    bot = session.connection().execute(_bot_with_links_flag(), {"bot_id": bot_id}).first()
    if bot is None:
        return None
    data = MessageRead(bot=bot, decision=rules_decision(bot, msg) if bot.enabled else False)
    if data.decision is False:
        return data
    try:
        from grobot.core.tools.catalog import read_links

        data.links = read_links(bot_id, session=session) if bot.has_links else []
    except Exception as exc:
        logger.warning("Could not read the MCP servers of bot %s: %s", bot_id, type(exc).__name__,
                       extra={"bot_id": bot_id})
    try:
        data.loaded = load_for_run(msg, session=session, bot=bot)
    except Exception as exc:  # the chain reads again and reports it
        logger.debug("Preloading the run of bot %s failed: %s", bot_id, type(exc).__name__)
    return data
