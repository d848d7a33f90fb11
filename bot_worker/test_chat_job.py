"""One Test Chat job: run the chain for a stored pending user message (``run_id`` = its id)."""

from __future__ import annotations

import logging

from bot_worker.chain_adapter import get_run_chain, single_call_chain
from grobot.core.agents.types import Event, EventKind, IncomingMessage

logger = logging.getLogger(__name__)


async def run_test_chat_job(message_id: int, bot_id: int, key: str, content: str, author_id: str,
                            author_name: str) -> str | None:
    """Answer one Test Chat message; returns an error text, or None when it went well."""
    from grobot.core.tools.base import EmptyCatalog
    from grobot.core.tools.catalog import catalog_for_bot

    incoming = IncomingMessage(bot_id=bot_id, conversation_key=key, content=content, author_id=author_id,
                               author_name=author_name, platform="test_chat", run_id=message_id)
    try:
        tools = await catalog_for_bot(bot_id)
    except Exception as exc:
        logger.warning("Tools unavailable for Test Chat: %s", exc)
        tools = EmptyCatalog()
    run_chain = get_run_chain()
    if run_chain is single_call_chain:
        return await _stand_in(incoming, tools)
    result = await run_chain(incoming, tools=tools)
    return result.error


async def _stand_in(incoming: IncomingMessage, tools: object) -> str | None:
    """Without the chain: one LLM call, and the answer and events stored here."""
    from grobot.core.db import session_scope
    from grobot.core.models import AgentEvent, Conversation, Message
    from sqlmodel import select

    events: list[Event] = []

    async def sink(event: Event) -> None:
        events.append(event)

    result = await single_call_chain(incoming, sink=sink, tools=tools)
    final = [e for e in events if e.kind in (EventKind.DONE, EventKind.ERROR)]
    with session_scope() as session:
        conv = session.exec(select(Conversation).where(Conversation.bot_id == incoming.bot_id,
                                                       Conversation.key == incoming.conversation_key)).first()
        if conv is not None and not result.error:
            session.add(Message(conversation_id=conv.id or 0, role="assistant", content=result.text))
        for seq, event in enumerate(final, start=1):
            session.add(AgentEvent(run_id=incoming.run_id or 0, seq=seq, kind=event.kind.value, data=event.data))
    return result.error
