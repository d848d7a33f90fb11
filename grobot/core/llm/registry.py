"""Provider instances, cached per (event loop, provider, base URL, API key, timeout).

A bot process reuses one HTTP connection pool per LLM server for all its messages.
Clients are tied to the event loop that created them (httpx pools are), hence the
per-loop cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import weakref

from grobot.core.errors import ValidationError
from grobot.core.llm.anthropic import AnthropicProvider
from grobot.core.llm.base import LLMProvider
from grobot.core.llm.gemini import GeminiProvider
from grobot.core.llm.ollama import OllamaProvider
from grobot.core.llm.openai_compat import OpenAICompatProvider

logger = logging.getLogger(__name__)

PROVIDER_CLASSES: dict[str, type[LLMProvider]] = {
    "ollama": OllamaProvider,
    "openai": OpenAICompatProvider,
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
}

_cache: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, str, float], LLMProvider]]" = weakref.WeakKeyDictionary()


def default_timeout() -> float:
    """Seconds an LLM call may stay silent (``GROBOT_LLM_TIMEOUT_SECONDS``, default 120)."""
    try:
        return max(0.05, float(os.environ.get("GROBOT_LLM_TIMEOUT_SECONDS", "120")))
    except ValueError:
        return 120.0


def get_provider(provider: str, base_url: str, api_key: str | None = None, *, timeout: float | None = None) -> LLMProvider:
    """The shared client of this event loop for one server and key."""
    cls = PROVIDER_CLASSES.get(provider)
    if cls is None:
        raise ValidationError(f"unknown LLM provider {provider!r}; one of: {', '.join(PROVIDER_CLASSES)}")
    timeout = timeout or default_timeout()
    loop = asyncio.get_running_loop()
    key_hash = hashlib.sha256(api_key.encode()).hexdigest() if api_key else ""
    key = (provider, base_url, key_hash, timeout)
    per_loop = _cache.setdefault(loop, {})
    instance = per_loop.get(key)
    if instance is None:
        instance = per_loop[key] = cls(base_url, api_key, timeout=timeout)
    return instance


async def close_all() -> None:
    """Close the clients of the running loop (at process shutdown)."""
    loop = asyncio.get_running_loop()
    for instance in list(_cache.pop(loop, {}).values()):
        try:
            await instance.aclose()
        except Exception:  # closing is best effort
            logger.debug("Closing %s failed", instance.describe(), exc_info=True)
