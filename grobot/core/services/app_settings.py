"""Global configuration values kept in the ``setting`` table."""

from __future__ import annotations

import logging
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
}

# Settings where "" or "unlimited" means 0.
LIMIT_KEYS = ("daily_token_limit", "daily_call_limit", "user_daily_message_limit")


def get_value(key: str, *, session: Session) -> Any:
    if key not in DEFAULTS:
        raise ValidationError(f"unknown setting {key!r}")
    row = session.get(Setting, key)
    return DEFAULTS[key] if row is None else row.value


def set_value(key: str, value: Any, *, session: Session) -> None:
    if key not in DEFAULTS:
        raise ValidationError(f"unknown setting {key!r}; known: {', '.join(sorted(DEFAULTS))}")
    value = parse_value(key, value)
    row = session.get(Setting, key) or Setting(key=key)
    row.value = value
    row.updated_at = utcnow()
    session.add(row)


def parse_value(key: str, value: Any) -> Any:
    """``value`` typed like the default of ``key`` and in range (a number from the command line, say)."""
    default = DEFAULTS[key]
    if key in LIMIT_KEYS and isinstance(value, str) and value.strip().lower() in ("", "unlimited"):
        value = 0
    try:
        value = type(default)(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{key}: expected {'an integer' if isinstance(default, int) else 'a number'}") from None
    if isinstance(value, (int, float)) and value < 0:
        raise ValidationError(f"{key}: must be 0 or more")
    return value


def get_values(keys: tuple[str, ...], *, session: Session) -> dict[str, Any]:
    """Several settings in one query, each typed like its default."""
    unknown = [k for k in keys if k not in DEFAULTS]
    if unknown:
        raise ValidationError(f"unknown setting {unknown[0]!r}")
    stored = dict(session.exec(select(Setting.key, Setting.value).where(col(Setting.key).in_(keys))).all())
    return {k: type(DEFAULTS[k])(stored[k]) if stored.get(k) is not None else DEFAULTS[k] for k in keys}
