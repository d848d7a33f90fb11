"""The named OpenAI-compatible services, each with what its dialect needs.

- Mistral accepts only tool-call ids of 9 letters and digits (``call_…`` ids are refused):
  every id GroBot sends is mapped to one, the same id always to the same one.
- DeepSeek refuses ``response_format`` ``json_schema``: structured answers ask for
  ``json_object`` (the prompts say which JSON to give).
- OpenRouter answers 404 "No endpoints found that support tool use" for a model that cannot
  call tools: that is said as such, not as a missing model.
- xAI and Groq speak the OpenAI API as it is (Groq below ``/openai/v1``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from typing import Any

from grobot.core.llm import errors
from grobot.core.llm.base import ChatRequest, StreamChunk
from grobot.core.llm.openai_compat import OpenAICompatProvider
from grobot.core.llm.providers import ENTRIES

_MISTRAL_ID = re.compile(r"^[A-Za-z0-9]{9}$")
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def mistral_call_id(call_id: str) -> str:
    """``call_id`` as Mistral accepts it: 9 letters and digits (kept when it already is)."""
    if _MISTRAL_ID.match(call_id or ""):
        return call_id
    number = int.from_bytes(hashlib.sha256((call_id or "").encode()).digest()[:8], "big")
    chars = []
    for _ in range(9):
        number, rest = divmod(number, len(_ALPHABET))
        chars.append(_ALPHABET[rest])
    return "".join(chars)


class MistralProvider(OpenAICompatProvider):
    name = "mistral"
    default_base_url = ENTRIES["mistral"].base_url

    def _body(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        body = super()._body(request, stream=stream)
        for message in body["messages"]:
            if message.get("tool_calls"):
                message["tool_calls"] = [{**call, "id": mistral_call_id(str(call.get("id") or ""))}
                                         for call in message["tool_calls"]]
            if message.get("tool_call_id"):
                message["tool_call_id"] = mistral_call_id(str(message["tool_call_id"]))
        return body


class XAIProvider(OpenAICompatProvider):
    name = "xai"
    default_base_url = ENTRIES["xai"].base_url


class DeepSeekProvider(OpenAICompatProvider):
    name = "deepseek"
    default_base_url = ENTRIES["deepseek"].base_url
    initial_schema_mode = "json_object"


class GroqProvider(OpenAICompatProvider):
    name = "groq"
    default_base_url = ENTRIES["groq"].base_url


class OpenRouterProvider(OpenAICompatProvider):
    name = "openrouter"
    default_base_url = ENTRIES["openrouter"].base_url

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        try:
            async for chunk in super().stream(request):
                yield chunk
        except errors.ModelNotFound as exc:
            if request.tools and "tool use" in str(exc).lower():
                raise errors.BadRequest(
                    f"no OpenRouter endpoint of model {request.model!r} can call tools: use the chain agent mode, "
                    "or a model that can call tools", provider=self.name, url=self.base_url) from None
            raise


DIALECTS: dict[str, type[OpenAICompatProvider]] = {
    cls.name: cls for cls in (MistralProvider, XAIProvider, DeepSeekProvider, GroqProvider, OpenRouterProvider)
}
