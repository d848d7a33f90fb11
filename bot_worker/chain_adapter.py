"""The agent chain as the fleet calls it, with a one-call stand-in while the chain is missing.

``run_chain`` comes from :mod:`grobot.core.agents.chain`. When that module cannot be
imported (an install without it), :func:`single_call_chain` answers with one streamed
call on the bot's output model, so the fleet still works end to end.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from grobot.core.agents.types import ChainResult, Event, EventKind, IncomingMessage

logger = logging.getLogger(__name__)

RunChain = Callable[..., Awaitable[ChainResult]]
_cached: RunChain | None = None


def get_run_chain() -> RunChain:
    """The real chain when it is installed, else the one-call stand-in."""
    global _cached
    if _cached is None:
        try:
            from grobot.core.agents.chain import run_chain
        except ImportError as exc:
            if "grobot.core.agents.chain" not in str(exc) and getattr(exc, "name", "") != "grobot.core.agents.chain":
                raise
            logger.warning("grobot.core.agents.chain is not available: answering with a single LLM call")
            run_chain = single_call_chain
        _cached = run_chain
    return _cached


async def single_call_chain(msg: IncomingMessage, *, sink: Any = None, tools: Any = None, memory: Any = None,
                            skip_gatekeeper: bool = False, preloaded: Any = None) -> ChainResult:
    """One streamed call on the output model with the bot's personality (no tools, no history; ``preloaded`` unused)."""
    import httpx

    from grobot.core.db import session_scope
    from grobot.core.models import Bot
    from grobot.core.services.llm_settings import effective_llm

    async def emit(kind: EventKind, data: dict[str, Any]) -> None:
        if sink is not None:
            await sink(Event(kind, data))

    with session_scope(readonly=True) as session:
        bot = session.get(Bot, msg.bot_id)
        llm = effective_llm(session=session, category="output", bot_id=msg.bot_id)
        personality = bot.personality if bot else ""
    messages = [{"role": "system", "content": personality or "You are a helpful assistant."},
                {"role": "user", "content": msg.content}]
    text = ""
    try:
        async with httpx.AsyncClient(timeout=120) as client:
            if llm.provider == "ollama":
                body = {"model": llm.model, "messages": messages, "stream": True}
                async with client.stream("POST", llm.base_url.rstrip("/") + "/api/chat", json=body) as resp:
                    resp.raise_for_status()
                    async for line in resp.aiter_lines():
                        if not line.strip():
                            continue
                        data = json.loads(line)
                        if data.get("error"):
                            raise RuntimeError(data["error"])
                        piece = (data.get("message") or {}).get("content") or ""
                        if piece:
                            text += piece
                            await emit(EventKind.TOKEN, {"text": piece})
            else:
                headers = {"Authorization": f"Bearer {llm.api_key}"} if llm.api_key else {}
                body = {"model": llm.model, "messages": messages, "stream": True}
                async with client.stream("POST", llm.base_url.rstrip("/") + "/chat/completions", json=body,
                                         headers=headers) as resp:
                    resp.raise_for_status()
                    async for line in resp.aiter_lines():
                        if not line.startswith("data:") or line.strip() == "data: [DONE]":
                            continue
                        data = json.loads(line[5:])
                        for choice in data.get("choices") or []:
                            piece = (choice.get("delta") or {}).get("content") or ""
                            if piece:
                                text += piece
                                await emit(EventKind.TOKEN, {"text": piece})
    except Exception as exc:
        message = f"the language model failed: {type(exc).__name__}: {str(exc)[:200]}"
        await emit(EventKind.ERROR, {"message": message})
        return ChainResult(replied=True, text=text, run_id=msg.run_id, error=message, llm_calls=1)
    await emit(EventKind.DONE, {"text": text})
    return ChainResult(replied=True, text=text, run_id=msg.run_id, llm_calls=1)
