"""An answer streamed into Discord messages: edits at most once per interval per message.

Pure asyncio, no Discord: the bot process passes callbacks that send and edit. The first
text goes out at once (a new message), later text edits it at most once per ``interval``,
overflow beyond one message continues in new messages (split with
:func:`bot_worker.text.split_message`), and :meth:`ReplyStreamer.finish` sends the
completing edits immediately, without waiting for the edit timer. A final text shorter than
the draft (an answer cut at its cap ends at its last full sentence) deletes the messages it no
longer fills.

A send or edit that fails (the platform refused it, or could not be reached; its client has
retried what can be retried) ends the delivery: nothing more is sent, ``on_failure`` is told
once, and :meth:`ReplyStreamer.feed` and :meth:`ReplyStreamer.finish` never raise for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bot_worker.text import DISCORD_LIMIT, split_message

logger = logging.getLogger(__name__)

SendFn = Callable[[str, int], Awaitable[Any]]  # (text, part index) -> message handle
EditFn = Callable[[Any, str], Awaitable[None]]
DeleteFn = Callable[[Any], Awaitable[None]]
FailureFn = Callable[[Exception], None]


@dataclass
class _Part:
    handle: Any
    content: str
    edited_at: float


class ReplyStreamer:
    """Mirror a growing text into Discord messages, throttled per message."""

    def __init__(self, send: SendFn, edit: EditFn, *, interval: float = 1.0, limit: int = DISCORD_LIMIT,
                 clock: Callable[[], float] = time.monotonic, delete: DeleteFn | None = None,
                 on_failure: FailureFn | None = None) -> None:
        self._send = send
        self._edit = edit
        self._delete = delete
        self._on_failure = on_failure
        self.failure: Exception | None = None  # the send or edit that ended the delivery
        self.interval = interval
        self.limit = limit
        self._clock = clock
        self.text = ""
        self.parts: list[_Part] = []
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self._sync_task: asyncio.Task[None] | None = None
        self._finished = False
        self.edits = 0

    @property
    def started(self) -> bool:
        return bool(self.parts)

    def feed(self, piece: str) -> None:
        """Add streamed text; sending happens in the background."""
        if self._finished or not piece:
            return
        self.text += piece
        if self._sync_task is None or self._sync_task.done():
            self._sync_task = asyncio.get_running_loop().create_task(self._sync(force=False))

    async def finish(self, final_text: str | None = None) -> None:
        """Send the final text now: remaining edits go out immediately."""
        self._stop_timer()
        if final_text is not None:
            self.text = final_text
        await self._sync(force=True)

    async def withdraw(self) -> None:
        """Take back what was sent (the answer is withheld): every message of it is deleted."""
        self._stop_timer()
        async with self._lock:
            parts, self.parts = self.parts, []
            self.text = ""
            for part in parts:
                try:
                    if self._delete is not None:
                        await self._delete(part.handle)
                except Exception as exc:  # already gone, or no permission
                    logger.warning("Could not delete a withheld answer's message: %s", exc)

    async def abort(self) -> None:
        """Stop without sending more (pending timers are dropped)."""
        self._stop_timer()

    def fail(self, exc: Exception) -> None:
        """The delivery failed (here, or in a message sent beside the answer): nothing more is
        sent; ``on_failure`` hears of the first failure only."""
        self._stop_timer()
        if self.failure is None:
            self.failure = exc
            if self._on_failure is not None:
                self._on_failure(exc)

    def _stop_timer(self) -> None:
        self._finished = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def _sync(self, *, force: bool) -> None:
        async with self._lock:
            if self.failure is not None:
                return
            try:
                await self._deliver(force=force)
            except Exception as exc:  # refused or unreachable: the answer cannot go on
                self.fail(exc)

    async def _deliver(self, *, force: bool) -> None:
        """Bring the messages in line with the text (under the lock)."""
        if not self.text.strip():
            return
        wanted = split_message(self.text, self.limit)
        next_due: float | None = None
        for index, content in enumerate(wanted):
            now = self._clock()
            if index >= len(self.parts):
                handle = await self._send(content, index)
                self.parts.append(_Part(handle, content, self._clock()))
                continue
            part = self.parts[index]
            if part.content == content:
                continue
            due = part.edited_at + self.interval
            if force or now >= due:
                await self._edit(part.handle, content)
                self.edits += 1
                part.content, part.edited_at = content, self._clock()
            else:
                next_due = due if next_due is None else min(next_due, due)
        if self._finished and self._delete is not None and len(self.parts) > len(wanted):
            extra, self.parts = self.parts[len(wanted):], self.parts[:len(wanted)]
            for part in extra:
                try:
                    await self._delete(part.handle)
                except Exception as exc:  # already gone, or no permission: the text above is right
                    logger.warning("Could not delete a part the final answer no longer fills: %s", exc)
        if next_due is not None and not self._finished and (self._timer is None or self._timer.done()):
            delay = max(0.0, next_due - self._clock())
            self._timer = asyncio.get_running_loop().create_task(self._later(delay))

    async def _later(self, delay: float) -> None:
        await asyncio.sleep(delay)
        if not self._finished:
            self._timer = None
            await self._sync(force=False)
