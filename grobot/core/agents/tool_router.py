"""Tool Router: which of a bot's tools a message may need, decided without an LLM call.

Each tool is scored against the message: the cosine similarity of their sentence embeddings
(the MiniLM the worker's memory holds, within the memory time limit) and a word match of the
message against the tool's name. A message no tool comes close to is answered at once, with
no Tool Identifier round trip (most chat messages); otherwise the Tool Identifier chooses
among the few closest tools only, best first, which keeps its prompt short and its choice
constrained. Without an embedder the word match decides alone.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field

from grobot.core.tools.base import ToolSpec

logger = logging.getLogger(__name__)

# Cosine similarity (MiniLM) from which a tool is a candidate: a message that needs a tool
# scores 0.33-0.65 against it, chat 0.05-0.30 (measured on the phrases of bench/tool_use.py's
# calibration set, not its tasks).
CANDIDATE_SIMILARITY = 0.32
WORD_MATCH_SCORE = 0.45  # a word of the tool's name in the message makes it a candidate
MAX_CANDIDATES = 4
DESCRIPTION_CHARS = 200

_STOPWORDS = frozenset("""
a an the and or but if of to in on at by for with from into about as is are was were be been am do does did
i me my you your he she it its we us our they them their this that these those what which who whom whose
how when where why can could would should will shall may might must not no yes please thanks thank hi hello
hey get set use tell give show make let now just some any all more most very much many one two
""".split())
_WORD = re.compile(r"[a-z0-9]+")


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 2}


def name_words(name: str) -> set[str]:
    """The words of a tool name: ``time__get_current_time`` -> {time, current}; camelCase split too."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("__", " ").replace("_", " ").replace("-", " ")
    return _words(spaced)


def tool_text(spec: ToolSpec) -> str:
    """What a tool is compared with: its readable name and the start of its description."""
    readable = spec.name.split("__")[-1].replace("_", " ")
    return f"{readable}: {spec.description.strip()[:DESCRIPTION_CHARS]}"


@dataclass
class Routing:
    """The tools worth asking the Tool Identifier about, best first, and why."""

    candidates: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    method: str = "words"

    def describe(self) -> str:
        best = sorted(self.scores.items(), key=lambda kv: -kv[1])[:3]
        shown = ", ".join(f"{name} {score:.2f}" for name, score in best) or "no tools"
        if not self.candidates:
            return f"no tool matches the message ({self.method}: {shown}); answering directly"
        return f"{len(self.candidates)} candidate tool(s) ({self.method}: {shown})"


def word_scores(message: str, specs: list[ToolSpec]) -> dict[str, float]:
    words = _words(message)
    return {s.name: WORD_MATCH_SCORE if words & name_words(s.name) else 0.0 for s in specs}


async def route(message: str, specs: list[ToolSpec], embedder: object | None, *, budget: float) -> Routing:
    """Score ``specs`` against ``message``; ``embedder``: anything with ``similarities(text, texts)``."""
    scores = word_scores(message, specs)
    method = "words"
    similarities = getattr(embedder, "similarities", None)
    if similarities is not None and message.strip():
        try:
            found = await asyncio.wait_for(similarities(message, [tool_text(s) for s in specs]), budget)
        except Exception as exc:  # no embedder, a slow or dead memory service: words decide
            logger.info("Tool routing without embeddings (%s)", type(exc).__name__)
        else:
            if len(found) == len(specs):
                method = "embeddings+words"
                scores = {s.name: max(scores[s.name], float(v)) for s, v in zip(specs, found)}
    ranked = sorted((name for name, score in scores.items() if score >= CANDIDATE_SIMILARITY), key=lambda n: -scores[n])
    return Routing(candidates=ranked[:MAX_CANDIDATES], scores=scores, method=method)
