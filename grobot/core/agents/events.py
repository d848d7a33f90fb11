"""The events of one run: passed to the caller's sink at once, stored in ``agent_event`` in batches
(through the process's :class:`~grobot.core.agents.run_store.RunStore`).

Answer text is batched by time (the first words at once, then about every 60 ms) so that a Discord reply can be edited
as it grows without one event per token; a run ends with exactly one ``done`` or ``error``.

The last write (the answer, the accounting, the run's status) is tried again while the store is
unavailable (a database locked or away for a while), for up to ``END_RETRY_SECONDS``, before
the run ends with "the answer could not be saved".
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from grobot.core.agents.run_store import RunEnd, RunStore, RunWrite, UserMessageIn
from grobot.core.agents.types import FINAL_KINDS, Event, EventKind, EventSink
from grobot.core.errors import error_line
from grobot.core.moderation import AnswerGuard

logger = logging.getLogger(__name__)

TOKEN_INTERVAL_SECONDS = 0.06
TOKEN_MAX_CHARS = 200
DB_FLUSH_SECONDS = 0.25
END_RETRY_SECONDS = 120.0  # how long the last write is tried again while the store is unavailable
END_RETRY_FIRST_WAIT = 0.5  # doubling, at most END_RETRY_MAX_WAIT
END_RETRY_MAX_WAIT = 10.0


class AnswerWithheld(Exception):
    """The answer broke a moderation rule while it streamed: the run goes straight to its end, where
    the answer is replaced (:meth:`RunRecorder.moderate_end`)."""


class RunRecorder:
    """Emits the events of one run and stores them once the run has an id.

    With a :attr:`guard` (the bot moderates its answers), answer text reaches the sink only once
    the guard has checked it; after a match, nothing more does (:attr:`withheld`).
    """

    def __init__(self, sink: EventSink | None, store: RunStore) -> None:
        self.sink = sink
        self.store = store
        self.run_id: int | None = None
        self.conversation_id: int | None = None
        self._user_message: UserMessageIn | None = None
        self._failed = False  # a write failed: the next ones may repeat one that was stored after all
        self.finished: Event | None = None
        self.text = ""  # every answer token so far
        self.first_token_at: float | None = None
        self._seq = 0
        self._unsaved: list[tuple[str, dict[str, Any]]] = []
        self._tokens: list[str] = []
        self._last_token_flush = time.monotonic()
        self._timer: asyncio.TimerHandle | None = None
        self._sink_lock = asyncio.Lock()
        self._db_lock = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None
        self._closed = False
        self.guard: AnswerGuard | None = None
        self.withheld = False  # the answer broke a moderation rule: no more of it goes out
        self._released = False  # some answer text went to the sink

    # -- emitting ---------------------------------------------------------------------------
    async def emit(self, kind: EventKind, data: dict[str, Any] | None = None) -> None:
        """A non-final event (final ones go through :meth:`finish`)."""
        if kind in FINAL_KINDS:
            raise ValueError("use finish() for done/error")
        if self.finished is not None:
            return
        await self.flush_tokens()
        self._unsaved.append((kind.value, data or {}))
        await self._to_sink(Event(kind, data or {}))

    async def token(self, text: str) -> None:
        """Answer text as it streams; sent on in batches."""
        if not text or self.finished is not None or self.withheld:
            return
        if self.first_token_at is None:
            self.first_token_at = time.perf_counter()
        self.text += text
        if self.guard is not None:
            text = self.guard.feed(text)  # what is checked may go out; the word being written waits
            if self.guard.hit is not None:
                self.withheld = True
                self._tokens.clear()  # checked but not sent yet: the whole answer is replaced anyway
                return
            if not text:
                return
        first = not self._released
        self._released = True
        self._tokens.append(text)
        now = time.monotonic()
        # The first words go out at once (the reply appears as early as possible); the rest in batches.
        if first or now - self._last_token_flush >= TOKEN_INTERVAL_SECONDS or sum(map(len, self._tokens)) >= TOKEN_MAX_CHARS:
            await self.flush_tokens()
        elif self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(TOKEN_INTERVAL_SECONDS, self._timer_fired)

    def moderate_end(self, final: str) -> str | None:
        """The whole answer ``final`` checked by the guard: the rule it broke (nothing more of it goes
        out), or None (the end held back goes out with the last batch). None without a guard."""
        if self.guard is None:
            return None
        rest = self.guard.rest(final)
        if self.guard.hit is not None:
            self.withheld = True
            self._tokens.clear()
            return self.guard.hit
        if rest:
            self._tokens.append(rest)
        return None

    @property
    def shown_text(self) -> str:
        """The answer as far as it went out (a guard holds back its unchecked end)."""
        if self.guard is None:
            return self.text
        return "" if self.withheld else self.guard.text[:self.guard.released]

    def revise_end(self, streamed: str, final: str) -> None:
        """The answer's last streamed part ``streamed`` ends as ``final`` (an answer cut at its output cap,
        ended cleanly): the done event carries the revised text, and a Discord reply is edited to it."""
        if streamed and self.text.endswith(streamed):
            self.text = self.text[: len(self.text) - len(streamed)] + final

    def _timer_fired(self) -> None:
        self._timer = None
        if self._tokens and self.finished is None:
            asyncio.ensure_future(self.flush_tokens())

    async def flush_tokens(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._tokens:
            return
        text = "".join(self._tokens)
        self._tokens = []
        self._last_token_flush = time.monotonic()
        if self._unsaved and self._unsaved[-1][0] == EventKind.TOKEN.value:
            self._unsaved[-1][1]["text"] += text  # one stored row per batch of batches
        else:
            self._unsaved.append((EventKind.TOKEN.value, {"text": text}))
        await self._to_sink(Event(EventKind.TOKEN, {"text": text}))

    async def _to_sink(self, event: Event) -> None:
        if self.sink is None:
            return
        async with self._sink_lock:
            try:
                await self.sink(event)
            except Exception:  # a broken sink must not break the run
                logger.exception("The event sink failed on a %s event", event.kind.value)

    # -- storing ----------------------------------------------------------------------------
    def attach(self, run_id: int | None = None, *, conversation_id: int | None = None,
               user_message: UserMessageIn | None = None) -> None:
        """Start storing: with the run's ``run_id``, or with the ``user_message`` to store first
        (in the first write, together with the events; its id becomes the run's id)."""
        self.run_id = run_id
        self.conversation_id = conversation_id
        self._user_message = user_message
        self._flusher = asyncio.create_task(self._flush_loop())

    def discard(self) -> None:
        """Forget the unsaved events (a run the Gatekeeper silenced)."""
        self._unsaved.clear()

    async def _flush_loop(self) -> None:
        try:
            while not self._closed:
                await asyncio.sleep(DB_FLUSH_SECONDS)
                if self._unsaved and not self._closed:
                    # Shielded: finish() cancels this loop, and a write half done in its thread
                    # must end (and release the lock) before the final write starts.
                    await asyncio.shield(self._save(None))
        except asyncio.CancelledError:
            pass

    @property
    def storing(self) -> bool:
        return self.run_id is not None or self._user_message is not None

    async def _save(self, end: RunEnd | None) -> None:
        async with self._db_lock:
            pending, self._unsaved = self._unsaved, []
            seq = self._seq
            events = []
            for kind, data in pending:
                seq += 1
                events.append((seq, kind, dict(data)))
            write = RunWrite(run_id=self.run_id, conversation_id=self.conversation_id,
                             user_message=self._user_message if self.run_id is None else None, events=events, end=end,
                             retry=self._failed)
            try:
                self.conversation_id, self.run_id = await self.store.write_run(write)
                self._seq, self._user_message = seq, None
            except Exception:  # not stored, or (a timeout) stored unbeknown to us: the next write says so
                self._failed = True
                self._unsaved = pending + self._unsaved  # try again (with the next batch)
                if end is not None:
                    raise
                logger.exception("Storing %d events of run %s failed", len(pending), self.run_id)

    async def _save_end(self, end: RunEnd | None) -> None:
        """The last write, tried again while the store is unavailable (for up to ``END_RETRY_SECONDS``)."""
        deadline = time.monotonic() + END_RETRY_SECONDS
        wait = END_RETRY_FIRST_WAIT
        while True:
            try:
                await self._save(end)
                return
            except ConnectionError as exc:  # StoreUnavailable, or a supervisor that did not answer
                if time.monotonic() + wait > deadline:
                    raise
                logger.warning("Storing the end of run %s failed (%s); trying again in %.1f s", self.run_id, exc, wait)
            await asyncio.sleep(wait)
            wait = min(wait * 2, END_RETRY_MAX_WAIT)

    async def finish(self, kind: EventKind, data: dict[str, Any], *, end: RunEnd | None = None) -> Event:
        """End the run with ``done`` or ``error``: store everything (with ``end``, in one
        transaction), then tell the sink. Only the first call counts."""
        if kind not in FINAL_KINDS:
            raise ValueError("finish() takes done or error")
        if self.finished is not None:
            return self.finished
        await self.flush_tokens()
        event = Event(kind, data)
        self.finished = event
        self._closed = True
        if self._flusher is not None:
            self._flusher.cancel()
        try:
            if self.storing:
                self._unsaved.append((kind.value, data))
                await self._save_end(end)
            elif end is not None and end.records:
                await self.store.save_calls(end.bot_id, None, end.records)
        except Exception as exc:
            logger.exception("Storing the end of run %s failed", self.run_id)
            event = Event(EventKind.ERROR, {"message": f"the answer could not be saved: {error_line(exc, 270)}"})
            self.finished = event
            if self.storing:
                # Whatever else was lost, the stored run must still end: one more try, the error alone.
                self._unsaved = [(EventKind.ERROR.value, event.data)]
                await self._save(None)
        await self._to_sink(event)
        return event

