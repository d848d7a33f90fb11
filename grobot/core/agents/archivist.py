"""Archivist: after the answer, in the background, keeps notes about the user and long-term memories.

It never delays the answer. Notes need a reliability of at least 0.6 and are never
duplicated (the notes service merges the same text). The note-taking LLM call is made
only when the message looks like the user said something about themselves.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.structured import BadJSON, parse_object
from grobot.core.db import session_scope
from grobot.core.llm.service import LLMCallFailed, call_llm
from grobot.core.memory import MemoryPort, NoopMemory

logger = logging.getLogger(__name__)

MIN_RELIABILITY = 0.6
MAX_NOTES_PER_RUN = 5
# First-person statements worth a note-taking call (a rule instead of an LLM call on every message).
SELF_STATEMENT = re.compile(
    r"\b(i am|i'm|im|i live|i work|i study|i like|i love|i hate|i prefer|i have|i was born|my name|my [a-z]+ is|"
    r"call me|remember that|je suis|j'habite|ich bin|ich wohne|soy|me llamo)\b",
    re.IGNORECASE,
)
NOTES_SCHEMA = {
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

_pending: set[asyncio.Task[None]] = set()


def schedule(*, bot_id: int, bot_name: str, run_id: int | None, author_id: str, author_name: str, conversation_key: str,
             user_text: str, answer: str, decision_llm: Any, known_notes: list[str], memory: MemoryPort | None) -> asyncio.Task[None]:
    """Start the Archivist for one exchange; returns its task (see :func:`drain`)."""
    task = asyncio.create_task(_archive(bot_id=bot_id, bot_name=bot_name, run_id=run_id, author_id=author_id,
                                        author_name=author_name, conversation_key=conversation_key, user_text=user_text,
                                        answer=answer, decision_llm=decision_llm, known_notes=known_notes, memory=memory))
    _pending.add(task)
    task.add_done_callback(_pending.discard)
    return task


async def drain(timeout: float = 30.0) -> None:
    """Wait for the Archivist tasks of this process (tests, shutdown)."""
    tasks = [t for t in _pending if not t.done()]
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)


async def _archive(*, bot_id: int, bot_name: str, run_id: int | None, author_id: str, author_name: str, conversation_key: str,
                   user_text: str, answer: str, decision_llm: Any, known_notes: list[str], memory: MemoryPort | None) -> None:
    try:
        if SELF_STATEMENT.search(user_text):
            await _take_notes(bot_id, run_id, author_id, author_name, user_text, answer, decision_llm, known_notes)
        if memory is not None and not isinstance(memory, NoopMemory):
            text = f"{author_name}: {user_text}\n{bot_name}: {answer}"
            await memory.remember(bot_id, [text], {"conversation": conversation_key, "user_id": author_id,
                                                   "user_name": author_name, "run_id": run_id or 0})
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception("The Archivist failed for bot %s", bot_id)


async def _take_notes(bot_id: int, run_id: int | None, author_id: str, author_name: str, user_text: str, answer: str,
                      llm: Any, known: list[str]) -> None:
    from grobot.core.services import llm_calls, user_notes

    system = prompts.ARCHIVIST.format(known="\n".join(f"- {n}" for n in known) or "(none)")
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": f"{author_name}: {user_text}\n\nBot: {answer}"}]
    records = []
    notes: list[tuple[str, float]] = []
    try:
        result = await call_llm(llm, messages, role="archivist", schema=NOTES_SCHEMA, temperature=0.0)
        records = result.records
        try:
            data, _ = parse_object(result.text)
        except BadJSON:
            data = {}
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
    except LLMCallFailed as exc:
        records = exc.records
        logger.warning("The Archivist's LLM call failed: %s", exc)

    def write() -> None:
        with session_scope() as session:
            llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=run_id, records=records)
            for text, reliability in notes[:MAX_NOTES_PER_RUN]:
                user_notes.add_note(session=session, bot_id=bot_id, discord_user_id=author_id, note=text[:1000],
                                    reliability=reliability, source="archivist")

    await asyncio.to_thread(write)
    if notes:
        logger.info("The Archivist kept %d note(s) for bot %s", len(notes[:MAX_NOTES_PER_RUN]), bot_id)
