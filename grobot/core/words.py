"""The words of a text that carry meaning (lower case, no stopwords, no short words): what the Tool
Router matches against tool names, and what the memory's word filter embeds one by one."""

from __future__ import annotations

import re

STOPWORDS = frozenset("""
a an the and or but if of to in on at by for with from into about as is are was were be been am do does did
i me my you your he she it its we us our they them their this that these those what which who whom whose
how when where why can could would should will shall may might must not no yes please thanks thank hi hello
hey get set use tell give show make let now just some any all more most very much many one two
""".split())
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """The meaningful words of ``text`` in order, each once: lower case, three letters or more, no stopword,
    no number."""
    found = (w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS and not w.isdigit())
    return list(dict.fromkeys(found))


def _stem(word: str) -> str:
    """A plural's singular, roughly ("notes" -> "note", "files" -> "file"); enough to match a tool's name."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry meaning: lower case, roughly singular, no stopwords or short words."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 2}
