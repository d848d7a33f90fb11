"""Where the memory service of a live supervisor listens, kept in the ``setting`` table.

Each supervisor writes one row ``memory_service:<supervisor id>`` = ``{"url": ...}`` when
its service starts and removes it when it stops; the row of a supervisor that died is removed
with that supervisor's own row (:func:`prune_orphans`, from every supervisor's sweep). A reader only trusts the row of a
supervisor on this host (the service listens on 127.0.0.1) whose heartbeat is recent.
No token is stored: every process derives it from the secret key.
"""

from __future__ import annotations

import logging
import socket
from datetime import timedelta

from sqlmodel import Session, col, select

from grobot.core.errors import MemoryUnavailable
from grobot.core.models import Setting, Supervisor, utcnow

logger = logging.getLogger(__name__)

KEY_PREFIX = "memory_service:"
LIVE_SECONDS = 60.0


def _key(supervisor_id: str) -> str:
    return (KEY_PREFIX + supervisor_id)[:100]


def advertise(supervisor_id: str, url: str, *, session: Session) -> None:
    """Record that ``supervisor_id`` serves memory at ``url``."""
    row = session.get(Setting, _key(supervisor_id)) or Setting(key=_key(supervisor_id))
    row.value = {"url": url, "supervisor_id": supervisor_id}
    row.updated_at = utcnow()
    session.add(row)


def withdraw(supervisor_id: str, *, session: Session) -> None:
    row = session.get(Setting, _key(supervisor_id))
    if row is not None:
        session.delete(row)


def prune_orphans(*, session: Session) -> int:
    """Remove the rows of supervisors that are gone (crashed, then forgotten by the sweep)."""
    known = {KEY_PREFIX + supervisor_id for supervisor_id in session.exec(select(Supervisor.id)).all()}
    rows = session.exec(select(Setting).where(col(Setting.key).startswith(KEY_PREFIX))).all()
    orphans = [row for row in rows if row.key not in known]
    for row in orphans:
        session.delete(row)
    return len(orphans)


def find_url(*, session: Session, live_seconds: float = LIVE_SECONDS) -> str | None:
    """The URL of a live supervisor's memory service on this host (the most recently seen), or None."""
    cutoff = utcnow() - timedelta(seconds=live_seconds)
    rows = session.exec(
        select(Setting.value, Supervisor.hostname, Supervisor.heartbeat_at)
        .join(Supervisor, col(Setting.key) == KEY_PREFIX + col(Supervisor.id))
        .where(col(Setting.key).startswith(KEY_PREFIX), Supervisor.heartbeat_at >= cutoff)
        .order_by(col(Supervisor.heartbeat_at).desc())
    ).all()
    here = socket.gethostname()
    for value, hostname, _ in rows:
        if hostname == here and isinstance(value, dict) and value.get("url"):
            return str(value["url"])
    return None


def require_url(*, session: Session) -> str:
    """Like :func:`find_url`, or :class:`MemoryUnavailable` with a clear message."""
    url = find_url(session=session)
    if url is None:
        raise MemoryUnavailable()
    return url
