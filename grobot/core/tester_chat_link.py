"""The web app's line to the supervisors' Test Chat runners (HTTP on 127.0.0.1).

A Test Chat message is stored ``pending`` (the database stays the record: a message sent while
no worker runs is answered when one starts). Then, instead of waiting for a supervisor's poll,
the web app *follows* the run at a runner, asking it to claim the message first: the runner
streams the run's events as it emits them (JSON lines), so the first words reach the page
milliseconds after the worker has them. *Cancel* stops a run. Each supervisor advertises
its runner in its one ``setting`` row, beside its link (:mod:`grobot.core.link_client`); the
bearer token is the supervisor link's admin token (:mod:`grobot.core.link_scope`).

The runner is the page's one source for a live run: following it replays the run's events from its
start (each with its index, to resume from), then streams the new ones. Everything here fails soft:
with no runner reachable the page reads the run's status until it ends, then shows the stored turn.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from sqlmodel import Session

from grobot.core import link_client

logger = logging.getLogger(__name__)

API = "/v1/test-chat"
# A refused connection on 127.0.0.1 fails at once; this only bites when a loop stalls (a busy
# worker under load), which must not cut the page off a live run it streams.
CONNECT_TIMEOUT = 3.0
CALL_TIMEOUT = 2.0


@dataclass(frozen=True)
class Runner:
    """A live supervisor's Test Chat runner."""

    supervisor_id: str
    url: str


def live_runners(*, session: Session) -> list[Runner]:
    """The runners of live supervisors on this host, the most recently seen first."""
    return [Runner(str(v.get("supervisor_id") or ""), str(v["test_chat"])) for v in link_client.ROWS.live(session=session)
            if v.get("test_chat")]


def _headers() -> dict[str, str]:
    from grobot.core.link_scope import admin_token  # the supervisor link's admin token

    return {"Authorization": f"Bearer {admin_token()}"}


def _timeout(read: float | None = CALL_TIMEOUT) -> httpx.Timeout:
    return httpx.Timeout(read, connect=CONNECT_TIMEOUT)


async def wake(runner: Runner) -> list[int]:
    """Ask ``runner`` to claim pending messages now; returns the ids of the runs it holds, those it
    just claimed included ([] when unreachable)."""
    try:
        async with httpx.AsyncClient(timeout=_timeout(), headers=_headers(), trust_env=False) as client:
            response = await client.post(f"{runner.url}{API}/wake")
            response.raise_for_status()
            data = response.json()
            return sorted({int(i) for i in [*(data.get("claimed") or []), *(data.get("running") or [])]})
    except (httpx.HTTPError, ValueError) as exc:
        logger.debug("Waking the Test Chat runner of %s failed: %s", runner.supervisor_id, type(exc).__name__)
        return []


async def cancel(runner: Runner, run_id: int, reason: str) -> bool:
    """Stop run ``run_id`` if ``runner`` runs it; True when it did."""
    try:
        async with httpx.AsyncClient(timeout=_timeout(), headers=_headers(), trust_env=False) as client:
            response = await client.post(f"{runner.url}{API}/runs/{int(run_id)}/cancel", json={"reason": reason})
            return response.status_code == 200
    except httpx.HTTPError as exc:
        logger.debug("Cancelling Test Chat run %s failed: %s", run_id, type(exc).__name__)
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
    live run). Raises :class:`NotHere` when the runner does not hold the run, ``httpx.HTTPError``
    when the line breaks (the worker stopped). No read timeout (a model may think for minutes): a
    frozen worker's line stays open and silent, and the caller checks the run when it is silent."""
    params = {"after": after, **({"claim": 1} if claim else {})}
    async with httpx.AsyncClient(timeout=_timeout(None), headers=_headers(), trust_env=False) as client:
        async with client.stream("GET", f"{runner.url}{API}/runs/{int(run_id)}/events",
                                 params=params) as response:
            if response.status_code == 404:
                raise NotHere(run_id)
            response.raise_for_status()
            async for line in response.aiter_lines():
                if not line.strip():
                    continue
                item = json.loads(line)
                yield FeedEvent(int(item["i"]), str(item["kind"]), dict(item.get("data") or {}),
                                float(item.get("t") or 0.0))
