"""One Test Chat job: run the chain for a stored pending user message (``run_id`` = its id)."""

from __future__ import annotations

import logging

from grobot.core.agents.types import EventSink, IncomingMessage

logger = logging.getLogger(__name__)


async def run_test_chat_job(message_id: int, bot_id: int, key: str, content: str, author_id: str,
                            author_name: str, *, sink: EventSink | None = None) -> str | None:
    """Answer one Test Chat message; returns an error text, or None when it went well.

    The chain stores the answer and the events, and marks the message done, error or cancelled;
    ``sink`` gets the events as they come (the pages that follow the run).
    """
    from grobot.core.agents.chain import run_chain
    from grobot.core.agents.council_run import council_question, run_council
    from grobot.core.memory.runtime import memory_or_none
    from grobot.core.tools.base import EmptyCatalog
    from grobot.core.tools.catalog import catalog_for_bot

    question = council_question(content)
    if question is not None:  # "/council QUESTION": the bot's advisory council deliberates
        _, error = await run_council(bot_id, question, run_id=message_id, asked_by=author_name)
        return error
    incoming = IncomingMessage(bot_id=bot_id, conversation_key=key, content=content, author_id=author_id,
                               author_name=author_name, platform="test_chat", run_id=message_id)
    try:
        tools = await catalog_for_bot(bot_id, memory=memory_or_none())
    except Exception as exc:
        logger.warning("Tools unavailable for Test Chat: %s", type(exc).__name__)
        tools = EmptyCatalog()
    result = await run_chain(incoming, tools=tools, sink=sink)
    return result.error
