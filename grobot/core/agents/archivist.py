"""Archivist: after the answer, in the background, keeps notes about the user and long-term memories.

It never delays the answer. One LLM call (decision model) does both jobs, and only when a
rule says the message may hold something worth keeping (:mod:`grobot.core.agents.worth_keeping`): the
user said something about themselves or something lasting, or (with a memory) made a statement that is
neither a question, a request nor a reaction.

Notes and memories come from the user's own words: the model reads the user's message only
(never the bot's answer, which a small model copied into a note about the user), and each
note or memory it writes is kept only when the message supports it, at least half of its
meaningful words said by the user (:func:`support`); its reliability is at most what that
support says (``0.5 + 0.5 * support``), and at least 0.6 to be kept. Notes are never
duplicated (the notes service merges the same text); the memory skips one whose meaning is
already stored.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.context import one_line
from grobot.core.agents.structured import BadJSON, parse_object
from grobot.core.agents.tool_router import content_words
from grobot.core.agents.worth_keeping import worth_a_look
from grobot.core.llm.service import LLMCallFailed, call_llm
from grobot.core.memory import MAX_MEMORY_CHARS, MemoryPort, NoopMemory

logger = logging.getLogger(__name__)

MIN_RELIABILITY = 0.6
MIN_SUPPORT = 0.5  # the share of a note's meaningful words the user's message must hold
# Words a note adds to the user's own to say whom it is about ("The user lives in Berlin", "Ada said ...").
_ABOUT_WORDS = frozenset({"user", "person", "said", "say", "says", "told", "stated", "mentioned"})
MAX_NOTES_PER_RUN = 5
MAX_MEMORIES_PER_RUN = 5
MEMORY_KINDS = ("fact", "decision", "preference", "event")
NOTES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "notes": {
            "type": "array",
            "items": {"type": "object", "properties": {"note": {"type": "string"}, "reliability": {"type": "number"}},
                      "required": ["note", "reliability"]},
        }
    },
    "required": ["notes"],
}
MEMORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **NOTES_SCHEMA["properties"],
        "memories": {
            "type": "array",
            "items": {"type": "object", "properties": {"text": {"type": "string"}, "kind": {"type": "string"}},
                      "required": ["text"]},
        },
    },
    "required": ["notes", "memories"],
}

_pending: set[asyncio.Task[None]] = set()


@dataclass
class Exchange:
    """One answered message, as the Archivist sees it."""

    bot_id: int
    bot_name: str
    run_id: int | None
    author_id: str
    author_name: str
    conversation_key: str
    user_text: str
    channel_id: str | None = None
    guild_id: str | None = None
    source_message_id: str | None = None


def schedule(*, store: Any, bot_id: int, bot_name: str, run_id: int | None, author_id: str, author_name: str, conversation_key: str,
             user_text: str, decision_llm: Any, known_notes: list[str], memory: MemoryPort | None,
             channel_id: str | None = None, guild_id: str | None = None,
             source_message_id: str | None = None) -> asyncio.Task[None]:
    """Start the Archivist for one exchange; returns its task (see :func:`drain`)."""
    exchange = Exchange(bot_id=bot_id, bot_name=bot_name, run_id=run_id, author_id=author_id, author_name=author_name,
                        conversation_key=conversation_key, user_text=user_text, channel_id=channel_id,
                        guild_id=guild_id, source_message_id=source_message_id)
    task = asyncio.create_task(_archive(exchange, store, decision_llm=decision_llm, known_notes=known_notes, memory=memory))
    _pending.add(task)
    task.add_done_callback(_pending.discard)
    return task


async def drain(timeout: float = 30.0) -> None:
    """Wait for the Archivist tasks of this process (tests, shutdown)."""
    tasks = [t for t in _pending if not t.done()]
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)


async def _archive(exchange: Exchange, store: Any, *, decision_llm: Any, known_notes: list[str], memory: MemoryPort | None) -> None:
    with_memory = memory is not None and not isinstance(memory, NoopMemory)
    try:
        if not worth_a_look(exchange.user_text, with_memory=with_memory):
            return
        memories = await _review(exchange, store, decision_llm, known_notes, with_memory=with_memory)
        if memories and memory is not None:
            await _remember(memory, exchange, memories)
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception("The Archivist failed for bot %s", exchange.bot_id)


async def _remember(memory: MemoryPort, exchange: Exchange, memories: list[tuple[str, str]]) -> None:
    """Store the chosen memories with where they come from (a failure is logged once, not raised)."""
    from grobot.core.memory.runtime import memory_failed, memory_worked

    by_kind: dict[str, list[str]] = {}
    for text, kind in memories[:MAX_MEMORIES_PER_RUN]:
        by_kind.setdefault(kind, []).append(text)
    base = {"user_id": exchange.author_id, "user_name": exchange.author_name, "channel_id": exchange.channel_id or "",
            "guild_id": exchange.guild_id or "", "conversation": exchange.conversation_key,
            "source_message_id": exchange.source_message_id or "", "run_id": exchange.run_id or 0,
            "source": "archivist"}
    try:
        for kind, texts in by_kind.items():
            await memory.remember(exchange.bot_id, texts, {**base, "kind": kind})
    except Exception as exc:
        memory_failed("storing memories", exc)
        return
    memory_worked()
    logger.info("The Archivist offered %d memory(ies) for bot %s", sum(map(len, by_kind.values())), exchange.bot_id)


async def _review(exchange: Exchange, store: Any, llm: Any, known: list[str], *,
                  with_memory: bool) -> list[tuple[str, str]]:
    """One LLM call: store the notes it finds (in ``store``, the run's RunStore); return the
    memories ``(text, kind)`` worth keeping."""
    prompt = prompts.ARCHIVIST_WITH_MEMORY if with_memory else prompts.ARCHIVIST
    system = prompt.format(known="\n".join(f"- {one_line(n)}" for n in known) or "(none)",
                           author=one_line(exchange.author_name))
    # One JSON object: a message that writes "Bot: ..." or "bob: ..." lines stays the person's own words.
    # Not the bot's answer: what is kept about the user comes from the user.
    shown = json.dumps({"person": exchange.author_name, "message": exchange.user_text}, ensure_ascii=False)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": shown}]
    records = []
    notes: list[tuple[str, float]] = []
    memories: list[tuple[str, str]] = []
    try:
        result = await call_llm(llm, messages, role="archivist", schema=MEMORY_SCHEMA if with_memory else NOTES_SCHEMA,
                                temperature=0.0, max_tokens=prompts.ARCHIVIST_MAX_TOKENS)
        records = result.records
        try:
            data, _ = parse_object(result.text)
        except BadJSON:
            data = {}
        notes = _supported_notes(_notes(data), exchange)
        memories = [(text, kind) for text, kind in (_memories(data) if with_memory else [])
                    if support(text, exchange.user_text, exchange.author_name) >= MIN_SUPPORT]
    except LLMCallFailed as exc:
        records = exc.records
        logger.warning("The Archivist's LLM call failed: %s", exc)

    await store.save_calls(exchange.bot_id, exchange.run_id, records,
                                 [(exchange.author_id, text[:1000], reliability) for text, reliability in notes[:MAX_NOTES_PER_RUN]])
    if notes:
        logger.info("The Archivist kept %d note(s) for bot %s", len(notes[:MAX_NOTES_PER_RUN]), exchange.bot_id)
    return memories


def support(written: str, said: str, author: str = "") -> float:
    """The share of the meaningful words of ``written`` (a note, a memory) that ``said`` (the user's message)
    holds; words that only say whom it is about ("the user", the person's name when they did not write it)
    do not count. 0 when nothing is left to check."""
    said_words = content_words(said)
    about = _ABOUT_WORDS | (content_words(author) - said_words)
    words = content_words(written) - about
    return len(words & said_words) / len(words) if words else 0.0


def _supported_notes(notes: list[tuple[str, float]], exchange: Exchange) -> list[tuple[str, float]]:
    """The notes the user's message supports, each as reliable as that support says at most."""
    kept = []
    for text, reliability in notes:
        share = support(text, exchange.user_text, exchange.author_name)
        capped = round(min(reliability, 0.5 + 0.5 * share), 2)
        if share >= MIN_SUPPORT and capped >= MIN_RELIABILITY:
            kept.append((text, capped))
        else:
            logger.info("The Archivist left out a note the message does not support (bot %s)", exchange.bot_id)
    return kept


def _notes(data: dict[str, Any]) -> list[tuple[str, float]]:
    notes = []
    for item in data.get("notes") or []:
        if not isinstance(item, dict):
            continue
        try:
            reliability = float(item.get("reliability", 0))
        except (TypeError, ValueError):
            continue
        text = str(item.get("note") or "").strip()
        if text and reliability >= MIN_RELIABILITY:
            notes.append((text, min(1.0, reliability)))
    return notes


def _memories(data: dict[str, Any]) -> list[tuple[str, str]]:
    found = []
    for item in data.get("memories") or []:
        text = str(item.get("text") or "").strip() if isinstance(item, dict) else ""
        if not text:
            continue
        kind = str(item.get("kind") or "fact").strip().lower()
        found.append((text[:MAX_MEMORY_CHARS], kind if kind in MEMORY_KINDS else "fact"))
    return found
