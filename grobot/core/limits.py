"""Usage limits, the plain part: today's and this month's counters and limits of a bot, and the check.

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
BOT_COST = "bot_cost"
MONTH_TOKENS = "month_tokens"
MONTH_CALLS = "month_calls"
MONTH_COST = "month_cost"

BOT_LIMIT_TEXT = "{bot} has reached its daily limit; it will be back after 00:00 UTC."
MONTH_LIMIT_TEXT = "{bot} has reached its monthly limit; it will be back on the 1st (00:00 UTC)."
ALERT_RATIO = 0.8  # a budget used to 80 % is alerted once per period
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
    # Cost today and this month's totals, with their budgets (0: none); costs in the admin's currency.
    cost: float = 0.0
    month: str = ""  # YYYY-MM
    month_tokens: int = 0
    month_calls: int = 0
    month_cost: float = 0.0
    cost_limit: float = 0.0
    month_token_limit: int = 0
    month_call_limit: int = 0
    month_cost_limit: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class Budget:
    """One budget of a bot in its current period: ``name`` (e.g. ``monthly_cost``), use and limit."""

    name: str
    label: str
    period: str  # the UTC day (YYYY-MM-DD) or month (YYYY-MM)
    used: float
    limit: float

    @property
    def ratio(self) -> float:
        return self.used / self.limit if self.limit else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"budget": self.name, "label": self.label, "period": self.period, "used": self.used,
                "limit": self.limit, "percent": round(100 * self.ratio, 1)}


def budgets(state: LimitState) -> list[Budget]:
    """The bot's budgets that are set (limit > 0), with what is used of each."""
    items = [
        ("daily_tokens", "daily tokens", state.day, state.tokens, state.token_limit),
        ("daily_calls", "daily LLM calls", state.day, state.calls, state.call_limit),
        ("daily_cost", "daily cost", state.day, state.cost, state.cost_limit),
        ("monthly_tokens", "monthly tokens", state.month, state.month_tokens, state.month_token_limit),
        ("monthly_calls", "monthly LLM calls", state.month, state.month_calls, state.month_call_limit),
        ("monthly_cost", "monthly cost", state.month, state.month_cost, state.month_cost_limit),
    ]
    return [Budget(name, label, period, float(used), float(limit)) for name, label, period, used, limit in items
            if limit and limit > 0]


def near_budgets(state: LimitState) -> list[Budget]:
    """The budgets used to ``ALERT_RATIO`` (80 %) or more."""
    return [b for b in budgets(state) if b.used >= ALERT_RATIO * b.limit]


@dataclass(frozen=True)
class LimitHit:
    """A limit that stops a run: which one (``reason``) and what the user is told."""

    reason: str
    text: str
    used: int | float
    limit: int | float


def check(state: LimitState) -> LimitHit | None:
    """The first limit that ``state`` has reached, or None: the run may start."""
    bot_text = BOT_LIMIT_TEXT.format(bot=state.bot_name)
    if state.token_limit and state.tokens >= state.token_limit:
        return LimitHit(BOT_TOKENS, bot_text, state.tokens, state.token_limit)
    if state.call_limit and state.calls >= state.call_limit:
        return LimitHit(BOT_CALLS, bot_text, state.calls, state.call_limit)
    if state.cost_limit and state.cost >= state.cost_limit:
        return LimitHit(BOT_COST, bot_text, round(state.cost, 4), state.cost_limit)
    month_text = MONTH_LIMIT_TEXT.format(bot=state.bot_name)
    if state.month_token_limit and state.month_tokens >= state.month_token_limit:
        return LimitHit(MONTH_TOKENS, month_text, state.month_tokens, state.month_token_limit)
    if state.month_call_limit and state.month_calls >= state.month_call_limit:
        return LimitHit(MONTH_CALLS, month_text, state.month_calls, state.month_call_limit)
    if state.month_cost_limit and state.month_cost >= state.month_cost_limit:
        return LimitHit(MONTH_COST, month_text, round(state.month_cost, 4), state.month_cost_limit)
    if state.user_message_limit and state.user_messages >= state.user_message_limit:
        return LimitHit(USER_MESSAGES, USER_LIMIT_TEXT.format(bot=state.bot_name), state.user_messages,
                        state.user_message_limit)
    return None


_WHAT = {BOT_TOKENS: "daily token limit", BOT_CALLS: "daily LLM-call limit", USER_MESSAGES: "daily message limit",
         BOT_COST: "daily cost limit", MONTH_TOKENS: "monthly token limit", MONTH_CALLS: "monthly LLM-call limit",
         MONTH_COST: "monthly cost limit"}
_warned: set[tuple[int, str, str]] = set()  # (bot id, reason, user) warned about on _warned_day
_warned_day = ""
_warned_lock = threading.Lock()


def reset_warnings() -> None:
    """Forget which limits were logged (a new database in this process: the tests)."""
    global _warned_day
    with _warned_lock:
        _warned.clear()
        _warned_day = ""


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0")


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
    extra = {"bot_id": state.bot_id}
    if hit.reason == USER_MESSAGES:
        logger.warning("Bot %s: Discord user %s reached the %s (%d of %d); not answered until 00:00 UTC",
                       state.bot_name, user, _WHAT[hit.reason], hit.used, hit.limit, extra=extra)
    else:
        until = "the 1st (00:00 UTC)" if hit.reason in (MONTH_TOKENS, MONTH_CALLS, MONTH_COST) else "00:00 UTC"
        logger.warning("Bot %s reached its %s (%s of %s); no LLM calls until %s",
                       state.bot_name, _WHAT[hit.reason], _number(hit.used), _number(hit.limit), until, extra=extra)
    return True
