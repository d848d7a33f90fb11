"""What a supervisor runs by: its timings (:class:`SupervisorConfig`), its restart backoff, and
what it knows of each bot it runs (:class:`Slot`)."""

from __future__ import annotations

import signal
from collections.abc import Mapping
from dataclasses import dataclass, fields

from bot_worker.spawn import BotHandle
from grobot.core.settings import Settings, WorkerSettings


@dataclass(frozen=True)
class SupervisorConfig(WorkerSettings):
    """Timings of the supervisor: the worker's settings (:class:`~grobot.core.settings.WorkerSettings`,
    one list of fields and defaults) and the database poll period; short values in tests."""

    poll_seconds: float = 2.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SupervisorConfig:
        """Read afresh (``env``: instead of the process environment), through :class:`Settings`."""
        settings = Settings.from_env(env)
        worker = settings.worker
        return cls(poll_seconds=settings.poll_seconds, **{f.name: getattr(worker, f.name) for f in fields(worker)})

    @property
    def fence_after(self) -> float:
        """Seconds without a renewal after which our bots are stopped (before the lease can pass)."""
        return max(self.lease_seconds - self.stop_grace_seconds - 1.0 - self.poll_seconds, self.lease_seconds / 3)


def next_backoff(current: float | None, *, ran_for: float, config: SupervisorConfig) -> float:
    """The wait before restarting a crashed bot: 1 s doubling to 5 min, reset after a healthy run."""
    if current is None or ran_for >= config.healthy_reset:
        return config.backoff_initial
    return min(current * 2, config.backoff_max)


UNREACHABLE_ERROR = "cannot reach Discord (network, DNS or proxy: see the bot's logs)"


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the bot process was killed ({name})"
    return f"the bot process exited with code {code}"


@dataclass
class Slot:
    """What the supervisor knows of one bot it runs (or ran)."""

    bot_id: int
    proc: BotHandle | None = None
    revision: int = 0
    started_at: float = 0.0
    stopping: bool = False
    stop_reason: str = ""
    kill_at: float = 0.0
    backoff: float | None = None
    next_start: float = 0.0
    failures: int = 0

    @property
    def running(self) -> bool:
        return self.proc is not None
