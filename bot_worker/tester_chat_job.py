"""One Test Chat job: answer a stored pending user message (``run_id`` = its id) on the path a
Discord message takes (:mod:`grobot.core.answering`): the same checks, then the chain, or the
advisory council for ``/council QUESTION``. An answer that fails or is stopped gives the tester's
cooldown back, so that Retry is not refused by it."""

from __future__ import annotations

import logging

from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.types import EventSink, IncomingMessage
from grobot.core.answering import FloodGate, admit, answer_message, refuse
from grobot.core.errors import error_line

logger = logging.getLogger(__name__)


async def run_tester_chat_job(message_id: int, bot_id: int, key: str, content: str, author_id: str,
                            author_name: str, *, deps: ChainDeps, gate: FloodGate,
                            sink: EventSink | None = None) -> str | None:
    """Answer one Test Chat message; returns an error text, or None when it went well.

    The run stores the answer and the events, and marks the message done, error or cancelled;
    ``sink`` gets the events as they come (the pages that follow the run).
    """
    from grobot.core.agents.council_run import council_question, run_council

    msg = IncomingMessage(bot_id=bot_id, conversation_key=key, content=content, author_id=author_id,
                          author_name=author_name, platform="test_chat", run_id=message_id)
    question = council_question(content)
    if question is None:  # a failed or stopped answer gives the cooldown back: the tester may retry it at once
        return (await answer_message(msg, deps, gate, sink=sink, failure_keeps_cooldown=False)).error
    # "/council QUESTION": the same checks, then the bot's advisory council deliberates.
    try:
        loaded = await deps.store.load(msg)
    except Exception as exc:
        return (await refuse(msg, error_line(exc), deps, sink=sink)).error
    admission = admit(msg, loaded, gate)
    if admission.refusal:
        return (await refuse(msg, admission.refusal, deps, sink=sink, loaded=loaded)).error
    error: str | None = "stopped"
    try:
        _, error = await run_council(bot_id, question, run_id=message_id, asked_by=author_name, sink=sink,
                                     store=deps.store)
    finally:
        admission.release()
        if error:
            admission.give_back_cooldown(gate)
    return error
