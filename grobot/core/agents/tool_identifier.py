"""Tool Identifier (tools model): which tools, if any, and their arguments when it can tell."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.run import Run
from grobot.core.agents.structured import BadJSON, parse_object
from grobot.core.tools.base import ToolSpec

logger = logging.getLogger(__name__)

RECENT_MESSAGES = 4
MAX_CHOICES = 3
MAX_RESULT_CHARS_SHOWN = 2000


@dataclass
class Choice:
    name: str
    arguments: dict[str, Any] | None  # None: the model gave none (the Parameter Extractor fills them)


@dataclass
class Selection:
    choices: list[Choice] = field(default_factory=list)
    reason: str = ""
    repaired: bool = False


def selection_schema(specs: list[ToolSpec], max_choices: int = MAX_CHOICES) -> dict[str, Any]:
    """Only names of the offered tools, at most three: nothing a small model can ramble in."""
    return {
        "type": "object",
        "properties": {"tools": {"type": "array", "items": {"type": "string", "enum": [s.name for s in specs]},
                                 "maxItems": min(max_choices, len(specs))}},
        "required": ["tools"],
        "additionalProperties": False,
    }


def describe_tools(specs: list[ToolSpec]) -> str:
    return "\n".join(f"- {s.name}: {' '.join((s.description or '(no description)').split())[:300]}" for s in specs)


def results_text(done: list[tuple[str, dict[str, Any], str]]) -> str:
    lines = []
    for name, args, content in done:
        shown = content if len(content) <= MAX_RESULT_CHARS_SHOWN else content[:MAX_RESULT_CHARS_SHOWN] + " …(cut)"
        lines.append(f"- {name}({json.dumps(args, ensure_ascii=False)}) -> {shown}")
    return "\n".join(lines)


async def identify(run: Run, specs: list[ToolSpec], done: list[tuple[str, dict[str, Any], str]], round_no: int,
                   *, failed: str = "") -> Selection:
    """Ask the tools model which of ``specs`` to call now (``done``: the calls made so far and their results).

    ``specs`` are the Tool Router's candidates, best first; the answer is constrained to their names.
    ``failed``: the error of the previous try of this call, shown to the model with a simpler task
    (at most one tool).
    """
    system = prompts.TOOL_IDENTIFIER.format(tools=describe_tools(specs))
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    messages += [m for m in run.history[-RECENT_MESSAGES:] if m.get("role") in ("user", "assistant") and m.get("content")]
    messages.append(run.user_msg)
    if done:
        messages.append({"role": "user", "content": prompts.TOOL_RESULTS.format(
            round=round_no, max_rounds=run.bot.max_tool_rounds, results=results_text(done))})
    if failed:
        messages.append({"role": "user", "content": prompts.MODEL_RETRY.format(error=failed,
                                                                               simpler=prompts.SIMPLER_IDENTIFIER)})
    schema = selection_schema(specs, 1 if failed else MAX_CHOICES)
    result = await run.llm("tools", "tool_identifier", messages, schema=schema, temperature=0.0,
                           max_tokens=prompts.IDENTIFIER_MAX_TOKENS)
    try:
        answer, repaired = parse_object(result.text)
    except BadJSON as exc:
        await run.think("tool_identifier", f"the tools model gave no readable choice ({exc}); answering without tools")
        return Selection(reason="unreadable answer")
    known = {s.name for s in specs}
    selection = Selection(repaired=repaired)
    raw = answer.get("tools") or []
    if isinstance(raw, dict):
        raw = [raw]
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict):
            continue
        name = str(item.get("name") or "")
        if name not in known:
            await run.think("tool_identifier", f"the tools model named an unknown tool {name!r}; ignored")
            continue
        args = item.get("arguments")
        if isinstance(args, str):
            try:
                args, _ = parse_object(args)
            except BadJSON:
                args = None
        selection.choices.append(Choice(name=name, arguments=args if isinstance(args, dict) else None))
    return selection
