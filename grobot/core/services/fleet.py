"""The fleet in the database: supervisor rows, bot leases, and the live status of bot processes.

Pure database logic (no Discord, no processes), shared by the supervisor and the bot
processes. Every function takes a short session (``session=``) and never blocks on
anything but the database.

Leases: a supervisor holds a bot while ``bot_status.supervisor_id`` names it and
``lease_expires_at`` is in the future; it renews its leases every heartbeat period. On
PostgreSQL claiming locks the candidate rows with ``FOR UPDATE SKIP LOCKED`` so two
supervisors never take the same bot in one instant.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import and_, bindparam, delete, or_, update
from sqlmodel import Session, col, select

from grobot.core import bot_errors
from grobot.core.db import execute_dml
from grobot.core.models import Bot, BotState, BotStatus, Supervisor, utcnow
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

# What an admin is told when Discord refuses a bot (plain text, shared with the bot processes).
TOKEN_REJECTED = bot_errors.TOKEN_REJECTED
intent_error = bot_errors.intent_error


@dataclass(frozen=True)
class Heartbeat:
    """A bot process's heartbeat, received by its supervisor at ``at``."""

    bot_id: int
    pid: int
    at: datetime
    guild_count: int
    online: bool = True


def _aware(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes: read them as UTC."""
    if value is not None and value.tzinfo is None:

        return value.replace(tzinfo=UTC)
    return value


@dataclass(frozen=True)
class BotRow:
    """What the supervisor needs to know about one bot, read in one query."""

    bot_id: int
    name: str
    enabled: bool
    has_token: bool
    gateway_revision: int
    state: str
    pid: int | None
    supervisor_id: str | None
    lease_expires_at: datetime | None
    heartbeat_at: datetime | None
    running_revision: int | None
    rejected_revision: int | None
    crash_count: int
    config_version: str = ""  # changes whenever the bot's settings do (see :func:`config_version`)

    @property
    def wanted(self) -> bool:
        """Should a process run for this bot (enabled, a token, not rejected at this revision)?"""
        return self.enabled and self.has_token and self.rejected_revision != self.gateway_revision


# --------------------------------------------------------------------------- supervisors


def register_supervisor(supervisor_id: str, *, hostname: str, pid: int, session: Session) -> None:
    row = session.get(Supervisor, supervisor_id) or Supervisor(id=supervisor_id)
    row.hostname, row.pid = hostname[:255], pid
    row.started_at = row.heartbeat_at = utcnow()
    session.add(row)


def supervisor_heartbeat(supervisor_id: str, *, session: Session) -> None:
    row = session.get(Supervisor, supervisor_id)
    if row is None:
        row = Supervisor(id=supervisor_id)
    row.heartbeat_at = utcnow()
    session.add(row)


def remove_supervisor(supervisor_id: str, *, session: Session) -> None:
    session.execute(delete(Supervisor).where(Supervisor.id == supervisor_id))


def all_supervisors(*, session: Session) -> list[Supervisor]:
    return list(session.exec(select(Supervisor)).all())


def prune_supervisors(*, stale_after: float, session: Session) -> int:
    """Forget supervisors silent for ``stale_after`` seconds."""
    cutoff = utcnow() - timedelta(seconds=stale_after)
    return execute_dml(session, delete(Supervisor).where(col(Supervisor.heartbeat_at) < cutoff))


# --------------------------------------------------------------------------- reading the fleet


def fleet_view(*, session: Session) -> list[BotRow]:
    """Every bot with its status, ordered by id."""
    rows = session.exec(
        select(Bot, BotStatus).join(BotStatus, BotStatus.bot_id == Bot.id, isouter=True).order_by(Bot.id)
    ).all()
    out = []
    for bot, status in rows:
        out.append(BotRow(
            bot_id=bot.id or 0, name=bot.name, enabled=bot.enabled, has_token=bot.discord_token_enc is not None,
            gateway_revision=bot.gateway_revision,
            state=status.state if status else BotState.STOPPED.value,
            pid=status.pid if status else None,
            supervisor_id=status.supervisor_id if status else None,
            lease_expires_at=_aware(status.lease_expires_at) if status else None,
            heartbeat_at=_aware(status.heartbeat_at) if status else None,
            running_revision=status.running_revision if status else None,
            rejected_revision=status.rejected_revision if status else None,
            crash_count=status.crash_count if status else 0,
            config_version=config_version(bot.updated_at),
        ))
    return out


def config_version(updated_at: datetime | None) -> str:
    """A bot's settings version: its ``updated_at``, the same on SQLite (naive) and PostgreSQL."""
    aware = _aware(updated_at)
    return aware.isoformat() if aware is not None else ""


def _status(bot_id: int, session: Session) -> BotStatus:
    status = session.get(BotStatus, bot_id)
    if status is None:
        status = BotStatus(bot_id=bot_id)
        session.add(status)
    return status


# --------------------------------------------------------------------------- leases


def acquire_leases(supervisor_id: str, bot_ids: list[int], *, lease_seconds: float, session: Session,
                   limit: int | None = None) -> list[int]:
    """Take the leases of ``bot_ids`` that are free, expired or already ours; returns those now held.

    On PostgreSQL the candidate rows are locked with ``FOR UPDATE SKIP LOCKED``: a row
    another supervisor is claiming right now is skipped, not waited for.
    """
    if not bot_ids:
        return []
    now = utcnow()
    query = (
        select(BotStatus)
        .where(col(BotStatus.bot_id).in_(bot_ids))
        .where(or_(col(BotStatus.supervisor_id).is_(None), col(BotStatus.supervisor_id) == supervisor_id,
                   col(BotStatus.lease_expires_at).is_(None), col(BotStatus.lease_expires_at) < now))
        .order_by(BotStatus.bot_id)
    )
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    held: list[BotStatus] = []
    for status in session.exec(query).all():
        if limit is not None and len(held) >= limit and status.supervisor_id != supervisor_id:
            continue
        if status.supervisor_id and status.supervisor_id != supervisor_id:
            logger.info("Taking over bot %s from supervisor %s (lease expired)", status.bot_id, status.supervisor_id)
            status.state, status.detail = BotState.OFFLINE.value, "taken over from a stopped supervisor"
        status.supervisor_id = supervisor_id
        status.lease_expires_at = now + timedelta(seconds=lease_seconds)
        status.updated_at = now
        session.add(status)
        held.append(status.bot_id)
    # Bots without a status row (created outside the service): give them one.
    missing = set(bot_ids) - {s for s in session.exec(select(BotStatus.bot_id).where(BotStatus.bot_id.in_(bot_ids))).all()}  # type: ignore[union-attr]
    for bot_id in sorted(missing):
        session.add(BotStatus(bot_id=bot_id, supervisor_id=supervisor_id,
                              lease_expires_at=now + timedelta(seconds=lease_seconds)))
        held.append(bot_id)
    session.flush()
    return sorted(held)


def renew_leases(supervisor_id: str, bot_ids: list[int], *, lease_seconds: float, session: Session) -> set[int]:
    """Extend our leases; returns the bots whose lease is still ours."""
    if not bot_ids:
        return set()
    now = utcnow()
    session.execute(
        update(BotStatus)
        .where(BotStatus.bot_id.in_(bot_ids), BotStatus.supervisor_id == supervisor_id)  # type: ignore[union-attr]
        .values(lease_expires_at=now + timedelta(seconds=lease_seconds))
    )
    return set(session.exec(
        select(BotStatus.bot_id).where(BotStatus.bot_id.in_(bot_ids), BotStatus.supervisor_id == supervisor_id)  # type: ignore[union-attr]
    ).all())


def release_lease(supervisor_id: str, bot_id: int, *, state: str, detail: str = "", session: Session) -> None:
    """Give a bot up (its process is stopped): the state says why."""
    status = session.get(BotStatus, bot_id)
    if status is None or status.supervisor_id not in (None, supervisor_id):
        return
    status.supervisor_id = None
    status.lease_expires_at = None
    status.pid = None
    status.state, status.detail = state, detail
    status.updated_at = utcnow()
    session.add(status)


def release_all(supervisor_id: str, *, session: Session, state: str = BotState.STOPPED.value,
                detail: str = "supervisor stopped") -> int:
    """Release every lease of a supervisor that shuts down."""
    return execute_dml(session, update(BotStatus).where(col(BotStatus.supervisor_id) == supervisor_id).values(
        supervisor_id=None, lease_expires_at=None, pid=None, state=state, detail=detail, updated_at=utcnow()))


# --------------------------------------------------------------------------- status of a process


def mark_starting(bot_id: int, *, supervisor_id: str, pid: int | None, revision: int, session: Session) -> None:
    status = _status(bot_id, session)
    now = utcnow()
    status.state, status.detail = BotState.STARTING.value, "connecting to Discord"
    status.pid, status.supervisor_id = pid, supervisor_id
    status.started_at = status.heartbeat_at = now
    status.running_revision = revision
    status.updated_at = now
    session.add(status)


def record_pid(bot_id: int, *, pid: int, session: Session) -> None:
    """The pid of a process just started (unless it already registered itself)."""
    session.execute(update(BotStatus).where(BotStatus.bot_id == bot_id, BotStatus.pid.is_(None))  # type: ignore[union-attr]
                    .values(pid=pid))


def mark_online(bot_id: int, *, pid: int, user_id: str, user_name: str, guild_count: int, revision: int,
                session: Session) -> bool:
    """The process is READY; False when another process is registered for the bot (stop then)."""
    status = _status(bot_id, session)
    if status.pid not in (None, pid):
        return False
    now = utcnow()
    status.state, status.detail = BotState.ONLINE.value, ""
    status.pid = pid
    status.discord_user_id, status.discord_user_name = user_id[:32], user_name[:100]
    status.guild_count = guild_count
    status.running_revision = revision
    status.heartbeat_at = status.updated_at = now
    session.add(status)
    return True


def _relayed_heartbeats(online: bool) -> Any:
    """One statement for every heartbeat a supervisor relays (executed once with all of them).

    Written late (at the supervisor's next poll), a heartbeat must not undo what happened
    since: it counts only for the process still registered for its bot (or, before the pid
    is written, for a bot still starting) under this supervisor, never for one stopped,
    crashed, in error or taken over.
    """
    values: dict[str, Any] = {"heartbeat_at": bindparam("b_at"), "guild_count": bindparam("b_guilds")}
    if online:
        values.update(state=BotState.ONLINE.value, detail="")
    registered = or_(col(BotStatus.pid) == bindparam("b_pid"),
                     and_(col(BotStatus.pid).is_(None), col(BotStatus.state) == BotState.STARTING.value))
    return (update(BotStatus.__table__)  # type: ignore[attr-defined]
            .where(BotStatus.bot_id == bindparam("b_id"), BotStatus.supervisor_id == bindparam("b_sup"),
                   BotStatus.state != BotState.ERROR.value, registered)
            .values(**values))


def bot_heartbeat(bot_id: int, *, pid: int, guild_count: int | None = None, online: bool = True,
                  session: Session) -> bool:
    """Heartbeat of a bot process; False when another process is registered for the bot."""
    values: dict[str, Any] = {"heartbeat_at": utcnow()}
    if guild_count is not None:
        values["guild_count"] = guild_count
    if online:
        values.update(state=BotState.ONLINE.value, detail="")
    return bool(execute_dml(session, update(BotStatus)
                            .where(col(BotStatus.bot_id) == bot_id, or_(col(BotStatus.pid).is_(None), col(BotStatus.pid) == pid))
                            .values(**values)))


def record_heartbeats(supervisor_id: str, beats: list[Heartbeat], *, session: Session) -> None:
    """The heartbeats supervisor ``supervisor_id`` received from its bot processes since its
    last write (see :func:`_relayed_heartbeats` for which ones count)."""
    for online in (True, False):
        rows = [{"b_id": b.bot_id, "b_pid": b.pid, "b_at": b.at, "b_guilds": b.guild_count, "b_sup": supervisor_id}
                for b in sorted(beats, key=lambda b: b.bot_id)  # one lock order for every supervisor
                if b.online == online]
        if rows:
            session.connection().execute(_relayed_heartbeats(online), rows)


def lease_of(bot_id: int, *, session: Session) -> tuple[str | None, datetime | None]:
    """(holder supervisor id, lease expiry) of a bot."""
    row = session.exec(select(BotStatus.supervisor_id, BotStatus.lease_expires_at).where(BotStatus.bot_id == bot_id)).first()
    if row is None:
        return None, None
    return row[0], _aware(row[1])


def _owned(status: BotStatus, supervisor_id: str | None, pid: int | None) -> bool:
    """May this supervisor / process write the status (it was not taken over by another)?"""
    if supervisor_id is not None and status.supervisor_id not in (None, supervisor_id):
        return False
    if pid is not None and status.pid not in (None, pid):
        return False
    return True


def mark_error(bot_id: int, detail: str, *, session: Session, rejected_revision: int | None = None,
               clear_pid: bool = False, supervisor_id: str | None = None, pid: int | None = None) -> None:
    """The bot cannot run: ``detail`` tells the admin why (and what to do).

    ``supervisor_id`` / ``pid`` name the writer: nothing is written when the bot was taken
    over by another supervisor or process meanwhile.
    """
    status = _status(bot_id, session)
    if not _owned(status, supervisor_id, pid):
        return
    now = utcnow()
    status.state, status.detail = BotState.ERROR.value, detail[:2000]
    status.last_error, status.last_error_at = detail[:2000], now
    if rejected_revision is not None:
        status.rejected_revision = rejected_revision
    if clear_pid:
        status.pid = None
    status.updated_at = now
    session.add(status)


def record_crash(bot_id: int, error: str, *, retry_in: float, session: Session,
                 supervisor_id: str | None = None, crashed: bool = True) -> int:
    """A process ended with an error: keep it (and count it when the process ``crashed``, not
    when Discord was unreachable); returns the crash count (-1: not ours).

    When not ``crashed``, the more precise error the process recorded itself since it started
    (:func:`mark_error`) is kept, ``error`` being the fallback.
    """
    status = _status(bot_id, session)
    if not _owned(status, supervisor_id, None):
        return -1
    now = utcnow()
    if crashed:
        status.crash_count = (status.crash_count or 0) + 1
    elif status.last_error and status.last_error_at and status.started_at and status.last_error_at >= status.started_at:
        error = status.last_error
    status.last_error, status.last_error_at = error[:2000], now
    if status.state != BotState.ERROR.value:
        status.state = BotState.OFFLINE.value
    status.detail = f"{error[:300]}; restarting in {retry_in:.0f} s"
    status.pid = None
    status.updated_at = now
    session.add(status)
    return status.crash_count


def stale_heartbeat_after(heartbeat_seconds: float) -> float:
    """Seconds without a heartbeat after which a bot shown ``online``/``starting`` is offline:
    three missed heartbeats and a margin. The supervisor marks such bots offline
    (:func:`mark_stale_offline`); the web app shows them so when no supervisor runs to do it."""
    return 3 * heartbeat_seconds + 10


def stale_after_seconds() -> float:
    """This installation's limit of :func:`stale_heartbeat_after` (``GROBOT_HEARTBEAT_SECONDS``): a bot, or
    a supervisor, silent this long has stopped (25 s by default). A supervisor writes its heartbeat at each
    poll, where it also renews its leases (three heartbeats long): a running one, even a busy one, is never
    this late; the 10 s margin covers a loaded machine when the heartbeat is short (tests: 1 s -> 13 s)."""
    return stale_heartbeat_after(get_settings().worker.heartbeat_seconds)


def mark_stale_offline(*, max_age: float, session: Session) -> list[int]:
    """Bots shown ``online``/``starting`` whose heartbeat is older than ``max_age`` seconds become ``offline``."""
    cutoff = utcnow() - timedelta(seconds=max_age)
    ids = [int(i) for i in session.exec(select(BotStatus.bot_id).where(
        col(BotStatus.state).in_([BotState.ONLINE.value, BotState.STARTING.value]),
        or_(col(BotStatus.heartbeat_at).is_(None), col(BotStatus.heartbeat_at) < cutoff),
    )).all() if i is not None]
    if ids:
        session.execute(update(BotStatus).where(col(BotStatus.bot_id).in_(ids))
                        .values(state=BotState.OFFLINE.value, detail="no heartbeat", updated_at=utcnow()))
    return ids


def heartbeat_age(row: BotRow, now: datetime | None = None) -> float | None:
    """Seconds since the bot's last heartbeat (None: never)."""
    if row.heartbeat_at is None:
        return None
    return ((now or utcnow()) - row.heartbeat_at).total_seconds()
