"""Moderator (decision model): is a message abusive? One constrained yes/no call, made only for a bot
whose admin turned it on (:class:`grobot.core.moderation.Moderation`); the chain asks it before it answers."""

from __future__ import annotations

import logging
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.structured import BadJSON, parse_object
from grobot.core.llm.errors import LLMError

logger = logging.getLogger(__name__)

ABUSE_SCHEMA = {
    "type": "object",
    "properties": {"abusive": {"type": "boolean"}},
    "required": ["abusive"],
    "additionalProperties": False,
}
RULE = "the decision model's check (abusive)"  # the rule a message it judges abusive broke, as the Logs say it


async def judged_abusive(run: Any) -> bool | None:
    """Whether the decision model judges the run's message abusive (None: it could not say; the
    message is then answered as usual and the failure logged)."""
    messages = [{"role": "system", "content": prompts.MODERATOR}, run.user_msg]
    try:
        result = await run.llm("decision", "moderator", messages, schema=ABUSE_SCHEMA, temperature=0.0,
                               max_tokens=prompts.GATEKEEPER_MAX_TOKENS)
    except LLMError as exc:
        logger.warning("Moderation: the decision model could not check a message (%s); it is answered as usual",
                       exc, extra={"bot_id": run.msg.bot_id})
        return None
    try:
        answer, _ = parse_object(result.text)
    except BadJSON:
        logger.warning("Moderation: the decision model gave no readable answer; the message is answered as usual",
                       extra={"bot_id": run.msg.bot_id})
        return None
    abusive = answer.get("abusive")
    if isinstance(abusive, str):
        abusive = abusive.strip().lower() in ("true", "yes", "1")
    return bool(abusive)
