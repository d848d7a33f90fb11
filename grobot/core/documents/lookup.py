"""A message's passages: the search in the bot's index, and the sentence a reply quotes.

Blocking; the supervisor runs it on its memory threads (:class:`grobot.core.memory.local.LocalMemory`)
beside the message's memory lookup, with the message's vector computed once for both.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from grobot.core.documents import Passage
from grobot.core.documents.chunks import sentences
from grobot.core.documents.index import DocumentIndex

logger = logging.getLogger(__name__)

MAX_QUOTE_SENTENCES = 12  # of the best passage, compared with the question
MAX_QUOTE_CHARS = 300


def search(index: DocumentIndex, bot_id: int, query: str, *, k: int, threshold: float | None,
           vector: Any = None, quote: bool = True) -> list[Passage] | None:
    """The passages of bot ``bot_id`` closest to ``query`` (None: it has none indexed); the first
    carries its sentence closest to the query when ``quote``. ``vector``: the query's, if known."""
    from grobot.core.embeddings import get_embedder

    if not query.strip():
        return []
    if vector is None:
        vector = get_embedder().embed([query])[0]
    found = index.search(bot_id, vector, k, threshold=threshold)
    if found and quote:
        found[0] = dataclasses.replace(found[0], quote=best_sentence(found[0], vector))
    return found


def best_sentence(passage: Passage, vector: Any) -> str:
    """The sentence of ``passage`` closest in meaning to the question's ``vector`` ("" for none)."""
    import numpy as np

    from grobot.core.embeddings import get_embedder

    candidates = [s for s in sentences(passage.text) if len(s) <= MAX_QUOTE_CHARS][:MAX_QUOTE_SENTENCES]
    if not candidates:
        return ""
    if len(candidates) == 1:
        return candidates[0]
    scores = np.asarray(get_embedder().embed(candidates), dtype=np.float32) @ np.asarray(vector, dtype=np.float32)
    return candidates[int(np.argmax(scores))]
