"""When a category's LLM server cannot be reached: name another provider the admin already configured.

Plain data in, one sentence out (no database, no HTTP): the chain uses it with the bot's three
categories, the web app and the command line with the stored settings (bot and global). GroBot
never switches to another provider by itself; it only says which one could be used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    """A configured LLM setting that could serve instead, and where it is configured."""

    provider: str
    base_url: str
    model: str
    where: str  # e.g. "the bot's tools model", "the global output default"


def _server(provider: str, base_url: str) -> tuple[str, str]:
    return provider.strip().lower(), base_url.strip().rstrip("/")


def pick(provider: str, base_url: str, candidates: Iterable[Candidate]) -> Candidate | None:
    """The first candidate on another server than ``provider`` at ``base_url`` (None: there is none)."""
    failed = _server(provider, base_url)
    for candidate in candidates:
        if candidate.provider and _server(candidate.provider, candidate.base_url) != failed:
            return candidate
    return None


def suggestion(category: str, provider: str, base_url: str, candidates: Iterable[Candidate]) -> str:
    """One sentence naming another configured provider for ``category`` ("" when there is none)."""
    found = pick(provider, base_url, candidates)
    if found is None:
        return ""
    at = f" at {found.base_url}" if found.base_url else ""
    return (f"Another configured provider could serve the {category} model: {found.provider} "
            f"({found.model}{at}, {found.where}); choose it in Settings or with `python -m grobot llm set` "
            "(GroBot does not switch by itself).")


def from_effective(llms: Mapping[str, object], *, skip: str, whose: str = "the bot's") -> list[Candidate]:
    """Candidates from the effective settings of the other categories (``EffectiveLLM``-like objects)."""
    result = []
    for category, llm in llms.items():
        if category == skip or getattr(llm, "unavailable", None):
            continue
        result.append(Candidate(provider=str(getattr(llm, "provider", "")), base_url=str(getattr(llm, "base_url", "")),
                                model=str(getattr(llm, "model", "")), where=f"{whose} {category} model"))
    return result
