"""Provider instances, cached per (event loop, provider, base URL, API key, timeout).

A bot process reuses one HTTP connection pool per LLM server for all its messages.
Clients are tied to the event loop that created them (aiohttp sessions are), hence the
per-loop cache; they are closed when their loop shuts down.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import weakref
from collections.abc import AsyncGenerator

from grobot.core.errors import ValidationError
from grobot.core.llm.anthropic import AnthropicProvider
from grobot.core.llm.base import LLMProvider
from grobot.core.llm.dialects import DIALECTS
from grobot.core.llm.gemini import GeminiProvider
from grobot.core.llm.llamacpp import LlamaCppProvider
from grobot.core.llm.ollama import OllamaProvider
from grobot.core.llm.openai_compat import OpenAICompatProvider

logger = logging.getLogger(__name__)

PROVIDER_CLASSES: dict[str, type[LLMProvider]] = {
    "ollama": OllamaProvider,
    "openai": OpenAICompatProvider,
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
    "llamacpp": LlamaCppProvider,
    **DIALECTS,  # mistral, xai, deepseek, groq, openrouter
}

_cache: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopProviders] = weakref.WeakKeyDictionary()


class _LoopProviders(dict[tuple[str, str, str, float], LLMProvider]):
    """The providers of one event loop, closed when that loop shuts down.

    ``asyncio.run`` (and every ``asyncio.Runner``) closes the async generators still open
    before it closes the loop (``loop.shutdown_asyncgens``); one parked generator per loop
    closes the providers then, so no connection pool outlives its loop unclosed.
    """

    def __init__(self) -> None:
        super().__init__()
        self._closer = self._close_at_shutdown()
        try:  # run it to its ``yield``: registered with the running loop, parked there
            self._closer.asend(None).send(None)
        except StopIteration:
            pass

    async def _close_at_shutdown(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await self.close()

    async def close(self) -> None:
        for instance in list(self.values()):
            try:
                await instance.aclose()
            except Exception:  # closing is best effort
                logger.debug("Closing %s failed", instance.describe(), exc_info=True)
        self.clear()


def default_timeout() -> float:
    """Seconds an LLM call may stay silent (``GROBOT_LLM_TIMEOUT_SECONDS``, default 120)."""
    from grobot.core.settings import get_settings

    return get_settings().llm_timeout_seconds


def get_provider(provider: str, base_url: str, api_key: str | None = None, *, timeout: float | None = None) -> LLMProvider:
    """The shared client of this event loop for one server and key."""
    cls = PROVIDER_CLASSES.get(provider)
    if cls is None:
        raise ValidationError(f"unknown LLM provider {provider!r}; one of: {', '.join(PROVIDER_CLASSES)}")
    timeout = timeout or default_timeout()
    loop = asyncio.get_running_loop()
    key_hash = hashlib.sha256(api_key.encode()).hexdigest() if api_key else ""
    key = (provider, base_url, key_hash, timeout)
    per_loop = _cache.get(loop)
    if per_loop is None:
        per_loop = _cache[loop] = _LoopProviders()
    instance = per_loop.get(key)
    if instance is None:
        instance = per_loop[key] = cls(base_url, api_key, timeout=timeout)
    return instance


async def close_all() -> None:
    """Close the clients of the running loop now (they are also closed when the loop shuts down)."""
    per_loop = _cache.pop(asyncio.get_running_loop(), None)
    if per_loop is not None:
        await per_loop.close()
