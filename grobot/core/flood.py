"""Flood control of one bot (not the daily usage limits): a per-user cooldown, a cap on concurrent runs,
rate-limited notices."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)


class Cooldowns:
    """At most one accepted message per user per ``seconds``; a notice at most once per window."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[str, float] = {}
        self._noticed: dict[str, float] = {}

    def remaining(self, user_id: str, seconds: float, *, start: bool = True) -> float:
        """Seconds the user still has to wait (0: the message is accepted and, with ``start``, the
        window starts; without it the caller starts it with :meth:`start` once the message is taken)."""
        now = self._clock()
        if seconds <= 0:
            return 0.0
        last = self._last.get(user_id)
        if last is not None and now - last < seconds:
            return seconds - (now - last)
        if start:
            self.start(user_id, seconds)
        return 0.0

    def start(self, user_id: str, seconds: float) -> float | None:
        """The user's window starts now (a message of theirs was taken); returns when it started (None: no
        cooldown), for :meth:`release`."""
        if seconds <= 0:
            return None
        now = self._clock()
        self._last[user_id] = now
        if len(self._last) > 10_000:
            self._prune(now, seconds)
        return now

    def release(self, user_id: str, started: float) -> None:
        """Forget the window that started at ``started`` (a message whose answer failed), unless a newer one
        has started since."""
        if self._last.get(user_id) == started:
            del self._last[user_id]

    def should_notice(self, user_id: str, seconds: float) -> bool:
        """True once per cooldown window for a user whose message was dropped."""
        now = self._clock()
        last = self._noticed.get(user_id)
        if last is not None and now - last < max(seconds, 1.0):
            return False
        self._noticed[user_id] = now
        return True

    def _prune(self, now: float, seconds: float) -> None:
        for key in [k for k, t in self._last.items() if now - t >= seconds]:
            del self._last[key]


class NoticeGate:
    """At most one notice per user per ``seconds`` for the same reason (a daily limit, say)."""

    def __init__(self, seconds: float = 3600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._sent: dict[tuple[str, str], float] = {}

    def allow(self, user_id: str, reason: str) -> bool:
        """True (and the window starts) when this user has not been told ``reason`` in the last window."""
        now = self._clock()
        key = (user_id, reason)
        last = self._sent.get(key)
        if last is not None and now - last < self.seconds:
            return False
        if len(self._sent) > 10_000:
            self._sent = {k: t for k, t in self._sent.items() if now - t < self.seconds}
        self._sent[key] = now
        return True


class RunLimiter:
    """A cap on the runs of one bot in flight; what is over the cap is dropped, not queued."""

    def __init__(self) -> None:
        self.active = 0

    def try_acquire(self, cap: int) -> bool:
        if self.active >= max(1, cap):
            return False
        self.active += 1
        return True

    def release(self) -> None:
        self.active = max(0, self.active - 1)


COOLDOWN_NOTICE = "Slow down a little: please wait {seconds:.0f} s before your next message."
BUSY_NOTICE = "I'm busy with other messages right now; please try again in a moment."
