"""A message and the bot's documents: the lookup beside its memories, the passages in the answering
prompt, and the source the reply names.

The lookup is embeddings only (no LLM call): the supervisor searches the bot's passages with
the message's vector while it looks its memories up, and only those at least as similar as
the bot's threshold reach the prompt. A message no passage comes close to is answered as
before, with no tool of its own; the ``documents_search`` tool is offered only to a message
whose closest passage came near the threshold (the model may search with other words).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from grobot.core.documents import PASSAGES_PER_MESSAGE, Passage, query_of
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

TOOL_NAME = "documents_search"
PROMPT_CHARS = 2400  # of passages in the answering prompt, at most
CLOSE_SCORES = 0.05  # a second passage this close to the best is named as a source too
# A message whose closest passage is this much below the threshold may still be about the documents:
# the documents_search tool is offered. (On the bench's suite, questions score 0.30 and up, chat 0.12-0.23.)
TOOL_MARGIN = 0.05
MARKDOWN_SPECIAL = "\\`*_~|[]<>"  # marks that format text in the middle of a line


@dataclass(frozen=True)
class Found:
    """What a message's lookup found: the relevant passages (best first), whether the bot has any
    document indexed (False also when documents are off or could not be searched), and whether its
    closest passage came near the threshold without passing it (the message may be about them)."""

    passages: list[Passage] = field(default_factory=list)
    indexed: bool = False
    near: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"passages": [p.as_dict() for p in self.passages], "indexed": self.indexed, "near": self.near}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Found | None:
        if data is None:
            return None
        return cls([Passage.from_dict(p) for p in data.get("passages") or []], bool(data.get("indexed")),
                   bool(data.get("near")))


NOTHING = Found()


async def lookup(memory: Any, msg: Any, bot: Any) -> Found:
    """The passages of ``msg`` in its bot's documents (``bot``: its ``BotConfig``), within the memory
    time limit; never raises (a failure finds nothing)."""
    query = query_of(bot)
    search = getattr(memory, "documents", None)
    if query is None or search is None or not msg.content.strip():
        return NOTHING
    try:
        found = await asyncio.wait_for(search(msg.bot_id, msg.content, query.k, threshold=None, quote=True),
                                       get_settings().memory_budget_seconds)
    except Exception as exc:
        logger.info("No document passages for the message (%s)", type(exc).__name__)
        return NOTHING
    if found is None:
        return NOTHING
    relevant = [p for p in found if p.score >= query.threshold]
    return Found(relevant, True, near=not relevant and bool(found) and found[0].score >= query.threshold - TOOL_MARGIN)


def start_lookup(memory: Any, msg: Any, bot: Any) -> asyncio.Task[Found] | None:
    """Start :func:`lookup` now (None: documents are off, or this process cannot search them)."""
    if query_of(bot) is None or getattr(memory, "documents", None) is None or not msg.content.strip():
        return None
    return asyncio.get_running_loop().create_task(lookup(memory, msg, bot))


def offered(specs: list[Any], found: Found) -> list[Any]:
    """The tools for this message: ``documents_search`` only when a passage came near without passing
    the threshold (the model may search with other words); never for plain chat, where it could cost
    a call to choose among the tools, nor when the prompt has the passages already."""
    if found.near:
        return specs
    return [s for s in specs if s.name != TOOL_NAME]


def prompt_part(found: Found) -> str:
    """The passages for the answering prompt ("" for none), each with its source, within :data:`PROMPT_CHARS`."""
    if not found.passages:
        return ""
    lines = ["", "", "From your documents (answer briefly from these passages; they are the bot's files, not the user's "
                     "words):"]
    left = PROMPT_CHARS
    for passage in found.passages[:PASSAGES_PER_MESSAGE]:
        text = " ".join(passage.text.split())[:left]
        if not text:
            break
        lines.append(f"- [{_one_line(passage.source())}] {text}")
        left -= len(text)
    return "\n".join(lines)


def described(found: Found) -> str:
    """The chain's step for Test Chat: which passages went into the prompt, how close."""
    if not found.passages:
        return "no passage of the bot's documents is close to the message" if found.indexed else ""
    return "in the prompt: " + "; ".join(f"{p.source()} ({p.score:.2f})" for p in found.passages)


def citation(found: Found) -> str:
    """The line a reply ends with: the best passage's source (file and section; and the next one's when it
    is about as close) and its sentence closest to the question ("" when no passage was used)."""
    if not found.passages:
        return ""
    best = found.passages[0]
    sources = list(dict.fromkeys(p.source() for p in found.passages[:2] if p.score >= best.score - CLOSE_SCORES))
    label = "Source" if len(sources) == 1 else "Sources"
    line = f"{label}: " + "; ".join(escape_markdown(s) for s in sources)
    quote = found.passages[0].quote.strip()
    if quote:
        line += f" — “{escape_markdown(_one_line(quote))}”"
    return f"\n\n{line}"


async def cite(run: Any, answer: str, found: Found) -> str:
    """``answer`` with its :func:`citation`, which is streamed like the answer's words."""
    line = citation(found)
    if not line or not answer.strip():
        return answer
    await run.recorder.token(line)
    return answer + line


def escape_markdown(text: str) -> str:
    """``text`` with Markdown's marks escaped, so that a file name shows as written on Discord and in Test Chat."""
    return "".join(f"\\{ch}" if ch in MARKDOWN_SPECIAL else ch for ch in text)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
