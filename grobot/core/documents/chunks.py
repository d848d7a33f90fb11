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
CHUNKER_VERSION = 2

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“'(\[]?[A-Z0-9])")
# Words whose period ends no sentence ("Dr. Lena Hoffmann").
_ABBREVIATIONS = {"dr", "mr", "mrs", "ms", "prof", "st", "no", "vs", "etc", "e.g", "i.e", "approx", "fig", "p", "pp",
                  "inc", "ltd", "co", "jr", "sr", "mt", "ca"}
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
        for sentence in split_sentences(paragraph):
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


def split_sentences(text: str) -> list[str]:
    """``text`` cut at the ends of its sentences (not after "Dr." and such)."""
    found: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        before = text[start:match.start()].split()
        last = before[-1].rstrip(".").lower() if before else ""
        if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
            continue
        found.append(text[start:match.start()].strip())
        start = match.end()
    found.append(text[start:].strip())
    return [s for s in found if s]


def sentences(text: str) -> list[str]:
    """A passage's sentences and list items (a paragraph's lines joined first), for the quote a reply cites."""
    found: list[str] = []
    for paragraph in re.split(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+[.)])\s)", text):
        line = " ".join(_LINK.sub(r"\1", paragraph).split()).lstrip("-*+ ").strip()
        line = re.sub(r"^\d+[.)]\s+", "", line)
        found.extend(s for s in split_sentences(line) if len(s.split()) >= 3)
    return found
