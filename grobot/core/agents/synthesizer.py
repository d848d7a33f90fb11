"""Synthesizer (output model): streams the answer from the conversation and the tool results."""

from __future__ import annotations

import logging
from typing import Any

from grobot.core.agents.run import Run

logger = logging.getLogger(__name__)


def answer_messages(run: Run, exchange: list[dict[str, Any]], note: str = "") -> list[dict[str, Any]]:
    system = run.system_prompt + (f"\n\n{note}" if note else "")
    return [{"role": "system", "content": system}, *run.history, run.output_user_msg or run.user_msg, *exchange]


async def synthesize(run: Run, exchange: list[dict[str, Any]], *, note: str = "") -> str:
    """Stream the final answer (tokens go to the run's events); returns its text."""
    result = await run.llm("output", "synthesizer", answer_messages(run, exchange, note), on_text=run.recorder.token)
    return result.text
