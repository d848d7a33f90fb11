"""OpenAI-compatible chat completions (OpenAI, Mistral, Groq, DeepSeek, xAI,
OpenRouter, vLLM, LM Studio, llama.cpp server)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from grobot.core.llm import errors
from grobot.core.llm.base import ChatRequest, LLMProvider, StreamChunk, ToolCall, Usage, new_call_id, parse_arguments
from grobot.core.llm.http_client import LLMHttpClient, iter_lines, raise_for_status
from grobot.core.llm.providers import ENTRIES
from grobot.core.llm.sampling import Sampling
from grobot.core.llm.sse import sse_events

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = ENTRIES["openai"].base_url
_ALLOWED_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only the keys the API knows; ``name`` only where OpenAI accepts it."""
    result = []
    for message in messages:
        item = {k: message[k] for k in _ALLOWED_KEYS if message.get(k) is not None}
        if item.get("role") == "assistant" and item.get("tool_calls") and not item.get("content"):
            item["content"] = None
        if item.get("role") not in ("user", "tool"):
            item.pop("name", None)
        item.setdefault("content", "")
        result.append(item)
    return result


class OpenAICompatProvider(LLMProvider):
    name = "openai"
    default_base_url = DEFAULT_BASE_URL
    initial_schema_mode = "json_schema"
    keepalive = True  # reuse connections (a server that drops idle ones without notice sets False)

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 120.0) -> None:
        super().__init__(base_url or self.default_base_url, api_key, timeout=timeout)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = LLMHttpClient(self.base_url, headers, timeout, provider=self.name, keepalive=self.keepalive)
        # Servers that refused ``response_format`` json_schema get json_object, then nothing.
        self._schema_mode = self.initial_schema_mode
        self._usage_option = True

    def _body(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model, "messages": to_openai_messages(request.messages), "stream": stream}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens:
            body["max_tokens"] = request.max_tokens
        if request.sampling is not None:
            body.update(self.sampling_fields(request.sampling))
        if request.tools:
            body["tools"] = request.tools
        if request.schema is not None and self._schema_mode != "none":
            if self._schema_mode == "json_schema":
                body["response_format"] = {"type": "json_schema", "json_schema": {"name": "answer", "schema": request.schema}}
            else:
                body["response_format"] = {"type": "json_object"}
        if stream and self._usage_option:
            body["stream_options"] = {"include_usage": True}
        return body

    def sampling_fields(self, sampling: Sampling) -> dict[str, Any]:
        """The request's fields for ``sampling`` (the OpenAI API's own: a service refuses others)."""
        return sampling.openai_fields()

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        for attempt in range(3):
            body = self._body(request, stream=True)
            async with self._client.stream("/chat/completions", body, timeout=request.timeout, model=request.model,
                                           check=False) as response:
                if response.status == 400 and attempt < 2:
                    text = (await response.read()).decode(errors="replace")
                    if self._downgrade(text, body):
                        continue
                await raise_for_status(response, provider=self.name, url=self.base_url, model=request.model)
                async for chunk in self._read_stream(response, idle_timeout=request.timeout or self.timeout):
                    yield chunk
                return

    def _downgrade(self, text: str, body: dict[str, Any]) -> bool:
        """After a 400 that names an option this server lacks, drop that option; True: try again."""
        text = text.lower()
        if "response_format" in body and ("response_format" in text or "json_schema" in text):
            self._schema_mode = "json_object" if self._schema_mode == "json_schema" else "none"
            logger.info("%s does not accept this response_format; now using %s", self.base_url, self._schema_mode)
            return True
        if "stream_options" in body and "stream_options" in text:
            self._usage_option = False
            return True
        return False

    async def _read_stream(self, response: aiohttp.ClientResponse, *,
                           idle_timeout: float | None = None) -> AsyncIterator[StreamChunk]:
        calls: dict[int, dict[str, Any]] = {}
        usage: Usage | None = None
        finish: str | None = None
        said_done: list[bool] = []
        async for _event, data in sse_events(iter_lines(response), on_done=lambda: said_done.append(True),
                                             idle_timeout=idle_timeout):
            if not isinstance(data, dict):
                continue
            if data.get("error"):
                detail = data["error"].get("message") if isinstance(data["error"], dict) else data["error"]
                if errors.looks_like_context_error(str(detail)):
                    raise errors.ContextTooLong(f"the prompt is too long ({errors.one_line(str(detail), 200)})", provider=self.name,
                                                url=self.base_url)
                raise errors.ServerError(f"{self.name} at {self.base_url} failed: {errors.one_line(str(detail), 200)}", provider=self.name,
                                         url=self.base_url)
            if data.get("usage"):
                u = data["usage"]
                usage = Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
            for choice in data.get("choices") or []:
                delta = choice.get("delta") or {}
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
                for tc in delta.get("tool_calls") or []:
                    slot = calls.setdefault(int(tc.get("index", len(calls))), {"id": None, "name": "", "arguments": ""})
                    if tc.get("id"):
                        slot["id"] = tc["id"]
                    fn = tc.get("function") or {}
                    if fn.get("name"):
                        slot["name"] += fn["name"]
                    if fn.get("arguments"):
                        args = fn["arguments"]
                        piece = args if isinstance(args, str) else json.dumps(args)
                        slot["arguments"] += piece
                        yield StreamChunk(tool_chars=len(piece))
                text = delta.get("content")
                if text:
                    yield StreamChunk(text=text)
        if finish is None and not said_done:
            raise errors.ended_early(self.name, self.base_url)
        tool_calls = [
            ToolCall(name=c["name"], arguments=parse_arguments(c["arguments"]), id=c["id"] or new_call_id(), raw_arguments=c["arguments"])
            for _, c in sorted(calls.items())
        ]
        yield StreamChunk(tool_calls=tool_calls, done=True, usage=usage, finish_reason=finish)

    async def list_models(self) -> list[str]:
        data = await self._client.get_json("/models")
        return sorted(str(m.get("id")) for m in data.get("data", []) if m.get("id"))

    async def aclose(self) -> None:
        await self._client.aclose()
