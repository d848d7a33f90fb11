"""Answers from the bot's documents: what a passage is, the per-bot settings, the domain error.

A bot's files (text, Markdown, PDF, HTML, Word) are converted to text
(:mod:`~grobot.core.documents.convert`), cut into passages by section
(:mod:`~grobot.core.documents.chunks`), embedded with the memory's embedder and kept in a
Chroma collection of the bot's own beside its memories (:mod:`~grobot.core.documents.index`),
in the bot worker's supervisor only (:mod:`~grobot.core.services.document_sync` keeps it in step with
the files). A message's passages are looked up with its memories
(:mod:`~grobot.core.documents.lookup`); the chain puts the relevant ones in the answering
prompt and names their source in the reply (:mod:`~grobot.core.documents.message`).

This module stays light: bot processes import it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from grobot.core.errors import GroBotError

# Defaults of the per-bot settings (the ``bot`` columns of the same names).
DEFAULT_ENABLED = True
DEFAULT_THRESHOLD = 0.3  # least cosine similarity of a passage to a message to go into the prompt
DEFAULT_MAX_FILE_BYTES = 5 * 1024 * 1024
DEFAULT_MAX_PASSAGES = 20_000  # per bot
PASSAGES_PER_MESSAGE = 3  # at most, into the answering prompt
SUPPORTED = "text, Markdown, PDF, HTML or Word (DOCX)"


class DocumentError(GroBotError):
    """Why a file cannot be indexed, in one plain line (shown on the Files tab and by the CLI)."""


@dataclass(frozen=True)
class Passage:
    """A passage of one of the bot's files; ``score`` (cosine similarity to the question, 1 = same
    meaning) and ``quote`` (its sentence closest to the question) only in search results."""

    path: str
    section: str  # the headings above it, "A › B" ("" for none)
    text: str
    page: int | None = None  # PDF page (1-based)
    score: float = 0.0
    quote: str = ""

    def source(self) -> str:
        """Where it comes from, as a reply names it: ``faq.md › Refunds`` (``, page 3``)."""
        parts = [p for p in self.section.split(" › ") if p][-2:]
        where = " › ".join([self.path, *parts])
        return f"{where}, page {self.page}" if self.page else where

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Passage:
        page = data.get("page")
        return cls(path=str(data["path"]), section=str(data.get("section") or ""), text=str(data["text"]),
                   page=int(page) if page else None, score=float(data.get("score") or 0.0),
                   quote=str(data.get("quote") or ""))


@dataclass(frozen=True)
class DocumentsQuery:
    """What a message's lookup needs of the bot's settings."""

    threshold: float = DEFAULT_THRESHOLD
    k: int = PASSAGES_PER_MESSAGE


def query_of(bot: Any) -> DocumentsQuery | None:
    """The lookup a bot's settings ask for (``bot``: a ``Bot`` or a ``BotConfig``); None: documents are off."""
    if not getattr(bot, "documents_enabled", DEFAULT_ENABLED):
        return None
    threshold = getattr(bot, "documents_threshold", None)
    return DocumentsQuery(threshold=float(DEFAULT_THRESHOLD if threshold is None else threshold))
