"""Where the embedded llama.cpp servers listen: the supervisor's own, or those a live supervisor advertises.

Each supervisor writes one row ``llama_servers:<supervisor id>`` = ``{"servers": [...]}`` when
what it serves changes and removes it when it stops; the rows of dead supervisors go with them
(:func:`prune_orphans`). A reader trusts only supervisors on this host whose heartbeat is recent
(the servers listen on 127.0.0.1).
"""

from __future__ import annotations

import logging

from sqlmodel import Session

from grobot.core.advertised import AdvertisedRows
from grobot.core.llm.embedded import ServerInfo, local_directory

logger = logging.getLogger(__name__)

KEY_PREFIX = "llama_servers:"


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


_ROWS = AdvertisedRows(KEY_PREFIX)


def advertise(supervisor_id: str, servers: list[ServerInfo], *, session: Session) -> None:
    """Record the servers of ``supervisor_id`` (replaces what it advertised before)."""
    _ROWS.write(supervisor_id, {"servers": [s.as_dict() for s in servers]}, session=session)


def withdraw(supervisor_id: str, *, session: Session) -> None:
    _ROWS.withdraw(supervisor_id, session=session)


def prune_orphans(*, session: Session) -> int:
    """Remove the rows of supervisors that are gone."""
    return _ROWS.prune_orphans(session=session)


def advertised(*, session: Session) -> list[ServerInfo]:
    """The servers of live supervisors on this host (newest supervisor first)."""
    return [ServerInfo.from_dict(s) for value in _ROWS.live(session=session)
            for s in value.get("servers") or [] if isinstance(s, dict)]
