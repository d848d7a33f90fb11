"""Sections cut into passages a small embedding model reads whole and a prompt can carry.

A section (a heading and its text, or a PDF page's part) becomes one passage when it is
short, else several of about :data:`TARGET_WORDS` words cut at paragraph ends, then sentence
ends. Each passage keeps its section's title, which is embedded with it (a question about
"refunds" finds the text under "Refunds") and names the source in a reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grobot.core.documents.convert import Section

TARGET_WORDS = 110  # a passage closes once it has this many words
MAX_WORDS = 170  # and never grows past this (MiniLM reads 256 tokens: about 180 words)
# Bumped when the cutting changes: every document is indexed again.
CHUNKER_VERSION = 1

_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[\"“'(\[]?[A-Z0-9])")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_MARKS = re.compile(r"[*_`#>|]+|-{3,}")


@dataclass(frozen=True)
class Chunk:
    """One passage before it is embedded."""

    section: str
    text: str
    page: int | None = None

    def embedding_text(self) -> str:
        """What the embedder reads: the section's title, then the text, without Markdown marks or URLs."""
        text = _MARKS.sub(" ", _URL.sub(" ", _LINK.sub(r"\1", self.text)))
        title = self.section.replace(" › ", ": ")
        return " ".join((f"{title}. {text}" if title else text).split())


def passages(sections: list[Section]) -> list[Chunk]:
    """Every section's passages, in the document's order."""
    chunks: list[Chunk] = []
    for section in sections:
        for text in _cut(section.text):
            chunks.append(Chunk(section.title, text, section.page))
    return chunks


def _words(text: str) -> int:
    return len(text.split())


def _units(text: str) -> list[str]:
    """Paragraphs, each cut into sentences (and a sentence into word windows) when it is too long."""
    units: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if _words(paragraph) <= MAX_WORDS:
            units.append(paragraph)
            continue
        for sentence in _SENTENCE_END.split(paragraph):
            words = sentence.split()
            for start in range(0, len(words), MAX_WORDS):
                units.append(" ".join(words[start:start + MAX_WORDS]))
    return units


def _cut(text: str) -> list[str]:
    """``text`` in pieces of about :data:`TARGET_WORDS` words at paragraph or sentence ends."""
    pieces: list[list[str]] = []
    size = 0
    for unit in _units(text):
        words = _words(unit)
        if pieces and size < TARGET_WORDS and size + words <= MAX_WORDS:
            pieces[-1].append(unit)
            size += words
        else:
            pieces.append([unit])
            size = words
    if len(pieces) > 1 and sum(map(_words, pieces[-1])) < TARGET_WORDS // 3 and \
            sum(map(_words, pieces[-2])) + sum(map(_words, pieces[-1])) <= MAX_WORDS:
        pieces[-2].extend(pieces.pop())
    return ["\n\n".join(piece) for piece in pieces]


def sentences(text: str) -> list[str]:
    """A passage's sentences (and list items), for the quote a reply cites."""
    found: list[str] = []
    for line in re.split(r"\n+", text):
        line = _LINK.sub(r"\1", line).strip().lstrip("-*+ ").strip()
        line = re.sub(r"^\d+[.)]\s+", "", line)
        found.extend(s.strip() for s in _SENTENCE_END.split(line) if len(s.split()) >= 3)
    return found
