"""Clarifier: ask the user for what a tool needs and the conversation does not give; the run ends there."""

from __future__ import annotations

import logging
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.run import Run
from grobot.core.tools.base import ToolSpec

logger = logging.getLogger(__name__)


def _describe(spec: ToolSpec, missing: list[str]) -> str:
    props: dict[str, Any] = (spec.input_schema or {}).get("properties", {})
    lines = []
    for name in missing:
        desc = (props.get(name) or {}).get("description", "")
        lines.append(f"- {name}" + (f": {desc}" if desc else ""))
    return "\n".join(lines)


async def clarify(run: Run, spec: ToolSpec, missing: list[str], question: str = "") -> str:
    """Stream a question to the user; returns it. A question the Extractor already wrote is used as is."""
    await run.think("clarifier", f"{spec.name} needs {', '.join(missing) or 'more information'}; asking the user")
    if question:
        await run.recorder.token(question)
        return question
    system = run.system_prompt + "\n\n" + prompts.CLARIFIER.format(tool=spec.name, missing=_describe(spec, missing))
    messages = [{"role": "system", "content": system}, *run.history[-6:], run.user_msg]
    result = await run.llm("output", "clarifier", messages, on_text=run.recorder.token,
                           max_tokens=prompts.CLARIFIER_MAX_TOKENS)
    return result.text
