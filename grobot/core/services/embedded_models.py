"""Where the embedded llama.cpp servers listen: the supervisor's own, or those a live supervisor advertises.

Each supervisor writes one row ``llama_servers:<supervisor id>`` = ``{"servers": [...]}`` when
what it serves changes and removes it when it stops; the rows of dead supervisors go with them
(:func:`prune_orphans`). A reader trusts only supervisors on this host whose heartbeat is recent
(the servers listen on 127.0.0.1).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from sqlmodel import Session

from grobot.core.advertised import AdvertisedRows
from grobot.core.llm.embedded import ServerInfo, local_directory

logger = logging.getLogger(__name__)

KEY_PREFIX = "llama_servers:"


def lookup(wanted: dict[str, int], *, session: Session) -> dict[str, ServerInfo]:
    """The server of each model in ``wanted`` (model -> context window): this process's own
    (the supervisor's, started when needed), else what live supervisors advertise (one read)."""
    directory = local_directory()
    if directory is not None:
        return {model: directory.request(model, context) for model, context in wanted.items()}
    served = {info.model: info for info in advertised(session=session)}
    missing = ServerInfo(model="", status="stopped", error="no bot worker serves this model: is the bot worker running?")
    return {model: served.get(model) or replace(missing, model=model) for model in wanted}


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
