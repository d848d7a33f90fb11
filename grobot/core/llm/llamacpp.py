"""The embedded llama.cpp provider: llama.cpp's own server, run by the bot worker per GGUF file.

It speaks the OpenAI-compatible API of ``llama-server`` (streaming, usage, JSON-schema
output through grammars, tool calls through the model's Jinja chat template). The base URL
is the server the supervisor runs for the model file (``grobot.core.llm.embedded``). A
request with tools to a model whose chat template cannot call tools fails with a clear
error instead of an answer that silently ignores the tools.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from grobot.core.llm import errors
from grobot.core.llm.base import ChatRequest, StreamChunk
from grobot.core.llm.embedded import display_name
from grobot.core.llm.http_client import LLMHttpClient
from grobot.core.llm.openai_compat import OpenAICompatProvider
from grobot.core.llm.sampling import Sampling

logger = logging.getLogger(__name__)


class LlamaCppProvider(OpenAICompatProvider):
    name = "llamacpp"
    keepalive = False  # llama.cpp's server closes idle connections without notice

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 120.0) -> None:
        if not base_url:
            raise errors.ServerUnavailable("the embedded model server is not running: is the bot worker running?",
                                           provider=self.name)
        super().__init__(base_url.rstrip("/") + "/v1", api_key, timeout=timeout)
        self._server_url = base_url.rstrip("/")
        self._supports_tools: bool | None = None
        self._slots: int | None = None
        self._root = LLMHttpClient(self._server_url, {}, timeout, provider=self.name, keepalive=False)

    def sampling_fields(self, sampling: Sampling) -> dict[str, Any]:
        """llama.cpp's own sampling fields (its repetition penalty, DRY, min-p)."""
        return sampling.llamacpp_fields()

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        if request.tools and not await self.supports_tools():
            raise errors.BadRequest(
                f"the chat template of {display_name(request.model)} has no tool support: use the chain agent "
                "mode, or a model whose template can call tools", provider=self.name, url=self._server_url)
        async for chunk in super().stream(request):
            yield chunk

    async def supports_tools(self) -> bool:
        """What llama.cpp's ``/props`` says of the chat template (asked once per server)."""
        if self._supports_tools is None:
            try:
                props = await self._root.get_json("/props")
            except errors.LLMError:
                return True  # unknown: let the server decide
            caps = props.get("chat_template_caps") if isinstance(props, dict) else None
            self._supports_tools = bool(caps.get("supports_tools", True)) if isinstance(caps, dict) else True
        return self._supports_tools

    async def parallel_slots(self) -> int:
        """The server's slots (llama.cpp's ``/props`` ``total_slots``): more requests wait, silent, in its queue.
        Asked once per server; 1 when it cannot be told."""
        if self._slots is None:
            try:
                props = await self._root.get_json("/props")
            except errors.LLMError:
                return 1  # unknown for now: one at a time never overloads it
            slots = props.get("total_slots") if isinstance(props, dict) else None
            self._slots = max(1, int(slots)) if isinstance(slots, int) else 1
        return self._slots

    async def aclose(self) -> None:
        await super().aclose()
        await self._root.aclose()

    def describe(self) -> str:
        return f"embedded llama.cpp server at {self._server_url}"
