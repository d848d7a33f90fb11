"""Global configuration values kept in the ``setting`` table."""

from __future__ import annotations

import logging
import math
from typing import Any

from sqlmodel import Session, col, select

from grobot.core.errors import ValidationError
from grobot.core.models import Setting, utcnow

logger = logging.getLogger(__name__)

# Known settings and their defaults; unknown keys are refused.
DEFAULTS: dict[str, Any] = {
    "log_retention_days": 14,
    "event_retention_days": 30,
    "max_file_bytes": 5 * 1024 * 1024,
    "acknowledge_after_seconds": 2.0,
    "tool_timeout_seconds": 30.0,
    # Usage limits of every bot without its own (0: unlimited); UTC days.
    "daily_token_limit": 0,
    "daily_call_limit": 0,
    "user_daily_message_limit": 0,
    # Budgets of every bot without its own (0: none): cost per UTC day, tokens, calls and cost per UTC month.
    "daily_cost_limit": 0.0,
    "monthly_token_limit": 0,
    "monthly_call_limit": 0,
    "monthly_cost_limit": 0.0,
    # The currency of prices and estimated costs (ISO 4217 code).
    "currency": "EUR",
    # Long-term memories kept per bot: the oldest go beyond it (0: no cap).
    "memory_max_per_bot": 10000,
    # Embedded llama.cpp servers (applied when a server starts): threads (0: every core but one), requests at once.
    "llamacpp_threads": 0,
    "llamacpp_parallel": 2,
    # The SearXNG instance the bots' web_search uses ("": the keyless metasearch, ddgs); a bot may set its own.
    "web_search_url": "",
}

# Settings where "" or "unlimited" means 0 (no limit).
DAILY_LIMIT_KEYS = ("daily_token_limit", "daily_call_limit", "user_daily_message_limit")
BUDGET_KEYS = ("daily_cost_limit", "monthly_token_limit", "monthly_call_limit", "monthly_cost_limit")

# The range each setting accepts (inclusive).
LIMITS: dict[str, tuple[float, float]] = {
    "log_retention_days": (1, 3650),
    "event_retention_days": (1, 3650),
    "max_file_bytes": (1, 1024**3),
    "acknowledge_after_seconds": (0.0, 600.0),
    "tool_timeout_seconds": (1.0, 600.0),
    "daily_token_limit": (0, 10**12),
    "daily_call_limit": (0, 10**9),
    "user_daily_message_limit": (0, 10**9),
    "daily_cost_limit": (0.0, 10**9),
    "monthly_token_limit": (0, 10**13),
    "monthly_call_limit": (0, 10**10),
    "monthly_cost_limit": (0.0, 10**9),
    "memory_max_per_bot": (0, 10**7),
    "llamacpp_threads": (0, 256),
    "llamacpp_parallel": (1, 64),
}


def check_value(key: str, value: Any) -> Any:
    """``value`` typed like the default of ``key`` and within its range, or ``ValidationError``."""
    if key not in DEFAULTS:
        raise ValidationError(f"unknown setting {key!r}; known: {', '.join(sorted(DEFAULTS))}")
    kind = type(DEFAULTS[key])
    if kind is str:
        return _text_value(key, value)
    if isinstance(value, str):
        value = value.strip()
        if key in DAILY_LIMIT_KEYS + BUDGET_KEYS and value.lower() in ("", "unlimited"):
            value = 0
    try:
        if isinstance(value, bool) or value == "":
            raise ValueError
        number = float(value)
        if not math.isfinite(number) or (kind is int and not number.is_integer()):
            raise ValueError
        typed = kind(number)
    except (TypeError, ValueError):
        raise ValidationError(f"{key}: expected {'a whole number' if kind is int else 'a number'}") from None
    low, high = LIMITS[key]
    if not low <= typed <= high:
        raise ValidationError(f"{key}: must be between {_number(low)} and {_number(high)}")
    return typed


def _text_value(key: str, value: Any) -> str:
    """A text setting: the currency (a three-letter code), or the SearXNG address."""
    if key == "web_search_url":
        from grobot.core.tools.web import check_searxng_url

        try:
            return check_searxng_url(str(value or ""))
        except ValidationError as exc:
            raise ValidationError(f"{key}: {exc}") from None
    text = str(value or "").strip().upper()
    if key == "currency" and not (len(text) == 3 and text.isascii() and text.isalpha()):
        raise ValidationError("currency: must be a three-letter code such as EUR, USD or GBP")
    return text


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def get_value(key: str, *, session: Session) -> Any:
    """The stored value of ``key``, or its default."""
    if key not in DEFAULTS:
        raise ValidationError(f"unknown setting {key!r}")
    row = session.get(Setting, key)
    return DEFAULTS[key] if row is None else row.value


def set_value(key: str, value: Any, *, session: Session) -> None:
    """Store a setting, checked by :func:`check_value`."""
    value = check_value(key, value)
    row = session.get(Setting, key) or Setting(key=key)
    row.value = value
    row.updated_at = utcnow()
    session.add(row)


def get_values(keys: tuple[str, ...], *, session: Session) -> dict[str, Any]:
    """Several settings in one query, each typed like its default."""
    unknown = [k for k in keys if k not in DEFAULTS]
    if unknown:
        raise ValidationError(f"unknown setting {unknown[0]!r}")
    stored = dict(session.exec(select(Setting.key, Setting.value).where(col(Setting.key).in_(keys))).all())
    return {k: type(DEFAULTS[k])(stored[k]) if stored.get(k) is not None else DEFAULTS[k] for k in keys}


def set_values(values: dict[str, Any], *, session: Session) -> dict[str, str]:
    """Store several settings, all or none: the problems per key (empty when all were stored)."""
    errors: dict[str, str] = {}
    for key, value in values.items():
        try:
            check_value(key, value)
        except ValidationError as exc:
            errors[key] = str(exc).partition(": ")[2] or str(exc)
    if errors:
        return errors
    for key, value in values.items():
        set_value(key, value, session=session)
    logger.info("Global settings changed: %s", ", ".join(sorted(values)))
    return {}
