"""The web app's line to the supervisors' Test Chat runners: the ``tester_chat`` group of their links.

A Test Chat message is stored ``pending`` (the database stays the record: a message sent while
no worker runs is answered when one starts). Then, instead of waiting for a supervisor's poll,
the web app *follows* the run at a runner, asking it to claim the message first: the runner
streams the run's events as it emits them, so the first words reach the page
milliseconds after the worker has them. *Cancel* stops a run. Each supervisor's link is
advertised in its one ``setting`` row (:mod:`grobot.core.link_client`); the web app's token is
the link's admin token (:mod:`grobot.core.link_scope`).

The runner is the page's one source for a live run: following it replays the run's events from its
start (each with its index, to resume from), then streams the new ones. Everything here fails soft:
with no runner reachable the page reads the run's status until it ends, then shows the stored turn.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from grobot.core import link_client
from grobot.core.link_client import AdminLink, LinkError
from grobot.core.link_scope import TESTER_CHAT

logger = logging.getLogger(__name__)

# A refused connection on 127.0.0.1 fails at once; this only bites when a loop stalls (a busy
# worker under load), which must not cut the page off a live run it streams.
CONNECT_TIMEOUT = 3.0
CALL_TIMEOUT = 5.0  # connecting included


@dataclass(frozen=True)
class Runner:
    """A live supervisor's Test Chat runner: its link's address."""

    supervisor_id: str
    url: str


def live_runners(*, session: Session) -> list[Runner]:
    """The runners of live supervisors on this host, the most recently seen first."""
    return [Runner(str(v.get("supervisor_id") or ""), str(v["url"])) for v in link_client.ROWS.live(session=session)
            if v.get("url")]


def _link(runner: Runner) -> AdminLink:
    return AdminLink(runner.url, timeout=CALL_TIMEOUT)


async def wake(runner: Runner) -> list[int]:
    """Ask ``runner`` to claim pending messages now; returns the ids of the runs it holds, those it
    just claimed included ([] when unreachable)."""
    try:
        status, data = await _link(runner).ask(TESTER_CHAT, "wake", {}, connect_timeout=CONNECT_TIMEOUT)
        result = data.get("result") if status == 200 else None
        if not isinstance(result, dict):
            raise ValueError(f"status {status}: {data.get('error')}")
        return sorted({int(i) for i in [*(result.get("claimed") or []), *(result.get("running") or [])]})
    except (ConnectionError, ValueError) as exc:
        logger.debug("Waking the Test Chat runner of %s failed: %s", runner.supervisor_id, exc)
        return []


async def cancel(runner: Runner, run_id: int, reason: str) -> bool:
    """Stop run ``run_id`` if ``runner`` runs it; True when it did."""
    try:
        status, _ = await _link(runner).ask(TESTER_CHAT, "cancel", {"run_id": int(run_id), "reason": reason},
                                            connect_timeout=CONNECT_TIMEOUT)
        return status == 200
    except ConnectionError as exc:
        logger.debug("Cancelling Test Chat run %s failed: %s", run_id, exc)
        return False


@dataclass(frozen=True)
class FeedEvent:
    """One event of a followed run: its index in the run's feed, kind, data and the worker's wall time."""

    index: int
    kind: str
    data: dict[str, Any]
    at: float


class NotHere(Exception):
    """The runner does not run (or no longer holds) that run."""


async def follow(runner: Runner, run_id: int, after: int = -1, *, claim: bool = False) -> AsyncIterator[FeedEvent]:
    """The events of run ``run_id`` with an index above ``after``, as ``runner`` emits them, until the
    run ends (``claim``: the runner claims pending messages first: one round trip from Send to the
    live run). Raises :class:`NotHere` when the runner does not hold the run, ``ConnectionError``
    when the line breaks (the worker stopped). No read timeout (a model may think for minutes): a
    frozen worker's line stays open and silent, and the caller checks the run when it is silent."""
    body = {"run_id": int(run_id), "after": int(after), "claim": claim}
    try:
        async with contextlib.aclosing(_link(runner).stream(TESTER_CHAT, "events", body,
                                                            connect_timeout=CONNECT_TIMEOUT)) as items:
            async for item in items:
                yield FeedEvent(int(item["i"]), str(item["kind"]), dict(item.get("data") or {}),
                                float(item.get("t") or 0.0))
    except LinkError as exc:
        if exc.status == 404:
            raise NotHere(run_id) from None
        raise ConnectionError(f"the Test Chat runner answered {exc.status}: {exc}") from None
