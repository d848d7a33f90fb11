"""Google Gemini (generativelanguage API)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from grobot.core.llm import errors
from grobot.core.llm.base import ChatRequest, LLMProvider, StreamChunk, ToolCall, Usage, new_call_id, parse_arguments, split_system
from grobot.core.llm.http_client import LLMHttpClient, iter_lines
from grobot.core.llm.sse import sse_events

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        parts = []
        for part in content:
            if part.get("type") == "text":
                parts.append({"text": part.get("text", "")})
            elif part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                if url.startswith("data:") and "," in url:
                    head, data = url.split(",", 1)
                    parts.append({"inlineData": {"mimeType": head[5:].split(";")[0] or "image/png", "data": data}})
        return parts
    return [{"text": str(content)}] if content else []


def to_gemini(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """(system instruction, contents) in Gemini's shape."""
    system, rest = split_system(messages)
    names: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    for message in rest:
        role = message.get("role")
        if role == "tool":
            name = message.get("name") or names.get(message.get("tool_call_id", ""), "tool")
            part = {"functionResponse": {"name": name, "response": {"content": str(message.get("content") or "")}}}
            if contents and contents[-1]["role"] == "user" and all("functionResponse" in p for p in contents[-1]["parts"]):
                contents[-1]["parts"].append(part)
            else:
                contents.append({"role": "user", "parts": [part]})
            continue
        parts = _parts(message.get("content"))
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                fn = call.get("function", {})
                names[call.get("id", "")] = fn.get("name", "")
                parts.append({"functionCall": {"name": fn.get("name", ""), "args": parse_arguments(fn.get("arguments")) or {}}})
        contents.append({"role": "model" if role == "assistant" else "user", "parts": parts or [{"text": " "}]})
    return system, contents


class GeminiProvider(LLMProvider):
    name = "gemini"

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 120.0) -> None:
        super().__init__(base_url or DEFAULT_BASE_URL, api_key, timeout=timeout)
        headers = {"x-goog-api-key": api_key} if api_key else {}
        self._client = LLMHttpClient(self.base_url, headers, timeout, provider=self.name)

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        system, contents = to_gemini(request.messages)
        body: dict[str, Any] = {"contents": contents}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        config: dict[str, Any] = {}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.max_tokens:
            config["maxOutputTokens"] = request.max_tokens
        if request.schema is not None:
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = request.schema
        if config:
            body["generationConfig"] = config
        if request.tools:
            body["tools"] = [{"functionDeclarations": [
                {"name": t["function"]["name"], "description": t["function"].get("description", ""),
                 "parameters": t["function"].get("parameters") or {"type": "object", "properties": {}}}
                for t in request.tools
            ]}]
        return body

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        path = f"/models/{request.model}:streamGenerateContent"
        async with self._client.stream(path, self._body(request), params={"alt": "sse"}, timeout=request.timeout,
                                       model=request.model) as response:
            usage: Usage | None = None
            calls: list[ToolCall] = []
            finish = None
            async for _event, data in sse_events(iter_lines(response), idle_timeout=request.timeout or self.timeout):
                if data.get("error"):
                    detail = str((data["error"] or {}).get("message", data["error"]))
                    raise errors.ServerError(f"gemini at {self.base_url} failed: {errors.one_line(detail, 200)}", provider=self.name,
                                             url=self.base_url)
                meta = data.get("usageMetadata")
                if meta:
                    usage = Usage(int(meta.get("promptTokenCount") or 0), int(meta.get("candidatesTokenCount") or 0))
                for candidate in data.get("candidates") or []:
                    finish = candidate.get("finishReason") or finish
                    for part in (candidate.get("content") or {}).get("parts") or []:
                        if part.get("text") and not part.get("thought"):
                            yield StreamChunk(text=part["text"])
                        if part.get("functionCall"):
                            fc = part["functionCall"]
                            args = fc.get("args") or {}
                            calls.append(ToolCall(name=fc.get("name", ""), arguments=parse_arguments(args), id=new_call_id(),
                                                  raw_arguments=str(args)))
            if finish is None:
                raise errors.ended_early(self.name, self.base_url)
            yield StreamChunk(tool_calls=calls, done=True, usage=usage, finish_reason=finish)

    async def list_models(self) -> list[str]:
        data = await self._client.get_json("/models")
        names = [str(m.get("name", "")).removeprefix("models/") for m in data.get("models", [])]
        return sorted(n for n in names if n)

    async def aclose(self) -> None:
        await self._client.aclose()
