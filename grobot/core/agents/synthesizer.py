"""Synthesizer (output model): the answer from the conversation and the tool results, and the one place
that decides the text a user reads (:func:`settle`).

Whatever model answers, the reply is fit to send and states what the tools returned:

- the answer streams through a :class:`~grobot.core.agents.reply_check.StreamGuard`: markup, JSON or
  code nobody asked for is held back, and a model that loops or writes tool-call markup is stopped;
- when a tool ran, the answer is held until it states every result; one that does not (a greeting,
  a snippet, a time it made up) is replaced by the results' grounded lines
  (:mod:`~grobot.core.agents.grounding`);
- an answer that is no answer (markup, JSON, code, a loop with nothing before it) is asked for once
  more under a stricter prompt when no tool ran, else replaced by the grounded lines or, failing
  both, a plain apology.

The text :func:`settle` returns is the run's answer everywhere: the done event (the Discord reply is
edited to it), the stored history (Test Chat), the CLI.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from grobot.core.agents import grounding, prompts, reply_check
from grobot.core.agents.endings import ended_cleanly
from grobot.core.agents.grounding import Grounded
from grobot.core.agents.reply_check import StreamGuard
from grobot.core.agents.run import Run
from grobot.core.llm.embedded import DEMO_MODEL
from grobot.core.llm.service import LLMResult

logger = logging.getLogger(__name__)

Retry = Callable[[str], Awaitable[str]]


def answer_messages(run: Run, exchange: list[dict[str, Any]], note: str = "") -> list[dict[str, Any]]:
    system = run.system_prompt + (f"\n\n{note}" if note else "")
    return [{"role": "system", "content": system}, *run.history, run.output_user_msg or run.user_msg, *exchange]


def answer_cap(run: Run) -> int:
    """The most tokens an answer may take (the tiny demo model gets a tighter cap)."""
    llm = run.llms["output"]
    return prompts.DEMO_ANSWER_MAX_TOKENS if llm.model == DEMO_MODEL else prompts.ANSWER_MAX_TOKENS


def grounded_results(run: Run) -> list[Grounded]:
    """The grounded line of each distinct tool result of the run so far (two clocks that gave the same
    time, a call made twice: one line)."""
    lines = [grounding.ground(spec, item.call.name, item.call.arguments, item.content, is_error=item.is_error,
                              asked=run.msg.content)
             for spec, item in run.tool_results]
    return list({(g.kind, g.line): g for g in lines}.values())


def guard(run: Run, grounded: list[Grounded], *, stream: bool = True) -> StreamGuard:
    """The guard an answer of this run streams through (held until it states ``grounded``, if any)."""
    stated = (lambda text: all(g.stated_in(text) for g in grounded)) if grounded else None
    return StreamGuard(run.recorder.token if stream else None, asked=run.msg.content, stated=stated)


async def synthesize(run: Run, exchange: list[dict[str, Any]], *, note: str = "") -> str:
    """Stream the final answer (tokens go to the run's events, through a guard); returns the text the user reads."""
    grounded = grounded_results(run)
    watch = guard(run, grounded)
    result = await run.llm("output", "synthesizer", answer_messages(run, exchange, note), on_text=watch.feed,
                           stop=lambda: watch.stop, max_tokens=answer_cap(run))
    text = await final_text(run, result, "synthesizer")
    return await settle(run, text, grounded, retry=retry_answer(run, exchange, note))


def retry_answer(run: Run, exchange: list[dict[str, Any]], note: str) -> Retry:
    """The answer asked for once more under the stricter prompt (streamed only when nothing was shown yet)."""

    async def again(problem: str) -> str:
        strict = prompts.STRICT_ANSWER.format(problem=reply_check.PROBLEMS.get(problem, problem))
        watch = guard(run, [], stream=not run.recorder.text)
        result = await run.llm("output", "synthesizer", answer_messages(run, exchange, (note + "\n\n" + strict).strip()),
                               on_text=watch.feed, stop=lambda: watch.stop, max_tokens=answer_cap(run),
                               temperature=prompts.STRICT_TEMPERATURE)
        return await final_text(run, result, "synthesizer")

    return again


async def settle(run: Run, text: str, grounded: list[Grounded], *, retry: Retry | None = None,
                 keep: bool = False) -> str:
    """The text the user reads for the model's answer ``text``: see the module's rules.

    ``keep``: ``text`` is not the model's answer to replace but a question the run ends with (the
    Clarifier's): the grounded lines of the results so far come before it.
    """
    if keep:
        final = "\n\n".join([*(g.line for g in grounded if not g.stated_in(text)), text.strip()])
        return await _shown(run, final)
    verdict = reply_check.check(text, run.msg.content)
    if verdict.removed:
        what = ", ".join(reply_check.PROBLEMS[r] for r in verdict.removed)
        await run.think("reply_check", f"took {what} out of the answer" if verdict.ok
                        else f"the answer was {reply_check.PROBLEMS[verdict.problem]}: it is not sent")
    if grounded:
        if verdict.ok and all(g.stated_in(verdict.text) for g in grounded):
            return await _shown(run, verdict.text)
        await run.think("grounding", "the answer did not state what the tools returned: the reply states it from "
                                     "their results")
        return await _shown(run, "\n".join(g.line for g in grounded))
    if verdict.ok:
        return await _shown(run, verdict.text)
    if retry is not None:
        await run.think("reply_check", "asking the model once more, with a stricter prompt")
        second = reply_check.check(await retry(verdict.problem), run.msg.content)
        if second.ok:
            return await _shown(run, second.text)
        await run.think("reply_check", f"the second answer was {reply_check.PROBLEMS[second.problem]} too: "
                                       "the reply is a plain apology")
    return await _shown(run, prompts.NO_ANSWER)


async def _shown(run: Run, final: str) -> str:
    """``final`` as the run's answer: what was held back of it is sent now; an answer that differs from what
    was streamed reaches the hosts with the done event (a Discord reply is edited to it)."""
    streamed = run.recorder.text
    if final.startswith(streamed) and len(final) > len(streamed):
        await run.recorder.token(final[len(streamed):])
    return final


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
