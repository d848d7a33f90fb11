"""What a live supervisor serves on this host, kept in the ``setting`` table (one row per supervisor).

Each service a supervisor runs on 127.0.0.1 (its link, the embedded llama.cpp
servers) is advertised in a row ``<prefix><supervisor id>`` written when it starts or changes
and removed when it stops; the row of a supervisor that died goes with that supervisor's own
row (:meth:`AdvertisedRows.prune_orphans`, from every supervisor's sweep). A reader only trusts
the rows of supervisors on this host whose heartbeat is recent.
"""

from __future__ import annotations

import logging
import socket
from datetime import timedelta
from typing import Any

from sqlmodel import Session, col, select

from grobot.core.models import Setting, Supervisor, utcnow

logger = logging.getLogger(__name__)

LIVE_SECONDS = 60.0


class AdvertisedRows:
    """The rows of one kind of service, named ``<prefix><supervisor id>``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def key(self, supervisor_id: str) -> str:
        return (self.prefix + supervisor_id)[:100]

    def write(self, supervisor_id: str, value: dict[str, Any], *, session: Session) -> None:
        """Record what ``supervisor_id`` serves (replaces what it advertised before)."""
        row = session.get(Setting, self.key(supervisor_id)) or Setting(key=self.key(supervisor_id))
        row.value = {**value, "supervisor_id": supervisor_id}
        row.updated_at = utcnow()
        session.add(row)

    def withdraw(self, supervisor_id: str, *, session: Session) -> None:
        row = session.get(Setting, self.key(supervisor_id))
        if row is not None:
            session.delete(row)

    def prune_orphans(self, *, session: Session) -> int:
        """Remove the rows of supervisors that are gone (crashed, then forgotten by the sweep)."""
        known = {self.prefix + supervisor_id for supervisor_id in session.exec(select(Supervisor.id)).all()}
        rows = session.exec(select(Setting).where(col(Setting.key).startswith(self.prefix))).all()
        orphans = [row for row in rows if row.key not in known]
        for row in orphans:
            session.delete(row)
        return len(orphans)

    def live(self, *, session: Session, live_seconds: float = LIVE_SECONDS) -> list[dict[str, Any]]:
        """The values of live supervisors on this host, the most recently seen first."""
        cutoff = utcnow() - timedelta(seconds=live_seconds)
        rows = session.exec(
            select(Setting.value, Supervisor.hostname)
            .join(Supervisor, col(Setting.key) == self.prefix + col(Supervisor.id))
            .where(col(Setting.key).startswith(self.prefix), Supervisor.heartbeat_at >= cutoff)
            .order_by(col(Supervisor.heartbeat_at).desc())
        ).all()
        here = socket.gethostname()
        return [value for value, hostname in rows if hostname == here and isinstance(value, dict)]
