"""Counts as people read them, for every place GroBot writes one (web app, CLI, health, checks)."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``"1 guild"``, ``"3 guilds"``, ``"2 memories"`` (with ``plural``); thousands separated."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def human_size(size: int) -> str:
    """``1 byte``, ``17 bytes``, ``1.5 MB`` style sizes."""
    if size < 1024:
        return counted(size, "byte")
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def duration(seconds: float) -> str:
    """A time span as people read it: ``"300 ms"``, ``"4.2 s"``, ``"45.8 s"``, ``"3 min 26 s"``, ``"2 h 5 min"``."""
    seconds = max(0.0, float(seconds))
    if seconds < 0.9995:  # (0.9996 s is "1.0 s", not "1000 ms")
        return f"{seconds * 1000:.0f} ms"
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, rest = divmod(whole // 60, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"
