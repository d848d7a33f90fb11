"""Synthesizer (output model): streams the answer from the conversation and the tool results."""

from __future__ import annotations

import logging
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.endings import ended_cleanly
from grobot.core.agents.run import Run
from grobot.core.llm.embedded import DEMO_MODEL
from grobot.core.llm.service import LLMResult

logger = logging.getLogger(__name__)


def answer_messages(run: Run, exchange: list[dict[str, Any]], note: str = "") -> list[dict[str, Any]]:
    system = run.system_prompt + (f"\n\n{note}" if note else "")
    return [{"role": "system", "content": system}, *run.history, run.output_user_msg or run.user_msg, *exchange]


def answer_cap(run: Run) -> int:
    """The most tokens an answer may take (the tiny demo model gets a tighter cap)."""
    llm = run.llms["output"]
    return prompts.DEMO_ANSWER_MAX_TOKENS if llm.model == DEMO_MODEL else prompts.ANSWER_MAX_TOKENS


async def synthesize(run: Run, exchange: list[dict[str, Any]], *, note: str = "") -> str:
    """Stream the final answer (tokens go to the run's events); returns its text."""
    result = await run.llm("output", "synthesizer", answer_messages(run, exchange, note), on_text=run.recorder.token,
                           max_tokens=answer_cap(run))
    return await final_text(run, result, "synthesizer")


async def final_text(run: Run, result: LLMResult, step: str) -> str:
    """The answer's text as the user keeps it: one that stopped at its output cap ends cleanly (the
    streamed draft had a half sentence), and the step says so in Test Chat."""
    if not (result.records and result.records[-1].capped) or not result.text.strip():
        return result.text
    text = ended_cleanly(result.text)
    run.recorder.revise_end(result.text, text)
    await run.think(step, f"the answer reached its cap of {answer_cap(run)} tokens; it ends "
                          + ("at its last full sentence" if not text.endswith("…") else "with an ellipsis"))
    return text
