"""Daily usage limits: a bot's token and LLM-call budgets, and a per-Discord-user message limit.

Each limit is the bot's own value (``bot`` columns) or, when that is NULL, the global default
(``setting``); 0 means unlimited. Days are UTC. The check reads the committed counters
(:mod:`grobot.core.services.usage_accounting`) in one query, before a run: a run that starts
under the budget finishes, so a budget may be overshot by the runs in flight, never cut mid-answer.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlmodel import Session

from grobot.core.limits import (BOT_CALLS, BOT_LIMIT_TEXT, BOT_TOKENS, USER_LIMIT_TEXT,
                                 USER_MESSAGES, LimitHit, LimitState, check, reset_warnings, warn_once)
from grobot.core.models import Bot, Setting, UsageDaily, UserUsageDaily
from grobot.core.services.app_settings import LIMIT_KEYS
from grobot.core.services.usage_accounting import utc_day

logger = logging.getLogger(__name__)

__all__ = ["BOT_CALLS", "BOT_LIMIT_TEXT", "BOT_TOKENS", "USER_LIMIT_TEXT", "USER_MESSAGES", "LimitHit", "LimitState",
           "check", "read_state", "reset_warnings", "warn_once"]


def _state_query() -> Any:
    """``SELECT`` today's counters of a bot (and of one user) and the global defaults (built once)."""
    global _QUERY
    if _QUERY is None:
        usage = (UsageDaily.bot_id == bindparam("bot_id")) & (UsageDaily.day == bindparam("day"))
        user = ((UserUsageDaily.bot_id == bindparam("bot_id")) & (UserUsageDaily.day == bindparam("day"))
                & (UserUsageDaily.discord_user_id == bindparam("user_id")))
        columns = [
            select(UsageDaily.tokens_in + UsageDaily.tokens_out).where(usage).scalar_subquery().label("tokens"),
            select(UsageDaily.calls).where(usage).scalar_subquery().label("calls"),
            select(UserUsageDaily.messages).where(user).scalar_subquery().label("user_messages"),
        ]
        columns += [select(Setting.value).where(Setting.key == key).scalar_subquery().label(key) for key in LIMIT_KEYS]
        _QUERY = select(*columns)
    return _QUERY


_QUERY: Any = None


def _limit(own: int | None, default: Any) -> int:
    if own is not None:
        return max(0, int(own))
    try:
        return max(0, int(default or 0))
    except (TypeError, ValueError):
        return 0


def read_state(*, session: Session, bot: Bot, discord_user_id: str | None = None,
               now: datetime | None = None) -> LimitState:
    """Today's usage of ``bot`` (and of ``discord_user_id`` with it) and its effective limits."""
    day = utc_day(now)
    # Core, not the ORM: nothing here is an entity, and it saves a tenth of a millisecond per message.
    params = {"bot_id": bot.id, "day": day, "user_id": discord_user_id}
    row = session.connection().execute(_state_query(), params).one()
    tokens, calls, user_messages, token_default, call_default, user_default = row
    return LimitState(
        bot_id=bot.id or 0, bot_name=bot.name, day=day, tokens=int(tokens or 0), calls=int(calls or 0),
        user_messages=int(user_messages or 0) if discord_user_id else 0,
        token_limit=_limit(bot.daily_token_limit, token_default),
        call_limit=_limit(bot.daily_call_limit, call_default),
        user_message_limit=_limit(bot.user_daily_message_limit, user_default) if discord_user_id else 0,
    )
