"""A tool-choosing LLM call that failed for good: ask once more with the error, else go on.

The orchestrator's rule: a failed call is retried once with the error injected into the
model's prompt and a simpler task (at most one tool, only the plainly stated arguments).
When that fails too, a run that already has tool results keeps them: it stops choosing
tools and the Synthesizer answers with what there is and a note; a run with nothing yet
ends in the error, as before. ``llm/service.py`` has already retried timeouts and 429s
inside the call: what reaches this module failed for good.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from grobot.core.agents.run import Run
from grobot.core.llm import errors

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Asking again cannot help: the key is refused, or the server is not there.
NOT_RETRIED = (errors.AuthError, errors.ServerUnavailable)


async def retry_once(run: Run, step: str, call: Callable[[str], Awaitable[T]], *, keep_going: bool) -> T | None:
    """``call("")``; when it fails, ``call(error)`` once more (the error to show the model).

    Returns None when the call failed for good and ``keep_going`` (the run has results to
    answer with: the failure is announced as a notice); otherwise the last error is raised.
    A call whose answer had already started streaming to the user is never repeated.
    """
    try:
        return await call("")
    except errors.LLMError as exc:
        if getattr(exc, "_emitted", False):
            raise
        first = errors.one_line(str(exc))
        if isinstance(exc, NOT_RETRIED):
            if not keep_going:
                raise
            await _give_up(run, step, first, tries=1)
            return None
        logger.info("Bot %s: the %s call failed (%s); asking again with the error", run.msg.bot_id, step,
                    type(exc).__name__)
        await run.think(step, f"the model call failed ({first}); asking again with the error and a simpler task")
    try:
        return await call(first)
    except errors.LLMError as exc:
        if not keep_going or getattr(exc, "_emitted", False):
            raise
        await _give_up(run, step, errors.one_line(str(exc)), tries=2)
        return None


async def _give_up(run: Run, step: str, error: str, *, tries: int) -> None:
    times = "twice" if tries == 2 else "and asking again cannot help"
    await run.notice(f"{step}: the model failed {times} ({error}); answering with the tool results so far")
