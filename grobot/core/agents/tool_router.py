"""Tool Router: which of a bot's tools a message may need, decided without an LLM call.

Each tool is scored against the message: the cosine similarity of their sentence embeddings
(the MiniLM the worker's memory holds, within the memory time limit) and a word match of the
message against the tool's name. A message no tool comes close to is answered at once, with
no Tool Identifier round trip (most chat messages); otherwise the Tool Identifier chooses
among the few closest tools only, best first, which keeps its prompt short and its choice
constrained. Without an embedder the word match decides alone.

A third signal reads requests the English embedder cannot: a built-in tool's request cues
(:mod:`tool_cues`: "quelle heure", "merk dir", "is it the weekend yet?", "list your files") make it
a sure candidate, in English, French, Spanish and German, and chat on the same topics matches none.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from grobot.core.agents import tool_cues
from grobot.core.agents.run_store import Scores
from grobot.core.tools.base import ToolSpec
from grobot.core.words import content_words

logger = logging.getLogger(__name__)

# Cosine similarity (MiniLM) from which a tool is a candidate: a message that needs a tool
# scored 0.33-0.65 against it, chat 0.05-0.30 (18 phrases, apart from bench/tool_use.py's tasks,
# against ten tool descriptions, when the Router was built).
CANDIDATE_SIMILARITY = 0.32
WORD_MATCH_SCORE = 0.32  # a word of the tool's name in the message makes it a (weak) candidate
# Every word of a tool's name (two or more: "search the web" for web_search) in the message: the
# message names the tool, which is as sure as a close meaning.
NAMED_SCORE = 0.40
# The score shown for a tool whose request cue the message holds (tool_cues): surer than a close meaning.
CUE_SCORE = 0.60
MAX_CANDIDATES = 4
TIE_BREAK = 0.01
CLEAR_LEAD = 0.05  # a clause's best tool this far ahead of the next is taken without asking the tools model
DESCRIPTION_CHARS = 200


# A file name: a name, a dot and an extension that starts with a letter ("notes.txt", not "2.0").
_FILE_NAME = re.compile(r"\b[\w-]+\.[a-z][a-z0-9]{0,4}\b", re.IGNORECASE)


def _words(text: str) -> set[str]:
    words = content_words(text)
    if _FILE_NAME.search(text):
        words.add("file")  # "notes.txt" names a file
    return words


@functools.lru_cache(maxsize=4096)
def name_words(name: str) -> frozenset[str]:
    """The words of a tool name: ``time__get_current_time`` -> {time, current}; camelCase split too
    (worked out once per name: the router compares every message with every tool's)."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("__", " ").replace("_", " ").replace("-", " ")
    return frozenset(_words(spaced))


def tool_text(spec: ToolSpec) -> str:
    """What a tool is compared with: its readable name and the start of its description."""
    readable = spec.name.split("__")[-1].replace("_", " ")
    return f"{readable}: {spec.description.strip()[:DESCRIPTION_CHARS]}"


@dataclass(frozen=True)
class Group:
    """Close tools for the Tool Identifier to choose from; ``sure``: one of them is needed (no "none")."""

    names: list[str]
    sure: bool


@dataclass
class Routing:
    """What the Tool Router found: tools it is sure of, groups of close tools to choose from, and scores.

    The message is cut into clauses ("list your files and tell me the time" is two requests);
    each clause's best tool is ``picked`` when it leads the next one clearly, else the close
    tools form a ``group`` for the Tool Identifier to choose from (one LLM call with a choice).
    """

    picks: list[str] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    method: str = "words"

    @property
    def candidates(self) -> list[str]:
        return list(dict.fromkeys([*self.picks, *(name for group in self.groups for name in group.names)]))

    def describe(self) -> str:
        """What the router decided, in words (its scores: :meth:`scores_text`)."""
        if not self.candidates:
            return "no tool matches the message; answering directly"
        parts = []
        if self.picks:
            parts.append(f"chose {', '.join(self.picks)}")
        if self.groups:
            parts.append("asks the tools model to choose between " + "; ".join(" / ".join(g.names) for g in self.groups))
        return " and ".join(parts)

    def scores_text(self) -> str:
        """How it decided, for admins: the method and the three best scores (``embeddings+words: x 0.71, ...``)."""
        best = sorted(self.scores.items(), key=lambda kv: -kv[1])[:3]
        return f"{self.method}: " + (", ".join(f"{name} {score:.2f}" for name, score in best) or "no tools")


_CLAUSE_SPLIT = re.compile(r"(?:[.;!?]+\s+|,\s+(?:and\s+|then\s+)?|\s+(?:and|then|also)\s+)", re.IGNORECASE)


def clauses(message: str) -> list[str]:
    """The requests of a message: split at sentence ends and at "and"/"then" between requests of 2+ words."""
    parts = [p.strip() for p in _CLAUSE_SPLIT.split(message) if p and p.strip()]
    merged: list[str] = []
    for part in parts:
        if merged and len(part.split()) < 2:
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    whole = message.strip()
    return merged if len(merged) > 1 else [whole] if whole else []


def word_scores(message: str, specs: list[ToolSpec]) -> dict[str, float]:
    """Per tool, the score of the message's words alone: the tool named, or a word of its name."""
    words = _words(message)
    scores = {}
    for spec in specs:
        names = name_words(spec.name)
        scores[spec.name] = (NAMED_SCORE if len(names) >= 2 and names <= words
                             else WORD_MATCH_SCORE if words & names else 0.0)
    return scores


def _cued(part: str, specs: list[ToolSpec], scores: dict[str, float]) -> list[str]:
    """The tools a request asks for by a built-in's cue (:mod:`tool_cues`), best first: the cued built-ins,
    and any other tool (an MCP one: no cues) whose score comes as close as theirs (the MCP clock beside
    ``datetime_now``), for the tools model to choose from. A built-in without the cue is not asked for."""
    cued = tool_cues.cued(part, [s.name for s in specs if s.source == "builtin"])
    if not cued:
        return []
    floor = max(CANDIDATE_SIMILARITY, min(scores[n] for n in cued) - CLEAR_LEAD)
    alike = [s.name for s in specs if s.source != "builtin" and scores[s.name] >= floor]
    return sorted([*cued, *alike], key=lambda n: -scores[n])[:MAX_CANDIDATES]


def precomputable(message: str) -> bool:
    """Whether the message's scores can be computed before the chain runs (one request: one clause)."""
    return len(clauses(message)) == 1


async def _scores(text: str, specs: list[ToolSpec], similarities: Any, budget: float,
                  known: dict[str, float] | None = None) -> tuple[dict[str, float], dict[str, float] | None]:
    """``(scores, similarities)`` of each tool for ``text``; similarities None: no embedder answered.

    ``known``: similarities of ``text`` computed already, by tool text (see :func:`precomputable`).
    """
    scores = word_scores(text, specs)
    texts = [tool_text(s) for s in specs]
    if known is not None and all(t in known for t in texts):
        found: Any = [known[t] for t in texts]
    elif similarities is None:
        return scores, None
    else:
        try:
            found = await asyncio.wait_for(similarities(text, texts), budget)
        except Exception as exc:  # no embedder, a slow or dead memory: words decide
            logger.info("Tool routing without embeddings (%s)", type(exc).__name__)
            return scores, None
    if len(found) != len(specs):
        return scores, None
    meaning = {s.name: float(v) for s, v in zip(specs, found)}
    # Tools matched by the same word are ordered by their meaning (the tiny share of the similarity).
    return {name: max(scores[name], v) + TIE_BREAK * v for name, v in meaning.items()}, meaning


async def route(message: str, specs: list[ToolSpec], embedder: object | None, *, budget: float,
                known: Scores | None = None) -> Routing:
    """Score ``specs`` against each request of ``message``; ``embedder``: anything with ``similarities(text, texts)``.

    ``known``: the similarities of a one-clause ``message`` by tool text, computed before the run
    (a bot's supervisor does so when it reads the message: :attr:`Prepared.scores`); missing ones
    are asked for.
    """
    similarities = getattr(embedder, "similarities", None)
    parts = clauses(message)
    if not parts or not specs:
        return Routing()
    known = known if len(parts) == 1 else None
    scored = await asyncio.gather(*(_scores(part, specs, similarities, budget, known) for part in parts))
    routing = Routing(method="embeddings+words" if all(meaning is not None for _, meaning in scored) else "words")
    for part, (scores, meaning) in zip(parts, scored):
        cued = _cued(part, specs, scores)
        for name in cued:
            if tool_cues.has_cues(name):
                scores[name] = max(scores[name], CUE_SCORE)
        for name, value in scores.items():
            routing.scores[name] = max(routing.scores.get(name, 0.0), value)
        if cued:  # a request for a built-in, in words its cues know: sure; close MCP tools are asked about
            if len(cued) == 1:
                if cued[0] not in routing.picks:
                    routing.picks.append(cued[0])
            elif not any(set(cued) <= set(g.names) for g in routing.groups):
                routing.groups.append(Group(cued, True))
            continue
        ranked = sorted((n for n, v in scores.items() if v >= CANDIDATE_SIMILARITY), key=lambda n: -scores[n])
        if not ranked:
            continue
        # Sure: the meaning of the best tool is close, or the request names it. A word match alone is
        # weak evidence: the tools model chooses among the word matches, or says none.
        sure = (meaning is not None and meaning[ranked[0]] >= CANDIDATE_SIMILARITY) or \
            word_scores(part, specs)[ranked[0]] >= NAMED_SCORE
        close = [n for n in ranked if not sure or scores[ranked[0]] - scores[n] < CLEAR_LEAD][:MAX_CANDIDATES]
        if len(close) == 1 and sure:
            if ranked[0] not in routing.picks:
                routing.picks.append(ranked[0])
        elif not any(set(close) <= set(g.names) for g in routing.groups):
            routing.groups.append(Group(close, sure))
    chosen = set(routing.picks)
    routing.groups = [g for g in routing.groups if not chosen & set(g.names)]
    return routing
