"""Daily usage limits, the plain part: today's counters and limits of a bot, and the check.

The query that reads them is :func:`grobot.core.services.usage_limits.read_state`; bot
processes only check what their supervisor read (they import no database layer).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

BOT_TOKENS = "bot_tokens"
BOT_CALLS = "bot_calls"
USER_MESSAGES = "user_messages"

BOT_LIMIT_TEXT = "{bot} has reached its daily limit; it will be back after 00:00 UTC."
USER_LIMIT_TEXT = "You have reached your daily message limit with {bot}; it resets at 00:00 UTC."


@dataclass(frozen=True)
class LimitState:
    """A bot's usage today and its effective limits (0: unlimited), read in one query."""

    bot_id: int
    bot_name: str
    day: str
    tokens: int
    calls: int
    user_messages: int
    token_limit: int
    call_limit: int
    user_message_limit: int

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class LimitHit:
    """A limit that stops a run: which one (``reason``) and what the user is told."""

    reason: str
    text: str
    used: int
    limit: int


def check(state: LimitState) -> LimitHit | None:
    """The first limit that ``state`` has reached, or None: the run may start."""
    bot_text = BOT_LIMIT_TEXT.format(bot=state.bot_name)
    if state.token_limit and state.tokens >= state.token_limit:
        return LimitHit(BOT_TOKENS, bot_text, state.tokens, state.token_limit)
    if state.call_limit and state.calls >= state.call_limit:
        return LimitHit(BOT_CALLS, bot_text, state.calls, state.call_limit)
    if state.user_message_limit and state.user_messages >= state.user_message_limit:
        return LimitHit(USER_MESSAGES, USER_LIMIT_TEXT.format(bot=state.bot_name), state.user_messages,
                        state.user_message_limit)
    return None


_WHAT = {BOT_TOKENS: "daily token limit", BOT_CALLS: "daily LLM-call limit", USER_MESSAGES: "daily message limit"}
_warned: set[tuple[int, str, str]] = set()  # (bot id, reason, user) warned about on _warned_day
_warned_day = ""
_warned_lock = threading.Lock()


def reset_warnings() -> None:
    """Forget which limits were logged (a new database in this process: the tests)."""
    global _warned_day
    with _warned_lock:
        _warned.clear()
        _warned_day = ""


def warn_once(state: LimitState, hit: LimitHit, discord_user_id: str | None = None) -> bool:
    """Log a WARNING the first time (in this process) a limit stops a run on a UTC day; True when logged.

    A bot's own limits are logged once per day each; the per-user limit once per day per user.
    """
    global _warned_day
    user = (discord_user_id or "") if hit.reason == USER_MESSAGES else ""
    key = (state.bot_id, hit.reason, user)
    with _warned_lock:
        if state.day != _warned_day:
            _warned.clear()
            _warned_day = state.day
        if key in _warned:
            return False
        _warned.add(key)
    if hit.reason == USER_MESSAGES:
        logger.warning("Bot %s: Discord user %s reached the %s (%d of %d); not answered until 00:00 UTC",
                       state.bot_name, user, _WHAT[hit.reason], hit.used, hit.limit)
    else:
        logger.warning("Bot %s reached its %s (%d of %d); no LLM calls until 00:00 UTC",
                       state.bot_name, _WHAT[hit.reason], hit.used, hit.limit)
    return True
