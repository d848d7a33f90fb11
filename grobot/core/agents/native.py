"""``native`` mode: one tool-calling loop on the output model, with the same executor and limits.

A call that fails for good is asked once more with the error; when it fails again after tools
ran, the Synthesizer answers with their results (``recovery``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from grobot.core.agents import prompts, recovery
from grobot.core.agents.executor import PlannedCall, execute
from grobot.core.agents.run import Run
from grobot.core.agents.synthesizer import (
    answer_cap,
    answer_messages,
    final_text,
    grounded_results,
    guard,
    retry_answer,
    settle,
    synthesize,
)
from grobot.core.llm.service import LLMResult
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
        result = await recovery.retry_once(run, "native", _asker(run, exchange, note, offer), keep_going=bool(exchange))
        if result is None:  # failed twice after tools ran: the Synthesizer answers with their results
            answer = await synthesize(run, exchange, note=(note + "\n" + prompts.TOOLS_MODEL_FAILED_NOTE).strip())
            run.new_messages.extend(exchange)
            return answer
        if not result.tool_calls or offer is None:
            run.new_messages.extend(exchange)
            text = await final_text(run, result, "native")
            return await settle(run, text, grounded_results(run), retry=retry_answer(run, exchange, note))
        rounds += 1
        calls = []
        for tc in result.tool_calls:
            error = "" if tc.arguments is not None else f"the arguments were not valid JSON: {tc.raw_arguments[:200]}"
            calls.append(PlannedCall(id=tc.id, name=tc.name, arguments=tc.arguments or {}, error=error))
        await run.think("native", f"round {rounds}: the model calls {', '.join(c.name for c in calls)}")
        executed = await execute(run, calls, by_name, catalog)
        exchange.append({"role": "assistant", "content": result.text,
                         "tool_calls": [{"id": c.id, "type": "function",
                                         "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                                        for c in calls]})
        exchange.extend(e.tool_message() for e in executed)


def _asker(run: Run, exchange: list[dict[str, Any]], note: str,
           offer: list[dict[str, Any]] | None) -> Callable[[str], Awaitable[LLMResult]]:
    """One call of the loop; ``failed`` (a retry): the error of the previous try, with a simpler task."""

    def ask(failed: str) -> Awaitable[LLMResult]:
        told = note
        if failed:
            told = (note + "\n" + prompts.MODEL_RETRY.format(error=failed, simpler=prompts.SIMPLER_NATIVE)).strip()
        watch = guard(run, grounded_results(run))
        return run.llm("output", "native", answer_messages(run, exchange, told), tools=offer, on_text=watch.feed,
                       stop=lambda: watch.stop, max_tokens=answer_cap(run))

    return ask
