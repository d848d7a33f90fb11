"""Ollama's chat API (``/api/chat``, streamed JSON lines).

Chat calls go over the shared aiohttp client of the LLM layer (:mod:`http_client`): the
official ``ollama`` client validates every streamed line with pydantic over httpx, which
costs about four times the CPU per call. The ``ollama`` client still lists the models.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from grobot.core.llm import errors
from grobot.core.llm.base import ChatRequest, LLMProvider, StreamChunk, ToolCall, Usage, new_call_id, parse_arguments
from grobot.core.llm.http_client import LLMHttpClient, iter_lines, loads
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "http://localhost:11434"


def normalize_host(host: str) -> str:
    """``OLLAMA_HOST`` as Ollama itself reads it: ``localhost:11434``, ``0.0.0.0`` or a full URL.

    Without a scheme it is ``http://``, and without a port then 11434.
    """
    host = (host or "").strip().rstrip("/")
    if not host:
        return DEFAULT_BASE_URL
    if "://" in host:
        return host
    hostport, _, path = host.partition("/")
    if hostport.startswith(":"):
        hostport = "127.0.0.1" + hostport
    if not urlsplit(f"http://{hostport}").port:
        hostport += ":11434"
    return f"http://{hostport}" + (f"/{path}" if path else "")


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


def _tool_calls(message: dict[str, Any]) -> list[ToolCall]:
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        args = parse_arguments(fn.get("arguments"))
        args = args if isinstance(args, dict) else {}
        calls.append(ToolCall(name=str(fn.get("name") or ""), arguments=args, id=new_call_id(), raw_arguments=json.dumps(args)))
    return calls


class OllamaProvider(LLMProvider):
    name = "ollama"

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 120.0) -> None:
        super().__init__(normalize_host(base_url), api_key, timeout=timeout)
        api_key = api_key or get_settings().ollama_api_key  # like the official client (Ollama's cloud)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = LLMHttpClient(self.base_url, self._headers, timeout, provider=self.name)

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model, "messages": to_ollama_messages(request.messages), "stream": True}
        options: dict[str, Any] = {}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.context_window:
            options["num_ctx"] = request.context_window
        if request.max_tokens:
            options["num_predict"] = request.max_tokens
        if request.sampling is not None:
            options.update(request.sampling.ollama_options())
        if options:
            body["options"] = options
        if request.tools:
            body["tools"] = request.tools
        if request.schema is not None:
            body["format"] = request.schema
        return body

    def _stream_error(self, text: str, request: ChatRequest) -> errors.LLMError:
        """An ``{"error": ...}`` line inside the stream."""
        if errors.looks_like_context_error(text):
            return errors.ContextTooLong(f"the prompt is too long for model {request.model!r} ({errors.one_line(text, 200)})",
                                         provider=self.name, url=self.base_url)
        return errors.ServerError(f"ollama at {self.base_url} failed: {errors.one_line(text, 200)}",
                                  provider=self.name, url=self.base_url)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        final: StreamChunk | None = None
        async with self._client.stream("/api/chat", self._body(request), timeout=request.timeout,
                                       model=request.model) as response:
            async for line in iter_lines(response):
                if not line.strip():
                    continue
                try:
                    part = loads(line)
                except ValueError:
                    raise errors.ServerError(f"ollama at {self.base_url} sent a line that is not JSON: "
                                             f"{errors.one_line(line, 80)}", provider=self.name, url=self.base_url) from None
                if not isinstance(part, dict):
                    continue
                if part.get("error"):
                    raise self._stream_error(str(part["error"]), request)
                message = part.get("message") or {}
                text = str(message.get("content") or "")
                calls = _tool_calls(message)
                if part.get("done"):
                    prompt, completion = part.get("prompt_eval_count"), part.get("eval_count")
                    usage = None if prompt is None and completion is None else Usage(int(prompt or 0), int(completion or 0))
                    final = StreamChunk(text=text, tool_calls=calls, done=True, usage=usage, finish_reason=part.get("done_reason"))
                    continue  # read to the end of the body so the connection is reused
                if text or calls:
                    yield StreamChunk(text=text, tool_calls=calls)
        if final is None:
            raise errors.ended_early(self.name, self.base_url)
        yield final

    async def list_models(self) -> list[str]:
        import httpx  # the official client: only here, so bot processes never load it
        import ollama

        client = ollama.AsyncClient(host=self.base_url, headers=self._headers or None, timeout=15.0)
        try:
            response = await client.list()
        except ollama.ResponseError as exc:
            from grobot.core.llm.http_errors import from_status

            raise from_status(exc.status_code, json.dumps({"error": str(exc.error)}), {}, provider=self.name,
                              url=self.base_url, model="") from None
        except (ConnectionError, httpx.ConnectError):
            raise errors.ServerUnavailable(f"cannot reach the ollama server at {self.base_url} (is it running?)",
                                           provider=self.name, url=self.base_url) from None
        except httpx.HTTPError as exc:
            raise errors.ServerError(f"ollama at {self.base_url}: {type(exc).__name__}: {errors.one_line(str(exc), 150)}",
                                     provider=self.name, url=self.base_url) from None
        finally:
            await client.close()
        return sorted(m.model for m in response.models if m.model)

    async def aclose(self) -> None:
        await self._client.aclose()
