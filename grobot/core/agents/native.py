"""``native`` mode: one tool-calling loop on the output model, with the same executor and limits."""

from __future__ import annotations

import json
import logging
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.executor import PlannedCall, execute
from grobot.core.agents.run import Run
from grobot.core.agents.synthesizer import answer_cap, answer_messages
from grobot.core.tools.base import ToolCatalog, ToolSpec

logger = logging.getLogger(__name__)


async def run_native(run: Run, specs: list[ToolSpec], catalog: ToolCatalog) -> str:
    """Let the output model call tools itself until it answers (or the round limit); returns the answer."""
    by_name = {s.name: s for s in specs}
    tools = [s.openai_schema() for s in specs] or None
    exchange: list[dict[str, Any]] = []
    rounds = 0
    note = ""
    while True:
        offer = tools if rounds < run.bot.max_tool_rounds else None
        if tools and offer is None:
            note = prompts.ROUND_LIMIT
            await run.think("native", f"the limit of {run.bot.max_tool_rounds} tool round(s) was reached; asking for the final answer")
        result = await run.llm("output", "native", answer_messages(run, exchange, note), tools=offer, on_text=run.recorder.token,
                               max_tokens=answer_cap(run))
        if not result.tool_calls or offer is None:
            run.new_messages.extend(exchange)
            return result.text
        rounds += 1
        calls = []
        for tc in result.tool_calls:
            error = "" if tc.arguments is not None else f"the arguments were not valid JSON: {tc.raw_arguments[:200]}"
            calls.append(PlannedCall(id=tc.id, name=tc.name, arguments=tc.arguments or {}, error=error))
        await run.think("native", f"round {rounds}: the model calls {', '.join(c.name for c in calls)}")
        executed = await execute(run, calls, by_name, catalog)
        exchange.append({"role": "assistant", "content": result.text,
                         "tool_calls": [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}} for c in calls]})
        exchange.extend(e.tool_message() for e in executed)
