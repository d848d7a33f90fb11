"""A council question as a run: ``/council QUESTION`` in Test Chat (and the CLI), on the database of this process.

Each advisor's answer is a step of the run and a section of the streamed answer (in
finishing order); the synthesis ends it. The deliberation is stored with its LLM calls.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from grobot.core.agents.council import (
    AdvisorAnswer,
    CouncilError,
    CouncilPlan,
    Deliberation,
    StoredProgress,
    check_plan,
    deliberate,
)
from grobot.core.agents.events import RunRecorder
from grobot.core.agents.run_store import RunEnd
from grobot.core.agents.types import EventKind, EventSink

logger = logging.getLogger(__name__)

COMMAND = "/council"


def council_question(text: str) -> str | None:
    """The question of a ``/council QUESTION`` message (None: not a council command)."""
    stripped = text.strip()
    if stripped == COMMAND or stripped.startswith((COMMAND + " ", COMMAND + "\n")):
        return stripped[len(COMMAND):].strip()
    return None


class DatabaseCouncilPort:
    """:class:`~grobot.core.agents.council.CouncilPort` on the database of this process (threads)."""

    async def council_plan(self, bot_id: int, asker: str | None) -> CouncilPlan:
        from grobot.core.db import session_scope
        from grobot.core.services import council

        def read() -> CouncilPlan:
            with session_scope() as session:
                return council.council_plan(bot_id, session=session, discord_user_id=asker)

        return await asyncio.to_thread(read)

    async def save_deliberation(self, bot_id: int, deliberation: Deliberation, *, asked_by: str,
                                platform: str, deliberation_id: int | None = None) -> int:
        from grobot.core.db import session_scope
        from grobot.core.services import council

        def write() -> int:
            with session_scope() as session:
                return council.save_deliberation(bot_id, deliberation, session=session, asked_by=asked_by,
                                                 platform=platform, deliberation_id=deliberation_id).id or 0

        return await asyncio.to_thread(write)

    async def drop_deliberation(self, bot_id: int, deliberation_id: int) -> None:
        from grobot.core.db import session_scope
        from grobot.core.services import council

        def write() -> None:
            with session_scope() as session:
                council.drop_deliberation(bot_id, deliberation_id, session=session)

        await asyncio.to_thread(write)

    async def conversation_of(self, run_id: int) -> int | None:
        """The conversation of the stored user message ``run_id`` (its answer goes there)."""
        from grobot.core.db import session_scope
        from grobot.core.models import Message

        def read() -> int | None:
            with session_scope(readonly=True) as session:
                stored = session.get(Message, run_id)
                return stored.conversation_id if stored is not None else None

        return await asyncio.to_thread(read)


def step_text(answer: AdvisorAnswer) -> str:
    head = f"{answer.name} ({answer.provider} {answer.model}, {answer.seconds:.1f} s)"
    return f"{head} could not answer: {answer.error}" if answer.error else f"{head}: {answer.answer}"


async def run_council(bot_id: int, question: str, *, run_id: int | None = None, asked_by: str = "tester",
                      platform: str = "test_chat", sink: EventSink | None = None,
                      port: Any = None, store: Any = None,
                      persona: tuple[dict[str, Any], str] | None = None) -> tuple[str, str | None]:
    """Deliberate on ``question`` as a run (``run_id``: the stored Test Chat message it answers, whose events and
    answer are stored in ``store``, the host's RunStore, by default this process's database); returns
    ``(answer text, error)``. ``persona``: the LLMs per category and the personality addition of the channel
    it is asked in (:meth:`~grobot.core.agents.council.CouncilPlan.in_channel`)."""
    port = port or DatabaseCouncilPort()
    if store is None:
        from grobot.core.store.run_store_db import DatabaseStore

        store = DatabaseStore()
    recorder = RunRecorder(sink, store)
    if run_id is not None:
        recorder.attach(run_id, conversation_id=await port.conversation_of(run_id))
    started = time.perf_counter()
    deliberation: Deliberation | None = None
    records: list[Any] = []  # the LLM calls as they end (a stopped council still accounts for them)
    bot_name = ""
    stored = StoredProgress(port, bot_id, asked_by=asked_by, platform=platform)  # the Council tab follows it
    try:
        if not question:
            raise CouncilError("ask the council a question: /council QUESTION")
        plan = await port.council_plan(bot_id, None)
        if persona is not None:
            plan = plan.in_channel(*persona)
        bot_name = plan.bot_name
        check_plan(plan)
        await recorder.emit(EventKind.THINKING, {"step": "council", "text": (
            f"{len(plan.advisors)} advisors deliberate: {', '.join(a.name for a in plan.advisors)}")})
        sections: list[str] = []

        async def shown(answer: AdvisorAnswer) -> None:
            await recorder.emit(EventKind.THINKING, {"step": "advisor", "text": step_text(answer),
                                                     "advisor": answer.name, "failed": bool(answer.error)})
            await recorder.token(("\n\n" if sections else "") + answer.section())
            sections.append(answer.section())

        deliberation = await deliberate(plan, question, on_advisor=shown, records=records, on_progress=stored)
        await recorder.token("\n\n" + deliberation.synthesis())
        deliberation_id = await stored.finish(deliberation)
        text = recorder.text
        data = {"text": text, "deliberation_id": deliberation_id, "confidence": deliberation.confidence,
                "usage": {"tokens_in": deliberation.tokens_in, "tokens_out": deliberation.tokens_out,
                          "llm_calls": len(deliberation.records)},
                "timings": {"total_ms": round((time.perf_counter() - started) * 1000, 2)}}
        end = RunEnd(bot_id=bot_id, author_name=plan.bot_name, new_messages=[{"role": "assistant", "content": text}],
                     stored_run=run_id is not None)
        event = await recorder.finish(EventKind.DONE, data, end=end if recorder.storing else None)
        return text, (str(event.data.get("message")) if event.kind is EventKind.ERROR else None)
    except asyncio.CancelledError as exc:  # Test Chat's Stop: what the tester saw stays, marked cancelled
        from grobot.core.agents.chain import cancel_reason

        # The LLM calls of the advisors that had answered are accounted for (usage, cost, budgets).
        await asyncio.shield(_fail(recorder, bot_id, run_id, cancel_reason(exc), bot_name, cancelled=True,
                                   records=records))
        await asyncio.shield(stored.drop())
        raise
    except Exception as exc:
        message = str(exc) if isinstance(exc, CouncilError) else f"the council failed: {type(exc).__name__}: {exc}"
        if not isinstance(exc, CouncilError):
            logger.exception("The council of bot %s failed", bot_id)
        if deliberation is not None and deliberation.records:
            logger.warning("A deliberation of bot %s was not stored (%d LLM calls)", bot_id, len(deliberation.records))
        await stored.drop()  # no deliberation shown as running that will never end
        await _fail(recorder, bot_id, run_id, message[:500], bot_name)
        return "", message[:500]


async def _fail(recorder: RunRecorder, bot_id: int, run_id: int | None, message: str, bot_name: str = "", *,
                cancelled: bool = False, records: list[Any] | None = None) -> None:
    end = None
    if run_id is not None:
        shown = [{"role": "assistant", "content": recorder.text}] if cancelled and recorder.text else []
        end = RunEnd(bot_id=bot_id, author_name=bot_name, new_messages=shown, stored_run=True, error=message,
                     cancelled=cancelled, records=list(records or []))
    elif records:
        end = RunEnd(bot_id=bot_id, author_name=bot_name, records=list(records))
    try:
        await recorder.finish(EventKind.ERROR, {"message": message, **({"cancelled": True} if cancelled else {})},
                              end=end)
    except Exception:
        logger.exception("Could not end the council run with an error")
