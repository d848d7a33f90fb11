"""Gatekeeper: answer or stay silent. The reply rules first (:mod:`.reply_rules`); an LLM call only
where they cannot decide."""

from __future__ import annotations

import logging
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.reply_rules import rules_decision
from grobot.core.agents.structured import BadJSON, parse_object
from grobot.core.llm.errors import LLMError

logger = logging.getLogger(__name__)

__all__ = ["llm_decision", "rules_decision"]


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
