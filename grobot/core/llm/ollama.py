"""Ollama through the official ``ollama`` AsyncClient."""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import ollama

from grobot.core.llm import errors
from grobot.core.llm.base import ChatRequest, LLMProvider, StreamChunk, ToolCall, Usage, new_call_id, parse_arguments
from grobot.core.llm.http_errors import from_status, from_transport

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "http://localhost:11434"
# The Retry-After header of the last 429 seen in this task (the ollama client drops headers).
_retry_after: contextvars.ContextVar[str | None] = contextvars.ContextVar("ollama_retry_after", default=None)


async def _remember_retry_after(response: httpx.Response) -> None:
    if response.status_code == 429:
        _retry_after.set(response.headers.get("retry-after"))


def _image_data(url: str) -> str | None:
    if url.startswith("data:") and "," in url:
        return url.split(",", 1)[1]
    return None


def to_ollama_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-format messages in Ollama's shape (tool call arguments as objects, images apart)."""
    names: dict[str, str] = {}
    result: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content") or ""
        item: dict[str, Any] = {"role": role, "content": ""}
        if isinstance(content, list):
            texts, images = [], []
            for part in content:
                if part.get("type") == "text":
                    texts.append(part.get("text", ""))
                elif part.get("type") == "image_url":
                    data = _image_data((part.get("image_url") or {}).get("url", ""))
                    if data:
                        images.append(data)
            item["content"] = "\n".join(texts)
            if images:
                item["images"] = images
        else:
            item["content"] = str(content)
        if role == "assistant" and message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                fn = call.get("function", {})
                names[call.get("id", "")] = fn.get("name", "")
                args = parse_arguments(fn.get("arguments"))
                calls.append({"function": {"name": fn.get("name", ""), "arguments": args if args is not None else {}}})
            item["tool_calls"] = calls
        if role == "tool":
            name = message.get("name") or names.get(message.get("tool_call_id", ""), "")
            if name:
                item["tool_name"] = name
        result.append(item)
    return result


class OllamaProvider(LLMProvider):
    name = "ollama"

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 120.0) -> None:
        super().__init__(base_url or DEFAULT_BASE_URL, api_key, timeout=timeout)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        self._client = ollama.AsyncClient(
            host=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)),
            event_hooks={"response": [_remember_retry_after]},
        )

    def _error(self, exc: Exception, request: ChatRequest) -> errors.LLMError:
        if isinstance(exc, ollama.ResponseError):
            status = exc.status_code
            text = str(exc.error)
            if status == -1:  # an error line inside the stream
                if errors.looks_like_context_error(text):
                    return errors.ContextTooLong(f"the prompt is too long for model {request.model!r} ({errors.one_line(text, 200)})", provider=self.name, url=self.base_url)
                return errors.ServerError(f"ollama at {self.base_url} failed: {errors.one_line(text, 200)}", provider=self.name, url=self.base_url)
            headers = {"retry-after": _retry_after.get()} if status == 429 else {}
            return from_status(status, json.dumps({"error": text}), headers, provider=self.name, url=self.base_url, model=request.model)
        if isinstance(exc, ConnectionError):
            return errors.ServerUnavailable(f"cannot reach the ollama server at {self.base_url} (is it running?)", provider=self.name, url=self.base_url)
        if isinstance(exc, httpx.HTTPError):
            return from_transport(exc, provider=self.name, url=self.base_url, timeout=request.timeout or self.timeout)
        return errors.ServerError(f"ollama at {self.base_url}: {type(exc).__name__}: {errors.one_line(str(exc), 150)}", provider=self.name, url=self.base_url)

    def _kwargs(self, request: ChatRequest) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.context_window:
            options["num_ctx"] = request.context_window
        if request.max_tokens:
            options["num_predict"] = request.max_tokens
        kwargs: dict[str, Any] = {"model": request.model, "messages": to_ollama_messages(request.messages), "options": options or None}
        if request.tools:
            kwargs["tools"] = request.tools
        if request.schema is not None:
            kwargs["format"] = request.schema
        return kwargs

    async def _chat_stream(self, request: ChatRequest) -> Any:
        """``AsyncClient.chat(stream=True)``, minus its per-message pydantic round trip.

        ``chat()`` validates and re-dumps every history message (~0.1 ms each: 10 ms for a
        100-message history). Our messages are already plain dicts in Ollama's shape, so the
        body goes straight to the client's own request method (same transport, errors and
        response parsing); ``chat()`` is the fallback should that method ever go away.
        """
        kwargs = self._kwargs(request)
        send = getattr(self._client, "_request", None)
        if send is None:  # pragma: no cover - a future client without it
            return await self._client.chat(stream=True, **kwargs)
        body = {k: v for k, v in kwargs.items() if v is not None}
        body["stream"] = True
        return await send(ollama.ChatResponse, "POST", "/api/chat", json=body, stream=True)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        _retry_after.set(None)
        final: StreamChunk | None = None
        try:
            parts = await self._chat_stream(request)
            async for part in parts:
                message = part.message
                calls = [
                    ToolCall(name=c.function.name, arguments=dict(c.function.arguments or {}), id=new_call_id(),
                             raw_arguments=json.dumps(dict(c.function.arguments or {})))
                    for c in (message.tool_calls or [])
                ] if message is not None else []
                text = (message.content or "") if message is not None else ""
                if part.done:
                    usage = Usage(int(part.prompt_eval_count or 0), int(part.eval_count or 0))
                    if part.prompt_eval_count is None and part.eval_count is None:
                        usage = None
                    final = StreamChunk(text=text, tool_calls=calls, done=True, usage=usage, finish_reason=part.done_reason)
                    continue  # read to the end of the body so the connection is reused
                if text or calls:
                    yield StreamChunk(text=text, tool_calls=calls)
            if final is not None:
                yield final
                return
        except errors.LLMError:
            raise
        except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as exc:
            raise self._error(exc, request) from None
        except Exception as exc:  # pydantic validation of an odd answer, broken JSON lines
            raise self._error(exc, request) from None
        raise errors.ServerError(f"ollama at {self.base_url} ended the answer early", provider=self.name, url=self.base_url)

    async def list_models(self) -> list[str]:
        try:
            response = await self._client.list()
        except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as exc:
            raise self._error(exc, ChatRequest(model="", messages=[], timeout=15)) from None
        return sorted(m.model for m in response.models if m.model)

    async def aclose(self) -> None:
        await self._client._client.aclose()
