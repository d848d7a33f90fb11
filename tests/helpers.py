"""Small helpers shared by the tests."""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def make_token(user_id: int) -> str:
    """A token shaped like a real Discord bot token; its first part encodes the bot's user id."""
    first = base64.urlsafe_b64encode(str(user_id).encode()).decode().rstrip("=")
    if len(first) < 18:
        raise ValueError("use a snowflake-sized user id (14+ digits), as Discord does")
    return f"{first}.{secrets.token_urlsafe(5)[:6]}.{secrets.token_urlsafe(27)[:27]}"


Message = str | Callable[[], str]


def _said(message: Message, predicate: object) -> object:
    """What a failed wait names: ``message`` (a callable is called then, to show the state at the deadline)."""
    return (message() if callable(message) else message) or predicate


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.05, message: Message = "") -> T:
    """Poll ``predicate`` until it returns a truthy value or ``timeout`` passes (then fail, naming
    ``message``: a callable is called at the deadline)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s: {_said(message, predicate)}; last={last!r}")
        time.sleep(interval)


async def async_wait_for(
    predicate: Callable[[], Awaitable[T] | T], timeout: float = 10.0, interval: float = 0.05, message: Message = ""
) -> T:
    """The asyncio version of :func:`wait_for` (``predicate`` may be a coroutine function)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s: {_said(message, predicate)}")
        await asyncio.sleep(interval)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie not yet reaped by its parent counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def answered(msg: Any, *, gate: Any = None, sink: Any = None, tools: Any = None, memory: Any = None) -> Any:
    """Answer ``msg`` on the one path of every host (:func:`grobot.core.answering.answer_message`:
    reply rules, limits, flood control, then the chain) with this process's database."""
    from grobot.core.answering import FloodGate, answer_message
    from grobot.core.store.local import local_deps

    deps = local_deps(memory)
    try:
        return await answer_message(msg, deps, gate if gate is not None else FloodGate(), sink=sink, tools=tools)
    finally:
        await deps.aclose()
