"""Anthropic Messages API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from grobot.core.llm import errors
from grobot.core.llm.base import ChatRequest, LLMProvider, StreamChunk, ToolCall, Usage, new_call_id, parse_arguments, split_system
from grobot.core.llm.http_client import LLMHttpClient, iter_lines
from grobot.core.llm.sse import sse_events

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
ANSWER_TOOL = "answer"  # structured answers: a forced call of this tool with the schema as input
DEFAULT_MAX_TOKENS = 4096


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        blocks = []
        for part in content:
            if part.get("type") == "text":
                blocks.append({"type": "text", "text": part.get("text", "")})
            elif part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                if url.startswith("data:") and "," in url:
                    head, data = url.split(",", 1)
                    media = head[5:].split(";")[0] or "image/png"
                    blocks.append({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
        return blocks
    return [{"type": "text", "text": str(content or "")}] if content else []


def to_anthropic(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """(system text, messages) in Anthropic's shape; tool results become user ``tool_result`` blocks."""
    system, rest = split_system(messages)
    result: list[dict[str, Any]] = []
    for message in rest:
        role = message.get("role")
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id", ""), "content": str(message.get("content") or "")}
            if result and result[-1]["role"] == "user" and any(b.get("type") == "tool_result" for b in result[-1]["content"]):
                result[-1]["content"].append(block)
            else:
                result.append({"role": "user", "content": [block]})
            continue
        blocks = _content_blocks(message.get("content"))
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                fn = call.get("function", {})
                blocks.append({"type": "tool_use", "id": call.get("id") or new_call_id(), "name": fn.get("name", ""),
                               "input": parse_arguments(fn.get("arguments")) or {}})
        if not blocks:
            blocks = [{"type": "text", "text": "(empty)"}]
        if result and result[-1]["role"] == role and role == "user":
            result[-1]["content"].extend(blocks)  # the API wants alternating roles
        else:
            result.append({"role": "assistant" if role == "assistant" else "user", "content": blocks})
    return system, result


class AnthropicProvider(LLMProvider):
    name = "anthropic"

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 120.0) -> None:
        super().__init__(base_url or DEFAULT_BASE_URL, api_key, timeout=timeout)
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        self._client = LLMHttpClient(self.base_url, headers, timeout, provider=self.name)

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        system, messages = to_anthropic(request.messages)
        body: dict[str, Any] = {"model": request.model, "messages": messages, "stream": True,
                                "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS}
        if system:
            body["system"] = system
        if request.temperature is not None:
            body["temperature"] = min(1.0, request.temperature)
        tools = [
            {"name": t["function"]["name"], "description": t["function"].get("description", ""),
             "input_schema": t["function"].get("parameters") or {"type": "object", "properties": {}}}
            for t in request.tools or []
        ]
        if request.schema is not None:
            tools.append({"name": ANSWER_TOOL, "description": "Give the answer in this structure.", "input_schema": request.schema})
            body["tool_choice"] = {"type": "tool", "name": ANSWER_TOOL}
        if tools:
            body["tools"] = tools
        return body

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        async with self._client.stream("/v1/messages", self._body(request), timeout=request.timeout,
                                       model=request.model) as response:
            async for chunk in self._read(response, structured=request.schema is not None,
                                          idle_timeout=request.timeout or self.timeout):
                yield chunk

    async def _read(self, response: aiohttp.ClientResponse, *, structured: bool,
                    idle_timeout: float | None = None) -> AsyncIterator[StreamChunk]:
        blocks: dict[int, dict[str, Any]] = {}
        tokens_in = tokens_out = 0
        finish = None
        stopped = False
        async for event, data in sse_events(iter_lines(response), idle_timeout=idle_timeout):
            kind = data.get("type") or event
            if kind == "error":
                detail = (data.get("error") or {}).get("message", "unknown error")
                if errors.looks_like_context_error(detail):
                    raise errors.ContextTooLong(f"the prompt is too long ({errors.one_line(detail, 200)})", provider=self.name,
                                                url=self.base_url)
                raise errors.ServerError(f"anthropic at {self.base_url} failed: {errors.one_line(detail, 200)}", provider=self.name,
                                         url=self.base_url)
            if kind == "message_start":
                usage = (data.get("message") or {}).get("usage") or {}
                tokens_in = int(usage.get("input_tokens") or 0)
            elif kind == "content_block_start":
                block = data.get("content_block") or {}
                blocks[int(data.get("index", 0))] = {"type": block.get("type"), "id": block.get("id"), "name": block.get("name"),
                                                     "json": ""}
                if block.get("type") == "text" and block.get("text"):
                    yield StreamChunk(text=block["text"])
            elif kind == "content_block_delta":
                delta = data.get("delta") or {}
                slot = blocks.setdefault(int(data.get("index", 0)), {"type": "text", "json": ""})
                if delta.get("type") == "text_delta" and delta.get("text"):
                    yield StreamChunk(text=delta["text"])
                elif delta.get("type") == "input_json_delta":
                    slot["json"] += delta.get("partial_json", "")
                    yield StreamChunk(tool_chars=len(delta.get("partial_json", "")))
            elif kind == "message_delta":
                usage = data.get("usage") or {}
                tokens_out = int(usage.get("output_tokens") or tokens_out)
                finish = (data.get("delta") or {}).get("stop_reason") or finish
            elif kind == "message_stop":
                stopped = True
        if finish is None and not stopped:
            raise errors.ended_early(self.name, self.base_url)
        calls = []
        for _, block in sorted(blocks.items()):
            if block.get("type") != "tool_use":
                continue
            if structured and block.get("name") == ANSWER_TOOL:
                yield StreamChunk(text=block["json"] or "{}")
                continue
            calls.append(ToolCall(name=block.get("name") or "", arguments=parse_arguments(block["json"] or "{}"),
                                  id=block.get("id") or new_call_id(), raw_arguments=block["json"]))
        yield StreamChunk(tool_calls=calls, done=True, usage=Usage(tokens_in, tokens_out), finish_reason=finish)

    async def list_models(self) -> list[str]:
        data = await self._client.get_json("/v1/models")
        return sorted(m["id"] for m in data.get("data", []) if m.get("id"))

    async def aclose(self) -> None:
        await self._client.aclose()
