"""One Test Chat job: answer a stored pending user message (``run_id`` = its id) the way of every
host (:mod:`grobot.core.answering`): prepared, admitted (the checks a Discord user meets), then
answered by the chain, or by the advisory council for ``/council QUESTION``, or refused. An answer
that fails or is stopped gives the tester's cooldown back, so that Retry is not refused by it."""

from __future__ import annotations

import base64
import logging

from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.run_store import ImageStore
from grobot.core.agents.types import Attachment, EventSink, IncomingMessage
from grobot.core.answering import FloodGate, admit, answer, prepare, refuse

logger = logging.getLogger(__name__)


async def run_tester_chat_job(message_id: int, bot_id: int, key: str, content: str, author_id: str,
                            author_name: str, *, deps: ChainDeps, gate: FloodGate,
                            sink: EventSink | None = None) -> str | None:
    """Answer one Test Chat message; returns an error text, or None when it went well.

    The run stores the answer and the events, and marks the message done, error or cancelled;
    ``sink`` gets the events as they come (the pages that follow the run).
    """
    from grobot.core.store.council_run import council_question, run_council

    msg = IncomingMessage(bot_id=bot_id, conversation_key=key, content=content, author_id=author_id,
                          author_name=author_name, platform="test_chat", run_id=message_id)
    if isinstance(deps.store, ImageStore):  # an image sent with the message: for a model that reads images
        msg.attachments = [Attachment(filename=image.name, content_type=image.mime_type, size=len(image.data),
                                      image_base64=base64.b64encode(image.data).decode())
                           for image in await deps.store.sent_images(message_id)]
    prepared = await prepare(msg, deps)
    admission = admit(prepared, gate)
    if not admission.admitted:  # Test Chat is always answered by the rules: a refusal, said and stored
        return (await refuse(prepared, admission.refusal, deps, sink=sink)).error
    question = council_question(content)
    error: str | None = "stopped"
    try:
        if question is None:
            error = (await answer(prepared, admission, deps, sink=sink)).error
        else:  # "/council QUESTION": the bot's advisory council deliberates, as one run of the tester
            prepared.discard()  # it needs none of the chain's lookups
            loaded = prepared.loaded  # tested as a channel: that channel's persona, as on Discord
            _, error = await run_council(bot_id, question, run_id=message_id, asked_by=author_name, sink=sink,
                                         store=deps.store, persona=(loaded.llms, loaded.bot.channel_personality)
                                         if loaded is not None else None)
    finally:
        admission.release()
        if error:  # failed or stopped: the tester may retry it at once
            admission.give_back_cooldown(gate)
    return error
