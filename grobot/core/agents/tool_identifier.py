"""Tool Identifier (tools model): which one of a few close tools the message needs, or none (a constrained choice)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.run import Run
from grobot.core.agents.structured import BadJSON, parse_object
from grobot.core.tools.base import ToolSpec

logger = logging.getLogger(__name__)

MAX_RESULT_CHARS_SHOWN = 2000


@dataclass
class Choice:
    name: str
    arguments: dict[str, Any] | None  # None: the model gave none (the Parameter Extractor fills them)


def describe_tools(specs: list[ToolSpec]) -> str:
    return "\n".join(f"- {s.name}: {' '.join((s.description or '(no description)').split())[:300]}" for s in specs)


def _shown(content: str) -> str:
    return content if len(content) <= MAX_RESULT_CHARS_SHOWN else content[:MAX_RESULT_CHARS_SHOWN] + " …(cut)"


def results_text(done: list[tuple[str, dict[str, Any], str]]) -> str:
    """The results so far for the tools model, one line each: ``- name(arguments) -> "result"``, the
    result a JSON string, so its own lines, quotes or braces stay inside it and cannot pass for
    another tool's result or for an instruction. (The 135M demo model read a JSON object a line
    worse: it took a time for a question still open and called more time tools.)"""
    lines = []
    for name, args, content in done:
        shown = json.dumps(_shown(content), ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        lines.append(f"- {name}({json.dumps(args, ensure_ascii=False)}) -> {shown}")
    return "\n".join(lines)


def results_said(done: list[tuple[str, dict[str, Any], str]]) -> str:
    """What the results so far say, as the tools model reads them in :func:`results_text` (unquoted): where
    an argument's value may come from, as from the user's words."""
    return "\n".join(_shown(content) for _name, _args, content in done)


def choice_schema(specs: list[ToolSpec], *, allow_none: bool = True) -> dict[str, Any]:
    """One of the offered tools (or none, when that is a possible answer)."""
    names = [s.name for s in specs] + (["none"] if allow_none else [])
    return {"type": "object", "properties": {"tool": {"type": "string", "enum": names}},
            "required": ["tool"], "additionalProperties": False}


async def choose_one(run: Run, specs: list[ToolSpec], *, done: list[tuple[str, dict[str, Any], str]] | None = None,
                     round_no: int = 1, failed: str = "", allow_none: bool = True) -> list[Choice]:
    """Ask the tools model which one of a few close tools the message needs (empty: none of them).

    ``allow_none`` False: the Router is sure a tool is needed, the model only tells the close ones apart.

    A model free of the schema (a scripted or lenient server) may name several, with arguments: kept.
    """
    system = prompts.TOOL_CHOOSER.format(tools=describe_tools(specs))
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}, run.user_msg]
    if done:
        messages.append({"role": "user", "content": prompts.TOOL_RESULTS.format(
            round=round_no, max_rounds=run.bot.max_tool_rounds, results=results_text(done))})
    if failed:
        messages.append({"role": "user", "content": prompts.MODEL_RETRY.format(error=failed, simpler=prompts.SIMPLER_IDENTIFIER)})
    result = await run.llm("tools", "tool_identifier", messages, schema=choice_schema(specs, allow_none=allow_none),
                           temperature=0.0,
                           max_tokens=prompts.IDENTIFIER_MAX_TOKENS)
    try:
        answer, repaired = parse_object(result.text)
    except BadJSON:
        await run.think("tool_identifier", "the tools model gave no readable choice; answering without tools")
        return []
    if repaired:
        await run.think("tool_identifier", "repaired broken JSON from the tools model")
    known = {s.name for s in specs}
    raw = answer.get("tools") if "tools" in answer else [answer.get("tool")]
    choices: dict[str, Choice] = {}
    for item in raw if isinstance(raw, list) else [raw]:
        name = str((item.get("name") if isinstance(item, dict) else item) or "")
        if name in known and name not in choices:
            args = item.get("arguments") if isinstance(item, dict) else None
            if isinstance(args, str):
                try:
                    args, _ = parse_object(args)
                except BadJSON:
                    args = None
            choices[name] = Choice(name=name, arguments=args if isinstance(args, dict) else None)
    return list(choices.values())
