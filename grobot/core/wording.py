"""Counts as people read them, for every place GroBot writes one (web app, CLI, health, checks)."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``"1 guild"``, ``"3 guilds"``, ``"2 memories"`` (with ``plural``); thousands separated."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
