"""Planner / Executor: run the chosen tool calls.

Identical calls run once; consecutive read-only calls run in parallel, the others in order;
each call has a timeout, transient faults are retried (up to 3 times, with backoff), a
fallback tool is tried when one is set, and a failure becomes a result that says what failed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from grobot.core.agents.acknowledger import Acknowledger
from grobot.core.agents.run import Run
from grobot.core.agents.types import EventKind
from grobot.core.tools.base import ToolCatalog, ToolContext, ToolError, ToolResult, ToolSpec

logger = logging.getLogger(__name__)

MAX_RETRIES = 3
RETRY_BACKOFF_SECONDS = 0.2  # doubles each retry
MAX_RESULT_CHARS = 8000
EVENT_RESULT_CHARS = 2000


@dataclass
class PlannedCall:
    id: str
    name: str
    arguments: dict[str, Any]
    error: str = ""  # set when the call cannot run as asked (bad arguments): it fails with this

    def key(self) -> str:
        return self.name + "\0" + json.dumps(self.arguments, sort_keys=True, default=str)


@dataclass
class ExecutedCall:
    call: PlannedCall
    content: str
    is_error: bool
    duration_ms: float = 0.0
    attempts: int = 1
    fallback: str | None = None

    def tool_message(self) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": self.call.id, "name": self.call.name, "content": self.content}


def plan(calls: list[PlannedCall], specs: dict[str, ToolSpec]) -> list[list[PlannedCall]]:
    """Batches in order: consecutive read-only calls share a batch (run in parallel)."""
    batches: list[list[PlannedCall]] = []
    for call in calls:
        spec = specs.get(call.name)
        read_only = bool(spec and spec.read_only)
        if read_only and batches and all(specs.get(c.name) and specs[c.name].read_only for c in batches[-1]):
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n…(cut: {len(text) - limit} more characters)"


async def execute(run: Run, calls: list[PlannedCall], specs: dict[str, ToolSpec], catalog: ToolCatalog) -> list[ExecutedCall]:
    """Run ``calls``; returns one result per call, in the same order."""
    await run.load_tool_settings()
    unique: dict[str, PlannedCall] = {}
    for call in calls:
        unique.setdefault(call.key(), call)
    if len(unique) < len(calls):
        await run.think("executor", f"{len(calls) - len(unique)} identical call(s) merged")
    done: dict[str, ExecutedCall] = {}
    ack = Acknowledger(run)
    ack.start([c.name for c in unique.values()])
    started = time.perf_counter()
    try:
        for batch in plan(list(unique.values()), specs):
            if len(batch) > 1:
                results = await asyncio.gather(*(_run_one(run, c, specs, catalog) for c in batch))
            else:
                results = [await _run_one(run, batch[0], specs, catalog)]
            for call, result in zip(batch, results):
                done[call.key()] = result
    finally:
        await ack.stop()
        run.tools_seconds += time.perf_counter() - started
    result = []
    for call in calls:
        first = done[call.key()]
        result.append(first if first.call is call else ExecutedCall(call=call, content=first.content, is_error=first.is_error,
                                                                    duration_ms=first.duration_ms, attempts=0, fallback=first.fallback))
    return result


async def _run_one(run: Run, call: PlannedCall, specs: dict[str, ToolSpec], catalog: ToolCatalog) -> ExecutedCall:
    rec = run.recorder
    await rec.emit(EventKind.TOOL_CALL, {"id": call.id, "name": call.name, "arguments": call.arguments})
    await rec.emit(EventKind.PROGRESS, {"tool": call.name, "status": "started"})
    started = time.perf_counter()
    spec = specs.get(call.name)
    fallback_used = None
    if call.error:
        content, is_error, attempts = f"Tool {call.name} was not called: {call.error}", True, 0
    elif spec is None:
        content, is_error, attempts = f"Tool {call.name} failed: there is no tool of that name", True, 0
    else:
        content, is_error, attempts = await _attempts(run, spec, call.arguments, catalog)
        if is_error and spec.fallback and spec.fallback in specs and spec.fallback != spec.name:
            fallback_used = spec.fallback
            await rec.emit(EventKind.PROGRESS, {"tool": call.name, "status": "fallback", "fallback": spec.fallback,
                                                "error": content})
            fb_content, fb_error, fb_attempts = await _attempts(run, specs[spec.fallback], call.arguments, catalog)
            attempts += fb_attempts
            if fb_error:
                content = f"{content}\nFallback {spec.fallback} failed too: {fb_content}"
            else:
                content, is_error = f"(answered by the fallback tool {spec.fallback})\n{fb_content}", False
    duration = (time.perf_counter() - started) * 1000
    content = _truncate(content, MAX_RESULT_CHARS)
    await rec.emit(EventKind.TOOL_RESULT, {"id": call.id, "name": call.name, "content": _truncate(content, EVENT_RESULT_CHARS),
                                           "is_error": is_error, "duration_ms": round(duration, 1), "attempts": attempts,
                                           **({"fallback": fallback_used} if fallback_used else {})})
    status = {"tool": call.name, "status": "failed" if is_error else "finished", "duration_ms": round(duration, 1)}
    if is_error:
        status["error"] = content.splitlines()[0][:300]
    await rec.emit(EventKind.PROGRESS, status)
    return ExecutedCall(call=call, content=content, is_error=is_error, duration_ms=duration, attempts=attempts, fallback=fallback_used)


def _context(run: Run) -> ToolContext:
    if run.tool_context is not None:
        return run.tool_context
    msg = run.msg
    return ToolContext(bot_id=msg.bot_id, user_id=msg.author_id, user_name=msg.author_name, channel_id=msg.channel_id,
                       guild_id=msg.guild_id, message_id=msg.discord_message_id,
                       platform="test_chat" if msg.platform != "discord" else "discord")


async def _attempts(run: Run, spec: ToolSpec, arguments: dict[str, Any], catalog: ToolCatalog) -> tuple[str, bool, int]:
    """``(content, is_error, attempts)`` of calling ``spec`` with retries for transient faults."""
    timeout = float(spec.timeout_seconds or run.tool_timeout)
    context = _context(run)
    attempt = 0
    while True:
        attempt += 1
        try:
            result: ToolResult = await asyncio.wait_for(
                catalog.call_tool(spec.name, arguments, context=context, timeout=timeout), timeout)
        except asyncio.TimeoutError:
            return f"Tool {spec.name} failed: no answer within {timeout:g} s (timed out)", True, attempt
        except ToolError as exc:
            if exc.transient and attempt <= MAX_RETRIES:
                await _backoff(run, spec, attempt, str(exc))
                continue
            return f"Tool {spec.name} failed: {exc}", True, attempt
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # No traceback: its message may hold the call's arguments (conversation content).
            logger.warning("Tool %s raised %s", spec.name, type(exc).__name__)
            return f"Tool {spec.name} failed: {type(exc).__name__}: {exc}", True, attempt
        if result.is_error and result.transient and attempt <= MAX_RETRIES:
            await _backoff(run, spec, attempt, result.content)
            continue
        if result.is_error:
            return f"Tool {spec.name} failed: {result.content}", True, attempt
        return result.content, False, attempt


async def _backoff(run: Run, spec: ToolSpec, attempt: int, reason: str) -> None:
    wait = RETRY_BACKOFF_SECONDS * 2 ** (attempt - 1)
    await run.recorder.emit(EventKind.PROGRESS, {"tool": spec.name, "status": "retrying", "attempt": attempt + 1,
                                                 "error": reason.splitlines()[0][:200] if reason else ""})
    await asyncio.sleep(wait)
