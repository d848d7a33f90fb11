"""The one interface every LLM provider implements, and the types it speaks.

Messages are OpenAI-format dicts everywhere in GroBot (``system``, ``user``,
``assistant`` with ``tool_calls``, ``tool`` with ``tool_call_id``); each provider
converts them to its own wire format. Tools are OpenAI ``tools`` entries.
"""

from __future__ import annotations

import abc
import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from grobot.core.llm.sampling import Sampling

logger = logging.getLogger(__name__)


@dataclass
class Usage:
    tokens_in: int = 0
    tokens_out: int = 0
    estimated: bool = False  # True when the provider did not report usage

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.tokens_in + other.tokens_in, self.tokens_out + other.tokens_out, self.estimated or other.estimated)

    def as_dict(self) -> dict[str, Any]:
        return {"tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "estimated": self.estimated}


@dataclass
class ToolCall:
    """A tool call the model asked for. ``arguments`` is None when ``raw_arguments`` is not valid JSON."""

    name: str
    arguments: dict[str, Any] | None
    id: str = field(default_factory=lambda: new_call_id())
    raw_arguments: str = ""

    def openai(self) -> dict[str, Any]:
        args = self.raw_arguments if self.arguments is None else json.dumps(self.arguments)
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": args}}


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def split_system(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """``(system text, the other messages)``: for APIs that take the system prompt apart."""
    system = [str(m.get("content") or "") for m in messages if m.get("role") == "system"]
    return "\n\n".join(s for s in system if s), [m for m in messages if m.get("role") != "system"]


def parse_arguments(raw: Any) -> dict[str, Any] | None:
    """Arguments as a dict: dicts pass, JSON strings are parsed, anything else is None."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None


@dataclass
class ChatRequest:
    """One chat call: messages, optional tools and optional JSON schema for the answer."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    schema: dict[str, Any] | None = None  # the answer must be JSON following this schema
    temperature: float | None = None
    context_window: int | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    sampling: Sampling | None = None  # repetition penalties and the like (the role's, see grobot.core.llm.sampling)


@dataclass
class StreamChunk:
    """A piece of a streamed answer; the last one has ``done`` and the usage."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    done: bool = False
    usage: Usage | None = None
    finish_reason: str | None = None
    tool_chars: int = 0  # characters of tool-call arguments that came with this piece (the answer grows unseen)


@dataclass
class ChatResponse:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None

    @property
    def empty(self) -> bool:
        return not self.text.strip() and not self.tool_calls


class LLMProvider(abc.ABC):
    """A connection to one LLM server (one base URL and API key). Clients are reused."""

    name: str = "?"

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    @abc.abstractmethod
    def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        """Stream an answer: text pieces, then tool calls, then a ``done`` chunk with usage."""

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """The whole answer at once (default: collect the stream)."""
        response = ChatResponse(model=request.model)
        async for chunk in self.stream(request):
            response.text += chunk.text
            response.tool_calls.extend(chunk.tool_calls)
            if chunk.done:
                response.usage = chunk.usage or Usage()
                response.finish_reason = chunk.finish_reason
        return response

    @abc.abstractmethod
    async def list_models(self) -> list[str]:
        """The model names the server offers."""

    async def parallel_slots(self) -> int | None:
        """How many requests the server answers at once (None: as many as it is sent; a service scales)."""
        return None

    async def aclose(self) -> None:  # noqa: B027 - a no-op default: most providers hold nothing to close
        """Close the connections."""

    def describe(self) -> str:
        return f"{self.name} server at {self.base_url}"


@dataclass
class CallRecord:
    """One attempt at one LLM call, as ``llm_call`` stores it."""

    role: str
    provider: str
    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    ttft_ms: float | None = None
    latency_ms: float = 0.0
    error: str = ""
    estimated: bool = False
    capped: bool = False  # the answer stopped at its output cap (finish reason "length")
