"""Text for people: how long ago something happened, numbers with separators, counted nouns."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import reflex as rx

from grobot.core.wording import counted as counted_text

logger = logging.getLogger(__name__)


def ago(moment: datetime | None, *, now: datetime | None = None, never: str = "never") -> str:
    """``"3 min ago"``, ``"2 h ago"``, ``"5 days ago"``, or ``never`` for None."""
    if moment is None:
        return never
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = max(0.0, ((now or datetime.now(UTC)) - moment).total_seconds())
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
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def count(value: int) -> str:
    """``12345`` -> ``"12,345"``."""
    return f"{value:,}"


def counted(value: int | rx.Var, noun: str, plural: str | None = None) -> str | rx.Var:
    """``"1 guild"``, ``"3 guilds"``: a count with its noun in the right number (for a plain
    int, or a state var as a text var)."""
    if isinstance(value, int):
        return counted_text(value, noun, plural)
    many = plural or f"{noun}s"
    return value.to_string() + " " + rx.cond(value == 1, noun, many)  # type: ignore[attr-defined,operator]


def byte_size_text(raw: str | int) -> str:
    """A byte count as the admin reads it: ``"5,242,880 bytes = 5 MiB."`` (``≈`` when not exact)."""
    try:
        size = int(str(raw).strip())
    except ValueError:
        return "A whole number of bytes, e.g. 5242880 = 5 MiB."
    if size < 1024:
        return f"{counted(size, 'byte')}."
    units = ("KiB", "MiB", "GiB", "TiB")
    power = 1
    while power < len(units) and size / 1024 ** power >= 1024:
        power += 1
    value, unit = size / 1024 ** power, units[power - 1]
    if value == int(value):
        return f"{size:,} bytes = {value:.0f} {unit}."
    return f"{size:,} bytes ≈ {value:.1f} {unit}."
