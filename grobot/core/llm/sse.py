"""Server-sent events: the ``data:`` payloads of a streamed HTTP answer."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from grobot.core.llm.http_client import loads

logger = logging.getLogger(__name__)


async def sse_events(lines: AsyncIterator[str], *, on_done: Callable[[], None] | None = None,
                     idle_timeout: float | None = None) -> AsyncIterator[tuple[str | None, Any]]:
    """``(event name, parsed JSON data)`` for each event of a body's ``lines``; ``data: [DONE]`` is
    not an event (``on_done`` is called for it: the OpenAI API's end of a complete answer).

    Comments (``: keep-alive``) keep a connection open but are no answer: after ``idle_timeout``
    seconds of comments only, ``TimeoutError`` (the HTTP client's read timeout never fires).
    """
    event: str | None = None
    data_lines: list[str] = []
    last_data = time.monotonic()
    async for line in lines:
        if line == "":
            if data_lines:
                payload = "\n".join(data_lines)
                data_lines = []
                if payload.strip() == "[DONE]":
                    if on_done is not None:
                        on_done()
                    continue  # read on to the end so the connection goes back to the pool
                try:
                    yield event, loads(payload)
                except ValueError:
                    logger.debug("Ignored a non-JSON server-sent event")
            event = None
            continue
        if line.startswith(":"):
            if idle_timeout is not None and time.monotonic() - last_data > idle_timeout:
                raise TimeoutError(f"only keep-alive comments for {idle_timeout:g} s")
            continue
        last_data = time.monotonic()
        key, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if key == "event":
            event = value
        elif key == "data":
            data_lines.append(value)
    if data_lines:
        payload = "\n".join(data_lines)
        if payload.strip() == "[DONE]":
            if on_done is not None:
                on_done()
            return
        try:
            yield event, loads(payload)
        except ValueError:
            pass
