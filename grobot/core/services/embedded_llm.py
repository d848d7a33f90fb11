"""Where the embedded llama.cpp servers listen: the supervisor's own, or those a live supervisor advertises.

Each supervisor writes one row ``llama_servers:<supervisor id>`` = ``{"servers": [...]}`` when
what it serves changes and removes it when it stops; the rows of dead supervisors go with them
(:func:`prune_orphans`). A reader trusts only supervisors on this host whose heartbeat is recent
(the servers listen on 127.0.0.1).
"""

from __future__ import annotations

import logging
import socket
from datetime import timedelta

from sqlmodel import Session, col, select

from grobot.core.llm.embedded import ServerInfo, local_directory
from grobot.core.models import Setting, Supervisor, utcnow

logger = logging.getLogger(__name__)

KEY_PREFIX = "llama_servers:"
LIVE_SECONDS = 60.0


def lookup(model: str, context_window: int, *, session: Session | None) -> ServerInfo:
    """The server that serves ``model``: this process's own, else the one a live supervisor advertises."""
    directory = local_directory()
    if directory is not None:
        return directory.request(model, context_window)
    if session is None:
        return ServerInfo(model=model, status="stopped", error="the bot worker is not running")
    for info in advertised(session=session):
        if info.model == model:
            return info
    return ServerInfo(model=model, status="stopped",
                      error="no bot worker serves this model: is the bot worker running?")


def _key(supervisor_id: str) -> str:
    return (KEY_PREFIX + supervisor_id)[:100]


def advertise(supervisor_id: str, servers: list[ServerInfo], *, session: Session) -> None:
    """Record the servers of ``supervisor_id`` (replaces what it advertised before)."""
    row = session.get(Setting, _key(supervisor_id)) or Setting(key=_key(supervisor_id))
    row.value = {"supervisor_id": supervisor_id, "servers": [s.as_dict() for s in servers]}
    row.updated_at = utcnow()
    session.add(row)


def withdraw(supervisor_id: str, *, session: Session) -> None:
    row = session.get(Setting, _key(supervisor_id))
    if row is not None:
        session.delete(row)


def prune_orphans(*, session: Session) -> int:
    """Remove the rows of supervisors that are gone."""
    known = {KEY_PREFIX + supervisor_id for supervisor_id in session.exec(select(Supervisor.id)).all()}
    rows = session.exec(select(Setting).where(col(Setting.key).startswith(KEY_PREFIX))).all()
    orphans = [row for row in rows if row.key not in known]
    for row in orphans:
        session.delete(row)
    return len(orphans)


def advertised(*, session: Session, live_seconds: float = LIVE_SECONDS) -> list[ServerInfo]:
    """The servers of live supervisors on this host (newest supervisor first)."""
    cutoff = utcnow() - timedelta(seconds=live_seconds)
    rows = session.exec(
        select(Setting.value, Supervisor.hostname)
        .join(Supervisor, col(Setting.key) == KEY_PREFIX + col(Supervisor.id))
        .where(col(Setting.key).startswith(KEY_PREFIX), Supervisor.heartbeat_at >= cutoff)
        .order_by(col(Supervisor.heartbeat_at).desc())
    ).all()
    here = socket.gethostname()
    result = []
    for value, hostname in rows:
        if hostname == here and isinstance(value, dict):
            result.extend(ServerInfo.from_dict(s) for s in value.get("servers") or [] if isinstance(s, dict))
    return result
