"""Gatekeeper: answer or stay silent. Reply rules first; an LLM call only where they cannot decide."""

from __future__ import annotations

import logging
import re
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.structured import BadJSON, parse_object
from grobot.core.agents.types import IncomingMessage, ReplyRules
from grobot.core.llm.errors import LLMError

logger = logging.getLogger(__name__)


def rules_decision(bot: ReplyRules, msg: IncomingMessage) -> bool | None:
    """True: answer; False: stay silent; None: the rules leave it open (ask the decision model).

    Order: never other bots or itself; the allowed-channel list; DMs; mentions; replies
    to the bot; always-on channels; keywords; then "when relevant" leaves it open. ``bot``:
    its :class:`ReplyRules`, or anything with those fields (a ``Bot`` row).
    """
    if msg.author_is_bot:
        return False
    if msg.platform != "discord":
        return True  # Test Chat and CLI always get an answer
    if msg.is_dm:
        return bool(bot.reply_in_dms)
    channel = msg.channel_id or ""
    if bot.allowed_channel_ids and channel not in bot.allowed_channel_ids:
        return False
    if msg.mentions_bot and bot.reply_to_mentions:
        return True
    if msg.is_reply_to_bot and bot.reply_to_replies:
        return True
    if channel and channel in (bot.always_on_channel_ids or []):
        return True
    if bot.keywords and _has_keyword(msg.content, bot.keywords):
        return True
    if bot.reply_when_relevant:
        return None
    return False


def _has_keyword(text: str, keywords: list[str]) -> bool:
    lowered = text.lower()
    for keyword in keywords:
        keyword = keyword.strip().lower()
        if keyword and re.search(rf"(?<!\w){re.escape(keyword)}(?!\w)", lowered):
            return True
    return False


GATEKEEPER_SCHEMA = {
    "type": "object",
    "properties": {"reply": {"type": "boolean"}},
    "required": ["reply"],
    "additionalProperties": False,
}


async def llm_decision(run: Any, recent: list[dict[str, Any]]) -> tuple[bool, str]:
    """Ask the decision model whether to answer: ``(reply, reason)``. A broken answer means silence."""
    system = prompts.GATEKEEPER.format(bot_name=run.bot.name, personality=(run.bot.personality or "")[:500] or "-")
    messages = [{"role": "system", "content": system}, *recent[-8:], run.user_msg]
    try:
        result = await run.llm("decision", "gatekeeper", messages, schema=GATEKEEPER_SCHEMA, temperature=0.0,
                              max_tokens=prompts.GATEKEEPER_MAX_TOKENS)
    except LLMError as exc:  # a message nobody addressed to the bot: silence beats an error reply
        logger.warning("Bot %s: the decision model failed (%s); staying silent", run.bot.id, exc)
        return False, f"the decision model failed: {exc}"
    try:
        answer, _ = parse_object(result.text)
    except BadJSON:
        return False, "the decision model gave no readable answer"
    reply = answer.get("reply")
    if isinstance(reply, str):
        reply = reply.strip().lower() in ("true", "yes", "1")
    return bool(reply), ""
