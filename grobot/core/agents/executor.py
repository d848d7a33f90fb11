"""Planner / Executor: run the chosen tool calls.

Identical calls run once. Calls run in parallel, except a call of a tool known to write (its MCP
annotations, the built-in's flag, or the admin's setting for the bot): that one runs alone, in
order. Each call has a timeout; a transient fault (a timeout, a lost connection) is tried again,
up to ``MAX_ATTEMPTS`` tries in all, after a backoff that doubles up to ``RETRY_BACKOFF_MAX``; a
call that may have run (timed out) is not sent again when its tool writes and is not idempotent.
When a call still fails, the tool's fallback (set by the admin per bot and tool) is tried with the
same arguments; a failure becomes a result that says what failed. A place written for a time zone
("Tokyo") is read as its zone ("Asia/Tokyo") first, whichever model wrote the call. A call of a tool
that changes things is not made unless the user's message asks for it (:mod:`.write_requests`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from grobot.core import time_zones
from grobot.core.agents.acknowledger import Acknowledger
from grobot.core.agents.run import Run
from grobot.core.agents.types import EventKind
from grobot.core.agents.write_requests import asks_for
from grobot.core.tools.base import ToolCatalog, ToolContext, ToolError, ToolImage, ToolResult, ToolSpec

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # a call and up to two retries of a transient fault
RETRY_BACKOFF_SECONDS = 0.25  # the wait before the first retry, doubling for the next ...
RETRY_BACKOFF_MAX = 10.0  # ... up to this
# The catalog applies the call's timeout itself (its timeout is a retryable fault): this outer
# limit only catches a catalog that does not, a little later.
TIMEOUT_GRACE_SECONDS = 1.0
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
    """Batches in order, each run in parallel: a call of a tool known to write has a batch of its own."""
    batches: list[list[PlannedCall]] = []
    for call in calls:
        if batches and not _writes(call, specs) and not _writes(batches[-1][0], specs):
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches


def _writes(call: PlannedCall, specs: dict[str, ToolSpec]) -> bool:
    spec = specs.get(call.name)
    return bool(spec and spec.writes) and not call.error


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n…(cut: {len(text) - limit} more characters)"


async def execute(run: Run, calls: list[PlannedCall], specs: dict[str, ToolSpec], catalog: ToolCatalog) -> list[ExecutedCall]:
    """Run ``calls``; returns one result per call, in the same order."""
    await run.load_tool_settings()
    for call in calls:
        spec = specs.get(call.name)
        if spec is not None and not call.error and not await asks_for(run, spec):
            call.error = "the user's message does not ask for it, and it changes things"
    for call in calls:
        spec = specs.get(call.name)
        for name, written, zone in time_zones.read_zones(call.arguments, spec.input_schema) if spec else []:
            await run.think("executor", f"{call.name}: {name} {json.dumps(written)} read as the time zone {zone}")
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
    ordered: list[ExecutedCall] = []
    for call in calls:
        first = done[call.key()]
        ordered.append(first if first.call is call else ExecutedCall(call=call, content=first.content, is_error=first.is_error,
                                                                     duration_ms=first.duration_ms, attempts=0, fallback=first.fallback))
    # What the reply must state: the calls that ran (not those refused before running, whose reason is for the model).
    run.tool_results.extend((specs.get(item.call.name), item) for item in done.values()
                            if not item.call.error and item.call.name in specs)
    return ordered


async def _run_one(run: Run, call: PlannedCall, specs: dict[str, ToolSpec], catalog: ToolCatalog) -> ExecutedCall:
    rec = run.recorder
    await rec.emit(EventKind.TOOL_CALL, {"id": call.id, "name": call.name, "arguments": call.arguments})
    await rec.emit(EventKind.PROGRESS, {"tool": call.name, "status": "started"})
    started = time.perf_counter()
    spec = specs.get(call.name)
    fallback_used = None
    images: list[ToolImage] = []
    if call.error:
        content, is_error, attempts = f"Tool {call.name} was not called: {call.error}", True, 0
        told = content
    elif spec is None:
        content, is_error, attempts = f"Tool {call.name} failed: there is no tool of that name", True, 0
        told = content
    else:
        try:
            outcome = await _attempts(run, spec, call.arguments, catalog)
        except asyncio.CancelledError:
            await _abandoned(run, call, started)
            raise
        content, is_error, attempts, images = outcome.content, outcome.is_error, outcome.attempts, outcome.images
        told = outcome.told if outcome.told is not None else content
        fallback = specs.get(spec.fallback) if spec.fallback and spec.fallback != spec.name else None
        if is_error and spec.fallback and outcome.may_have_written:
            note = f"\nIts fallback {spec.fallback} was not tried: the call may have run, and it changes things."
            content, told = content + note, told + note
        elif is_error and spec.fallback and fallback is None:
            note = f"\nIts fallback {spec.fallback} is not available now."
            content, told = content + note, told + note
        elif is_error and fallback is not None:
            fallback_used = fallback.name
            tries = f"{attempts} tries" if attempts > 1 else "one try"
            await run.think("executor", f"{call.name} failed after {tries}; trying its fallback {fallback.name}",
                            tool=call.name, fallback=fallback.name)
            await rec.emit(EventKind.PROGRESS, {"tool": call.name, "status": "fallback", "fallback": fallback.name,
                                                "error": content.splitlines()[0][:300]})
            try:
                second = await _attempts(run, fallback, call.arguments, catalog)
            except asyncio.CancelledError:
                await _abandoned(run, call, started)
                raise
            attempts += second.attempts
            if second.is_error:
                content = f"{content}\nFallback {fallback.name} failed too: {second.content}"
                told = f"{told}\nFallback {fallback.name} failed too: {second.told if second.told is not None else second.content}"
            else:
                content, is_error = f"(answered by the fallback tool {fallback.name})\n{second.content}", False
                told, images = content, second.images
    duration = (time.perf_counter() - started) * 1000
    content = _truncate(content, MAX_RESULT_CHARS)
    shown = await run.keep_images(images) if images else []  # the user sees them beside the answer
    await rec.emit(EventKind.TOOL_RESULT, {"id": call.id, "name": call.name, "content": _truncate(content, EVENT_RESULT_CHARS),
                                           "is_error": is_error, "duration_ms": round(duration, 1), "attempts": attempts,
                                           **({"fallback": fallback_used} if fallback_used else {}),
                                           **({"images": shown} if shown else {})})
    status = {"tool": call.name, "status": "failed" if is_error else "finished", "duration_ms": round(duration, 1)}
    if is_error:
        status["error"] = content.splitlines()[0][:300]
    await rec.emit(EventKind.PROGRESS, status)
    # The model (and so the user it answers) gets ``told``: an MCP server's failure in plain words;
    # the run's events, which the admins see, keep the whole of it.
    return ExecutedCall(call=call, content=_truncate(told, MAX_RESULT_CHARS), is_error=is_error, duration_ms=duration,
                        attempts=attempts, fallback=fallback_used)


async def _abandoned(run: Run, call: PlannedCall, started: float) -> None:
    """The run was cancelled while ``call`` ran: its result says it was abandoned (its late answer is dropped)."""
    duration = round((time.perf_counter() - started) * 1000, 1)
    await run.recorder.emit(EventKind.TOOL_RESULT, {"id": call.id, "name": call.name, "is_error": True,
                                                    "abandoned": True, "duration_ms": duration,
                                                    "content": f"Tool {call.name} was abandoned: the run was cancelled"})
    await run.recorder.emit(EventKind.PROGRESS, {"tool": call.name, "status": "abandoned", "duration_ms": duration})


def _context(run: Run) -> ToolContext:
    if run.tool_context is not None:
        return run.tool_context
    msg = run.msg
    return ToolContext(bot_id=msg.bot_id, user_id=msg.author_id, user_name=msg.author_name, channel_id=msg.channel_id,
                       guild_id=msg.guild_id, message_id=msg.discord_message_id,
                       platform="test_chat" if msg.platform != "discord" else "discord")


@dataclass
class _Outcome:
    content: str
    is_error: bool
    attempts: int
    may_have_written: bool = False  # failed after it may have run, and the tool writes
    told: str | None = None  # what the model is told, when not ``content``
    images: list[ToolImage] = field(default_factory=list)  # what the tool showed (for the user)


def backoff_seconds(attempt: int) -> float:
    """The wait after failed try number ``attempt`` (1-based): doubling, capped at ``RETRY_BACKOFF_MAX``."""
    return min(RETRY_BACKOFF_MAX, RETRY_BACKOFF_SECONDS * 2 ** (attempt - 1))


async def _attempts(run: Run, spec: ToolSpec, arguments: dict[str, Any], catalog: ToolCatalog) -> _Outcome:
    """Call ``spec``, trying transient faults again (see the module's rules)."""
    timeout = float(spec.timeout_seconds or run.tool_timeout)
    context = _context(run)
    attempt = 0
    while True:
        attempt += 1
        try:
            result: ToolResult = await asyncio.wait_for(
                catalog.call_tool(spec.name, arguments, context=context, timeout=timeout), timeout + TIMEOUT_GRACE_SECONDS)
        except TimeoutError:
            error = ToolError(f"no answer within {timeout:g} s (timed out)", may_have_run=True)
        except ToolError as exc:
            error = exc
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # No traceback: its message may hold the call's arguments (conversation content).
            logger.warning("Tool %s raised %s", spec.name, type(exc).__name__)
            return _Outcome(f"Tool {spec.name} failed: {type(exc).__name__}: {exc}", True, attempt)
        else:
            if not result.is_error:
                return _Outcome(result.content, False, attempt, images=list(result.images))
            error = ToolError(result.content, transient=result.transient)
        unsafe = error.may_have_run and spec.writes and not spec.idempotent
        if error.transient and not unsafe and attempt < MAX_ATTEMPTS:
            await _backoff(run, spec, attempt, str(error))
            continue
        told = f"Tool {spec.name} failed: {error.told or error}"
        suffix = ""
        if error.transient and attempt > 1:
            suffix = f" (after {attempt} tries)"
        elif unsafe and attempt < MAX_ATTEMPTS:
            suffix = " (not sent again: it may have run, and it changes things)"
        return _Outcome(f"Tool {spec.name} failed: {error}{suffix}", True, attempt, may_have_written=unsafe,
                        told=told + suffix)


async def _backoff(run: Run, spec: ToolSpec, attempt: int, reason: str) -> None:
    wait = backoff_seconds(attempt)
    await run.recorder.emit(EventKind.PROGRESS, {"tool": spec.name, "status": "retrying", "attempt": attempt + 1,
                                                 "of": MAX_ATTEMPTS, "wait_seconds": wait,
                                                 "error": reason.splitlines()[0][:200] if reason else ""})
    await asyncio.sleep(wait)
