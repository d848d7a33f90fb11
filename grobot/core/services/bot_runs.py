"""A bot's own runs, as its bot process may touch them through its supervisor (the bot link).

A bot process asks for its data over the bot link (``bot_worker.link_ops``); the
supervisor serves it with these rules: a bot reads and writes its own conversations and
runs only, and its runs answer Discord messages (stored runs are the supervisor's Test
Chat jobs).
"""

from __future__ import annotations

import logging

from sqlalchemy import bindparam
from sqlmodel import Session, col, select

from grobot.core.agents.run_store import RunWrite
from grobot.core.errors import NotFoundError
from grobot.core.models import Conversation, Message

logger = logging.getLogger(__name__)


# Per write of a bot's run: built once, one column read (no entity built).
_RUN_OWNER = (select(Conversation.bot_id).join(Message, col(Message.conversation_id) == Conversation.id)
              .where(Message.id == bindparam("run_id")))
_CONVERSATION_OWNER = select(Conversation.bot_id).where(Conversation.id == bindparam("conversation_id"))


def check_run(bot_id: int, run_id: int | None, *, session: Session) -> None:
    """NotFoundError unless run ``run_id`` (a stored user message) is one of bot ``bot_id``'s (None: no run yet)."""
    if run_id is None:
        return
    if session.connection().execute(_RUN_OWNER, {"run_id": run_id}).scalar() != bot_id:
        raise NotFoundError(f"bot {bot_id} has no run numbered {run_id}")


def check_conversation(bot_id: int, conversation_id: int | None, *, session: Session) -> None:
    """NotFoundError unless conversation ``conversation_id`` is one of bot ``bot_id``'s (None: none yet)."""
    if conversation_id is None:
        return
    if session.connection().execute(_CONVERSATION_OWNER, {"conversation_id": conversation_id}).scalar() != bot_id:
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
