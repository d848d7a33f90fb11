"""Where the memory service of a live supervisor listens, kept in the ``setting`` table.

Each supervisor writes one row ``memory_service:<supervisor id>`` = ``{"url": ...}`` when
its service starts and removes it when it stops; the row of a supervisor that died is removed
with that supervisor's own row (:func:`prune_orphans`, from every supervisor's sweep). A reader only trusts the row of a
supervisor on this host (the service listens on 127.0.0.1) whose heartbeat is recent.
No token is stored: every process derives it from the secret key.
"""

from __future__ import annotations

import logging

from sqlmodel import Session

from grobot.core.advertised import LIVE_SECONDS, AdvertisedRows
from grobot.core.errors import MemoryUnavailable

logger = logging.getLogger(__name__)

KEY_PREFIX = "memory_service:"


_ROWS = AdvertisedRows(KEY_PREFIX)


def advertise(supervisor_id: str, url: str, *, session: Session) -> None:
    """Record that ``supervisor_id`` serves memory at ``url``."""
    _ROWS.write(supervisor_id, {"url": url}, session=session)


def withdraw(supervisor_id: str, *, session: Session) -> None:
    _ROWS.withdraw(supervisor_id, session=session)


def prune_orphans(*, session: Session) -> int:
    """Remove the rows of supervisors that are gone (crashed, then forgotten by the sweep)."""
    return _ROWS.prune_orphans(session=session)


def find_url(*, session: Session, live_seconds: float = LIVE_SECONDS) -> str | None:
    """The URL of a live supervisor's memory service on this host (the most recently seen), or None."""
    for value in _ROWS.live(session=session, live_seconds=live_seconds):
        if value.get("url"):
            return str(value["url"])
    return None


def require_url(*, session: Session) -> str:
    """Like :func:`find_url`, or :class:`MemoryUnavailable` with a clear message."""
    url = find_url(session=session)
    if url is None:
        raise MemoryUnavailable()
    return url
