"""Clarifier: ask the user for what a tool needs and the conversation does not give; the run ends there."""

from __future__ import annotations

import logging
from typing import Any

from grobot.core.agents import prompts, reply_check
from grobot.core.agents.run import Run
from grobot.core.tools.base import ToolSpec

logger = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 400


def _describe(spec: ToolSpec, missing: list[str]) -> str:
    props: dict[str, Any] = (spec.input_schema or {}).get("properties", {})
    lines = []
    for name in missing:
        desc = (props.get(name) or {}).get("description", "")
        lines.append(f"- {name}" + (f": {desc}" if desc else ""))
    return "\n".join(lines)


def template_question(missing: list[str]) -> str:
    """A plain question naming what is missing (when the model's own question is unusable); it names
    no tool, whose name may not read as words ("files_read")."""
    names = [f"the {m.replace('_', ' ')}" for m in missing] or ["a few more details"]
    wanted = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"I need {wanted} for that. Could you tell me?"


def _usable(question: str) -> bool:
    """A short question (what a model wrote may be a long text, or no question at all) with nothing to take out
    of it (markup, JSON, code, a loop: what is left of such a text is no question either)."""
    verdict = reply_check.check(question)
    return "?" in question and len(question) <= MAX_QUESTION_CHARS and verdict.ok and not verdict.removed


async def clarify(run: Run, spec: ToolSpec, missing: list[str], question: str = "") -> str:
    """The question for what a tool needs, to end the run with (the caller settles it as the answer).

    ``question``: the one the tools model wrote (outside its schema), used when it is a short
    question. Otherwise the output model writes it (in the user's language), capped; an answer that
    is not a short question (or holds markup, JSON, code or a loop) is replaced by a plain one naming
    what is missing. It is sent whole, not streamed, so a replaced answer never reaches the user.
    """
    await run.think("clarifier", f"{spec.name} needs {', '.join(missing) or 'more information'}; asking the user")
    question = question.strip()
    if question and not _usable(question):
        await run.think("clarifier", "the tools model's question was not usable; asking through the output model")
        question = ""
    if not question:
        system = run.system_prompt + "\n\n" + prompts.CLARIFIER.format(tool=spec.name, missing=_describe(spec, missing))
        messages = [{"role": "system", "content": system}, *run.history[-6:], run.user_msg]
        result = await run.llm("output", "clarifier", messages, max_tokens=prompts.CLARIFIER_MAX_TOKENS)
        question = result.text.strip()
        if not _usable(question):
            await run.think("clarifier", "the model's question was not usable; asking plainly")
            question = template_question(missing)
    return question
