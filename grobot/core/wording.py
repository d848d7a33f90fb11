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
