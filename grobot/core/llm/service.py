"""One LLM call as the chain makes it: the context window, retries, fallback model, accounting.

Retries: 429 waits for ``Retry-After`` (else exponential backoff); a timeout is retried
once; a prompt too long for the model is trimmed and retried; an empty answer is retried
once at a higher temperature. 401/403 and an unreachable server fail at once. A fallback
model is used only where configured, and always announced (``on_notice`` and the log).

A server that ignores a call's output cap (``max_tokens``) and streams on and on is cut off:
past :func:`overrun_limit` the stream is closed and the answer ends as one that reached its
cap, with a warning in the log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from grobot.core.llm import errors
from grobot.core.llm.base import CallRecord, ChatRequest, ChatResponse, StreamChunk, ToolCall, Usage
from grobot.core.llm.context_window import CHARS_PER_TOKEN, estimate_tokens, messages_tokens, prompt_room, trim_history
from grobot.core.llm.registry import get_provider
from grobot.core.llm.sampling import for_call

logger = logging.getLogger(__name__)

MAX_RATE_LIMIT_RETRIES = 4
RETRY_BASE_SECONDS = 1.0  # first backoff of a 429 without Retry-After; doubles each time
MAX_RETRY_WAIT_SECONDS = 60.0
MAX_CONTEXT_TRIMS = 2
EMPTY_RETRY_TEMPERATURE_STEP = 0.4
# An answer streamed past its cap by this factor (in estimated tokens, plus the slack) is cut off:
# wide enough for a tokenizer that counts fewer tokens than the estimate, never unbounded.
OVERRUN_FACTOR = 2
OVERRUN_SLACK_TOKENS = 64

TextCallback = Callable[[str], Awaitable[None]]
NoticeCallback = Callable[[str], Awaitable[None]]
StopCheck = Callable[[], bool]


@dataclass
class LLMResult:
    text: str
    tool_calls: list[ToolCall]
    usage: Usage
    provider: str
    model: str
    records: list[CallRecord] = field(default_factory=list)
    fallback_used: bool = False
    trimmed: int = 0  # history messages dropped to fit the window

    @property
    def llm_seconds(self) -> float:
        return sum(r.latency_ms for r in self.records) / 1000


class LLMCallFailed(errors.LLMError):
    """The call failed for good; ``records`` holds every attempt (for accounting)."""

    def __init__(self, cause: errors.LLMError, records: list[CallRecord]) -> None:
        super().__init__(str(cause), provider=cause.provider, url=cause.url)
        self.cause = cause
        self.records = records


async def call_llm(
    llm: Any,
    messages: list[dict[str, Any]],
    *,
    role: str,
    tools: list[dict[str, Any]] | None = None,
    schema: dict[str, Any] | None = None,
    on_text: TextCallback | None = None,
    on_notice: NoticeCallback | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    stop: StopCheck | None = None,
    records: list[CallRecord] | None = None,
) -> LLMResult:
    """Call the model of ``llm`` (an :class:`~grobot.core.services.llm_settings.EffectiveLLM`).

    ``on_text`` receives the answer as it streams; ``stop`` (asked after each piece) ends it early
    when it says so: the stream is closed and the answer is what came so far (not a capped one).
    The role's sampling (:func:`grobot.core.llm.sampling.for_call`) goes with the request.
    Raises :class:`LLMCallFailed`. ``records``: the list each attempt is added to as it starts (by
    default a new one), so that a caller whose task is cancelled (a stopped run) still has the
    attempts to account for, the one cut short included.
    """
    records = records if records is not None else []
    if getattr(llm, "unavailable", None):
        raise LLMCallFailed(errors.ServerUnavailable(llm.unavailable, provider=llm.provider), records)
    models = [llm.model] + ([llm.fallback_model] if llm.fallback_model and llm.fallback_model != llm.model else [])
    for index, model in enumerate(models):
        try:
            result = await _call_model(llm, model, messages, role=role, tools=tools, schema=schema, on_text=on_text,
                                       temperature=temperature, max_tokens=max_tokens, records=records, stop=stop)
            result.fallback_used = index > 0
            return result
        except errors.LLMError as exc:
            last = index == len(models) - 1
            if last or not exc.fallback_helps or getattr(exc, "_emitted", False):
                raise LLMCallFailed(exc, records) from None
            notice = f"{role}: model {model!r} failed ({exc}); using the fallback model {models[index + 1]!r}"
            logger.warning("Bot LLM %s", notice)
            if on_notice is not None:
                await on_notice(notice)
    raise AssertionError("unreachable")  # pragma: no cover


async def _call_model(
    llm: Any,
    model: str,
    messages: list[dict[str, Any]],
    *,
    role: str,
    tools: list[dict[str, Any]] | None,
    schema: dict[str, Any] | None,
    on_text: TextCallback | None,
    temperature: float | None,
    max_tokens: int | None,
    records: list[CallRecord],
    stop: StopCheck | None = None,
) -> LLMResult:
    provider = get_provider(llm.provider, llm.base_url, llm.api_key)
    room = prompt_room(llm.context_window, reserve=max_tokens)
    prompt = trim_history(messages, room)
    trimmed = len(messages) - len(prompt)
    temp = llm.temperature if temperature is None else temperature
    sampling = for_call(role, llm)
    rate_limited = timeouts = trims = 0
    empty_retried = False
    while True:
        request = ChatRequest(model=model, messages=prompt, tools=tools, schema=schema, temperature=temp,
                              context_window=llm.context_window, max_tokens=max_tokens, sampling=sampling)
        record = CallRecord(role=role, provider=llm.provider, model=model)
        records.append(record)
        emitted = False

        async def relay(text: str) -> None:
            nonlocal emitted
            emitted = True
            if on_text is not None:
                await on_text(text)

        try:
            response = await _once(provider, request, record, relay if on_text else None, stop)
        except errors.LLMError as exc:
            record.error = errors.one_line(str(exc), 500)
            if emitted:  # part of the answer already reached the user: no silent restart
                exc._emitted = True  # type: ignore[attr-defined]
                raise
            if isinstance(exc, errors.RateLimited) and rate_limited < MAX_RATE_LIMIT_RETRIES:
                rate_limited += 1
                wait = exc.retry_after if exc.retry_after is not None else RETRY_BASE_SECONDS * 2 ** (rate_limited - 1)
                wait = min(wait, MAX_RETRY_WAIT_SECONDS)
                logger.info("LLM %s rate limited; retry %d in %.2f s", model, rate_limited, wait)
                await asyncio.sleep(wait)
                continue
            if isinstance(exc, errors.LLMTimeout) and timeouts < 1:
                timeouts += 1
                logger.info("LLM %s timed out; one more try", model)
                continue
            if isinstance(exc, errors.ContextTooLong) and trims < MAX_CONTEXT_TRIMS and len(prompt) > 2:
                trims += 1
                smaller = trim_history(prompt, max(64, messages_tokens(prompt) // 2))
                if len(smaller) < len(prompt):
                    trimmed += len(prompt) - len(smaller)
                    prompt = smaller
                    logger.info("LLM %s: prompt too long; trimmed to %d messages", model, len(prompt))
                    continue
            raise
        if response.empty and not empty_retried:
            empty_retried = True
            record.error = "empty answer"
            temp = min(2.0, (temp or 0.0) + EMPTY_RETRY_TEMPERATURE_STEP)
            logger.info("LLM %s gave an empty answer; retrying at temperature %.1f", model, temp)
            continue
        if response.empty:
            record.error = "empty answer"
            raise errors.EmptyAnswer(f"model {model!r} at {llm.base_url} gave an empty answer twice",
                                     provider=llm.provider, url=llm.base_url)
        return LLMResult(text=response.text, tool_calls=response.tool_calls, usage=response.usage, provider=llm.provider,
                         model=model, records=records, trimmed=trimmed)


async def _once(provider: Any, request: ChatRequest, record: CallRecord, on_text: TextCallback | None,
                stop: StopCheck | None = None) -> ChatResponse:
    """One HTTP call, streamed; fills ``record`` with tokens and timings."""
    started = time.perf_counter()
    response = ChatResponse(model=request.model)
    usage: Usage | None = None
    meter = _OutputMeter(overrun_limit(request.max_tokens))
    try:
        async with aclosing(provider.stream(request)) as stream:  # closed at once when cut off
            async for chunk in stream:
                if record.ttft_ms is None and (chunk.text or chunk.tool_calls):
                    record.ttft_ms = (time.perf_counter() - started) * 1000
                if chunk.text:
                    response.text += chunk.text
                    if on_text is not None:
                        try:
                            await on_text(chunk.text)
                        except errors.StreamStopped:  # the caller wants no more: the answer ends here
                            response.finish_reason = "stopped"
                            break
                response.tool_calls.extend(chunk.tool_calls)
                if chunk.done:
                    usage = chunk.usage
                    response.finish_reason = chunk.finish_reason
                if meter.past_limit(chunk):
                    _cut_off(provider, request, response)
                    break
                if stop is not None and chunk.text and stop():
                    response.finish_reason = "stop"  # the caller has what it needs (the rest would be thrown away)
                    break
    except asyncio.CancelledError:  # stopped: what the model read and wrote so far is counted, estimated
        if not record.tokens_in:
            record.tokens_in = messages_tokens(request.messages)
            record.tokens_out = _estimated_output(response, request)
            record.estimated, record.error = True, "stopped"
        raise
    finally:
        record.latency_ms = (time.perf_counter() - started) * 1000
    if usage is None or (usage.tokens_in == 0 and usage.tokens_out == 0):
        usage = Usage(messages_tokens(request.messages), _estimated_output(response, request), estimated=True)
    response.usage = usage
    record.tokens_in, record.tokens_out, record.estimated = usage.tokens_in, usage.tokens_out, usage.estimated
    record.capped = response.finish_reason in ("length", "max_tokens", "MAX_TOKENS")
    return response


@dataclass
class _OutputMeter:
    """The output a call has streamed (text, and tool-call arguments that no text shows) against its limit."""

    limit: int | None  # estimated tokens (None: no limit)
    chars: int = 0

    def past_limit(self, chunk: StreamChunk) -> bool:
        self.chars += len(chunk.text) + chunk.tool_chars
        return self.limit is not None and self.chars > self.limit * CHARS_PER_TOKEN


def _estimated_output(response: ChatResponse, request: ChatRequest) -> int:
    """The output tokens of an answer the server did not count (ended early, or a server without usage):
    estimated from its text, but never past the call's cap, which the server kept unless it was cut off
    for ignoring it (the estimate runs high on text of long words: a kept cap is the better bound)."""
    estimate = estimate_tokens(response.text)
    if request.max_tokens and response.finish_reason != "length":
        return min(estimate, request.max_tokens)
    return estimate


def overrun_limit(max_tokens: int | None) -> int | None:
    """Estimated output tokens past which a streamed answer is cut off (None: the call has no cap)."""
    return max_tokens * OVERRUN_FACTOR + OVERRUN_SLACK_TOKENS if max_tokens else None


def _cut_off(provider: Any, request: ChatRequest, response: ChatResponse) -> None:
    """The server streams past the call's output cap: the answer ends here, as one that reached its cap."""
    logger.warning("LLM %s on %s ignored the output cap of %d tokens: its answer was cut off",
                   request.model, provider.describe(), request.max_tokens or 0)
    response.finish_reason = "length"
