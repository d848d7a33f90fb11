"""Text for people: how long ago something happened, numbers with separators."""

from __future__ import annotations

import logging
from datetime import datetime, timezone

logger = logging.getLogger(__name__)


def ago(moment: datetime | None, *, now: datetime | None = None, never: str = "never") -> str:
    """``"3 min ago"``, ``"2 h ago"``, ``"5 days ago"``, or ``never`` for None."""
    if moment is None:
        return never
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    seconds = max(0.0, ((now or datetime.now(timezone.utc)) - moment).total_seconds())
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    return f"{days} day{'' if days == 1 else 's'} ago"


def utc_text(moment: datetime | None) -> str:
    """``"2026-11-22 15:04 UTC"``, or empty for None."""
    if moment is None:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def count(value: int) -> str:
    """``12345`` -> ``"12,345"``."""
    return f"{value:,}"
