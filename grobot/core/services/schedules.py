"""Scheduled posts: a bot posts in a channel on its own, a fixed text or its answer to a prompt.

A schedule is a cron (five crontab fields) or an interval, in a time zone; its next run is
computed with APScheduler's triggers and kept in ``bot_schedule.next_run_at``, so it survives
restarts. Any live supervisor claims the due runs (:func:`claim_due`): the claim moves
``next_run_at`` on only if it is still the value read (compare and set), so one run is claimed
once however many supervisors see it due, and holds it (a :class:`BotScheduleRun` with an owner and
an expiry) until its post is confirmed (:func:`finish_runs`). A supervisor killed between the claim
and the post leaves an expired claim that any supervisor takes again (at least once by the claim);
the post's nonce (:meth:`ScheduledRun.nonce`, from the schedule and the run's due time) makes
Discord return the message already made instead of a second one (exactly once in the channel).
Discord keeps a nonce only "the past few minutes", so a run whose post began (``sent_at``) is taken
again only within ``nonce_seconds`` of it; later it is dropped (logged), never posted twice. The
supervisor checks that it still holds its claim, and that the bot and the schedule are still enabled,
before it answers a prompt and before it posts (:func:`hold_run`): a supervisor that stalled past its
claim posts nothing once another took the run, and a run of a bot disabled since it was claimed is
skipped (logged).

Missed runs (the worker was down, the bot had no supervisor): a run claimed more than the
schedule's grace time after its time is skipped and logged; however many runs were missed, at
most one is caught up (the next run is computed from now, never from the missed ones).
"""

from __future__ import annotations

import logging
import zoneinfo
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import delete, true, update
from sqlmodel import Session, col, select

from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import Bot, BotSchedule, BotScheduleRun, Conversation, utcnow

logger = logging.getLogger(__name__)

KINDS = ("text", "prompt")
MIN_INTERVAL_SECONDS = 1
MAX_CONTENT = 4000
DEFAULT_GRACE_SECONDS = 300
DEFAULT_CLAIM_SECONDS = 5.0  # a claimed run not confirmed within this (renewed while it works) is taken again
DEFAULT_NONCE_SECONDS = 120.0  # a run whose post began is taken again only this soon after (Discord's nonces)
TAKEN = "taken by another worker"  # :func:`hold_run`: the claim is no longer this supervisor's
_TICK = timedelta(microseconds=1)


@dataclass(frozen=True)
class ScheduledRun:
    """A run a supervisor claimed: what it posts (``kind`` text or prompt) with the bot's token."""

    run_id: int
    schedule_id: int
    bot_id: int
    name: str
    channel_id: str
    kind: str
    content: str
    due_at: datetime  # the time it was due (UTC); a "Run now": when it was claimed
    grace_seconds: int = DEFAULT_GRACE_SECONDS
    answer: str | None = None  # a prompt's answer written by an earlier claim of this run
    token: str = field(default="", repr=False, compare=False)

    def nonce(self, part: int = 0) -> str:
        """The Discord nonce of the run's ``part``-th message: the same for every claim of the run, so
        that Discord returns the message already made instead of a second one (at most 25 characters)."""
        return f"s{self.schedule_id}t{int(self.due_at.timestamp() * 1000):x}p{part}"[:25]


def trigger_of(*, cron: str, interval_seconds: int, timezone: str, start: datetime | None = None) -> Any:
    """The APScheduler trigger of a schedule (raises ValidationError in plain words)."""
    try:
        zone = zoneinfo.ZoneInfo(timezone or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValidationError(f"Unknown time zone {timezone!r} (use a name such as Europe/Paris or UTC).") from None
    if cron.strip():
        try:
            return CronTrigger.from_crontab(cron.strip(), timezone=zone)
        except ValueError:
            raise ValidationError(f"{cron!r} is not a cron of five fields (minute hour day month weekday), "
                                  "e.g. '0 9 * * mon' for each Monday at 09:00.") from None
    if interval_seconds < MIN_INTERVAL_SECONDS:
        raise ValidationError("Give a cron or an interval of at least one second.")
    return IntervalTrigger(seconds=interval_seconds, start_date=start or utcnow(), timezone=zone)


def next_run(schedule: BotSchedule, *, after: datetime, start: datetime | None = None) -> datetime | None:
    """The first run of ``schedule`` strictly after ``after`` (UTC; None: never again).

    An interval keeps its phase from ``start`` (its previous run time)."""
    trigger = trigger_of(cron=schedule.cron, interval_seconds=schedule.interval_seconds,
                         timezone=schedule.timezone, start=start or after)
    fire = trigger.get_next_fire_time(None, after + _TICK)
    return fire.astimezone(UTC) if fire is not None else None


# --------------------------------------------------------------------------- admin operations


def list_schedules(bot_id: int, *, session: Session) -> list[BotSchedule]:
    return list(session.exec(select(BotSchedule).where(BotSchedule.bot_id == bot_id).order_by(col(BotSchedule.id))))


def get_schedule(bot_id: int, schedule_id: int, *, session: Session) -> BotSchedule:
    row = session.get(BotSchedule, schedule_id)
    if row is None or row.bot_id != bot_id:
        raise NotFoundError(f"This bot has no schedule numbered {schedule_id}.")
    return row


def _validate(*, channel_id: str, kind: str, content: str, cron: str, interval_seconds: int, timezone: str,
              grace_seconds: int) -> None:
    if not str(channel_id).strip().isdigit():
        raise ValidationError("Give the channel's Discord id (a number; Developer Mode, right-click, Copy Channel ID).")
    if kind not in KINDS:
        raise ValidationError("A schedule posts a fixed text or answers a prompt.")
    if not content.strip():
        raise ValidationError("Write the text to post (or the prompt to answer).")
    if len(content) > MAX_CONTENT:
        raise ValidationError(f"Keep the text under {MAX_CONTENT} characters.")
    if grace_seconds < 0:
        raise ValidationError("The grace time cannot be negative.")
    trigger_of(cron=cron, interval_seconds=interval_seconds, timezone=timezone)


def create_schedule(bot_id: int, *, channel_id: str, content: str, kind: str = "text", cron: str = "",
                    interval_seconds: int = 0, timezone: str = "UTC", name: str = "",
                    grace_seconds: int = DEFAULT_GRACE_SECONDS, enabled: bool = True,
                    session: Session) -> BotSchedule:
    """Add a schedule to bot ``bot_id``; its first run is the trigger's first time from now."""
    if session.get(Bot, bot_id) is None:
        raise NotFoundError(f"No bot numbered {bot_id}.")
    _validate(channel_id=channel_id, kind=kind, content=content, cron=cron, interval_seconds=interval_seconds,
              timezone=timezone, grace_seconds=grace_seconds)
    row = BotSchedule(bot_id=bot_id, name=name.strip()[:100], channel_id=str(channel_id).strip(), kind=kind,
                      content=content, cron=cron.strip(), interval_seconds=0 if cron.strip() else int(interval_seconds),
                      timezone=timezone or "UTC", grace_seconds=int(grace_seconds), enabled=enabled)
    now = utcnow()
    row.next_run_at = next_run(row, after=now) if enabled else None
    session.add(row)
    session.flush()
    logger.info("Schedule %s added (%s)", row.id, describe(row), extra={"bot_id": bot_id})
    return row


def update_schedule(bot_id: int, schedule_id: int, *, session: Session, **changes: Any) -> BotSchedule:
    """Change a schedule (any of channel_id, content, kind, cron, interval_seconds, timezone, name,
    grace_seconds); its next run is computed again from now."""
    row = get_schedule(bot_id, schedule_id, session=session)
    allowed = {"channel_id", "content", "kind", "cron", "interval_seconds", "timezone", "name", "grace_seconds"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError(f"Unknown schedule field(s): {', '.join(sorted(unknown))}")
    values = {k: getattr(row, k) for k in allowed} | {k: v for k, v in changes.items() if v is not None}
    if "cron" in changes and changes["cron"]:
        values["interval_seconds"] = 0
    elif changes.get("interval_seconds"):
        values["cron"] = ""
    _validate(**{k: values[k] for k in allowed - {"name"}})
    for key, value in values.items():
        setattr(row, key, value.strip() if isinstance(value, str) and key != "content" else value)
    row.next_run_at = next_run(row, after=utcnow()) if row.enabled else None
    session.add(row)
    logger.info("Schedule %s changed (%s)", row.id, describe(row), extra={"bot_id": bot_id})
    return row


def set_enabled(bot_id: int, schedule_id: int, enabled: bool, *, session: Session) -> BotSchedule:
    """Pause (no run until resumed) or resume (the next run from now: the paused ones are not caught up)."""
    row = get_schedule(bot_id, schedule_id, session=session)
    row.enabled = enabled
    row.next_run_at = next_run(row, after=utcnow()) if enabled else None
    session.add(row)
    logger.info("Schedule %s %s", row.id, "resumed" if enabled else "paused", extra={"bot_id": bot_id})
    return row


def delete_schedule(bot_id: int, schedule_id: int, *, session: Session) -> None:
    row = get_schedule(bot_id, schedule_id, session=session)
    session.delete(row)
    logger.info("Schedule %s deleted", schedule_id, extra={"bot_id": bot_id})


def request_run(bot_id: int, schedule_id: int, *, session: Session) -> BotSchedule:
    """"Run now": the supervisor of the bot runs it at its next look (a paused schedule too)."""
    row = get_schedule(bot_id, schedule_id, session=session)
    row.run_requested = True
    session.add(row)
    return row


def known_channels(bot_id: int, *, session: Session) -> dict[str, str]:
    """The channels the bot has talked in (its conversations), by id: their names as it saw them."""
    rows = session.exec(select(Conversation.key, Conversation.title).where(
        Conversation.bot_id == bot_id, Conversation.kind == "guild", col(Conversation.key).startswith("guild:"))).all()
    return {key.removeprefix("guild:"): title for key, title in rows if key.removeprefix("guild:").isdigit()}


def describe(row: BotSchedule) -> str:
    """When a schedule runs, in plain words."""
    when = f"cron {row.cron}" if row.cron else f"every {_seconds(row.interval_seconds)}"
    return f"{when}, {row.timezone}, in channel {row.channel_id}"


def _seconds(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0 and seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count > 1 else ''}"
    return f"{seconds} second{'s' if seconds > 1 else ''}"


def _late(seconds: float) -> str:
    """A delay in plain words, rounded to its largest unit ("10 minutes")."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = round(seconds / size)
            return f"{count} {unit}{'s' if count > 1 else ''}"
    count = round(seconds)
    return f"{count} second{'s' if count != 1 else ''}"


def in_zone(moment: datetime | None, timezone: str) -> str:
    """``moment`` shown in the schedule's zone ("" when there is none)."""
    if moment is None:
        return ""
    try:
        zone = zoneinfo.ZoneInfo(timezone or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        zone = zoneinfo.ZoneInfo("UTC")
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %Z")


# --------------------------------------------------------------------------- the worker's side


def claim_due(owner: str, *, session: Session, now: datetime | None = None,
              claim_seconds: float = DEFAULT_CLAIM_SECONDS,
              nonce_seconds: float = DEFAULT_NONCE_SECONDS) -> list[ScheduledRun]:
    """Claim for supervisor ``owner`` the due runs of the enabled bots' schedules, and the runs whose
    claim expired (their supervisor died before it confirmed the post).

    A due run is claimed by moving the schedule's ``next_run_at`` on from the value read, in one UPDATE
    that matches that value only (of two supervisors that read the same due run, one claims it), and
    a :class:`BotScheduleRun` held by ``owner`` until ``now + claim_seconds``. An expired claim is taken
    over the same way (compare and set on its expiry). A run due more than its grace time ago is skipped
    (logged, not returned); one due within it runs once, however many were missed before it. An expired
    claim whose post began more than ``nonce_seconds`` ago is dropped too (Discord would no longer
    recognise its nonce). "Run now" requests are claimed the same way.
    """
    now = now or utcnow()
    until = now + timedelta(seconds=claim_seconds)
    claimed: list[BotScheduleRun] = []
    for row in session.exec(select(BotSchedule).join(Bot, col(Bot.id) == col(BotSchedule.bot_id))
                            .where(col(Bot.enabled).is_(True), _due(now)).order_by(col(BotSchedule.id))).all():
        claimed += claim_row(row, owner=owner, now=now, until=until, session=session)
    for run in session.exec(select(BotScheduleRun).where(col(BotScheduleRun.expires_at) < now)
                            .order_by(col(BotScheduleRun.id))).all():
        if _take_over(run, owner=owner, now=now, until=until, nonce_seconds=nonce_seconds, session=session):
            claimed.append(run)
    return [_run(run, session=session) for run in claimed]


def any_due(*, session: Session, now: datetime | None = None) -> bool:
    """Whether there is a run to claim (a due run, a "Run now", an expired claim): read (no write lock)
    before :func:`claim_due`."""
    now = now or utcnow()
    due = session.exec(select(BotSchedule.id).join(Bot, col(Bot.id) == col(BotSchedule.bot_id))
                       .where(col(Bot.enabled).is_(True), _due(now)).limit(1)).first()
    return due is not None or session.exec(select(BotScheduleRun.id).where(
        col(BotScheduleRun.expires_at) < now).limit(1)).first() is not None


def _due(now: datetime) -> Any:
    """The condition of a schedule with a run to claim at ``now`` (a "Run now", a run due)."""
    return (col(BotSchedule.run_requested).is_(True)
            | (col(BotSchedule.enabled).is_(True) & (col(BotSchedule.next_run_at) <= now)))


def claim_row(row: BotSchedule, *, owner: str, now: datetime, until: datetime,
              session: Session) -> list[BotScheduleRun]:
    """Claim what is due of ``row`` as read (a "Run now", the run due): each only if the row still holds
    what was read (compare and set), so a row another supervisor claimed since yields nothing."""
    assert row.id is not None
    runs: list[BotScheduleRun] = []
    if row.run_requested:
        claimed = session.exec(update(BotSchedule).where(
            col(BotSchedule.id) == row.id, col(BotSchedule.run_requested).is_(True))
            .values(run_requested=False, last_run_at=now, last_status="ran (run now)")).rowcount
        if claimed:
            runs.append(_new_run(row, due=now, run_now=True, owner=owner, now=now, until=until, session=session))
    due = row.next_run_at
    if not row.enabled or due is None or due > now:
        return runs
    late = (now - due).total_seconds()
    following = next_run(row, after=now, start=due)
    skipped = late > row.grace_seconds
    status = (f"missed ({_late(late)} late, over its {_late(row.grace_seconds)} grace): "
              "skipped") if skipped else "ran"
    claimed = session.exec(update(BotSchedule).where(
        col(BotSchedule.id) == row.id, col(BotSchedule.next_run_at) == due)
        .values(next_run_at=following, last_status=status[:200],
                **({} if skipped else {"last_run_at": now}))).rowcount
    if not claimed:
        return runs  # another supervisor claimed it first
    if skipped:
        logger.warning("Schedule %s (%s): the run of %s was missed by %s, more than its grace time: skipped",
                       row.id, row.name or describe(row), in_zone(due, row.timezone), _late(late),
                       extra={"bot_id": row.bot_id})
    else:
        runs.append(_new_run(row, due=due, run_now=False, owner=owner, now=now, until=until, session=session))
    return runs


def _new_run(row: BotSchedule, *, due: datetime, run_now: bool, owner: str, now: datetime, until: datetime,
             session: Session) -> BotScheduleRun:
    assert row.id is not None
    run = BotScheduleRun(schedule_id=row.id, bot_id=row.bot_id, due_at=due, run_now=run_now, owner=owner,
                         claimed_at=now, expires_at=until)
    session.add(run)
    session.flush()
    return run


def _take_over(run: BotScheduleRun, *, owner: str, now: datetime, until: datetime, session: Session,
               nonce_seconds: float = DEFAULT_NONCE_SECONDS) -> bool:
    """Take a run whose claim expired (compare and set on its expiry); one past its grace time, or whose
    post began longer ago than Discord keeps its nonce, is dropped."""
    schedule = session.get(BotSchedule, run.schedule_id)
    grace = schedule.grace_seconds if schedule is not None else 0
    late = (now - run.due_at).total_seconds()
    # When its post began: a fixed text is posted right after its claim (without marking it: see hold_run).
    begun = run.sent_at or (run.claimed_at if schedule is not None and schedule.kind == "text" else None)
    stale = begun is not None and (now - begun).total_seconds() >= nonce_seconds
    if schedule is None or late > grace or stale:
        gone = session.exec(delete(BotScheduleRun).where(col(BotScheduleRun.id) == run.id,
                                                          col(BotScheduleRun.expires_at) == run.expires_at)).rowcount
        if gone and schedule is not None and stale and late <= grace:
            logger.warning("Schedule %s (%s): the run of %s was being posted by a worker that stopped %s ago, too long "
                           "for Discord to recognise a second copy: not posted again (it may have been posted)",
                           schedule.id, schedule.name or describe(schedule), in_zone(run.due_at, schedule.timezone),
                           _late((now - begun).total_seconds()) if begun else "", extra={"bot_id": run.bot_id})
            record_outcome(run.bot_id, schedule.id or 0, "dropped: its worker stopped while posting it "
                           "(it may have been posted)", session=session)
        elif gone and schedule is not None:
            logger.warning("Schedule %s (%s): the run of %s was claimed by a worker that stopped, and its grace time "
                           "has passed: it may not have been posted", schedule.id, schedule.name or describe(schedule),
                           in_zone(run.due_at, schedule.timezone), extra={"bot_id": run.bot_id})
        return False
    taken = session.exec(update(BotScheduleRun).where(
        col(BotScheduleRun.id) == run.id, col(BotScheduleRun.expires_at) == run.expires_at)
        .values(owner=owner, expires_at=until)).rowcount
    if taken:
        logger.info("Schedule %s: the run due %s was claimed by a worker that stopped; taken again",
                    run.schedule_id, run.due_at.strftime("%H:%M:%S UTC"), extra={"bot_id": run.bot_id})
        run.owner, run.expires_at = owner, until
    return bool(taken)


def _run(run: BotScheduleRun, *, session: Session) -> ScheduledRun:
    assert run.id is not None
    row = session.get(BotSchedule, run.schedule_id)
    bot = session.get(Bot, run.bot_id)
    assert row is not None and bot is not None
    from grobot.core.services.bots import get_token

    return ScheduledRun(run_id=run.id, schedule_id=run.schedule_id, bot_id=run.bot_id, name=row.name,
                        channel_id=row.channel_id, kind=row.kind, content=row.content, due_at=run.due_at,
                        grace_seconds=row.grace_seconds, answer=run.text, token=get_token(bot) or "")


def renew_claims(owner: str, run_ids: list[int], claim_seconds: float = DEFAULT_CLAIM_SECONDS, *,
                 session: Session, now: datetime | None = None) -> None:
    """Keep ``owner``'s claims on the runs it is still posting (a prompt's answer takes a while)."""
    if run_ids:
        session.execute(update(BotScheduleRun).where(col(BotScheduleRun.id).in_(run_ids),
                                                     col(BotScheduleRun.owner) == owner)
                        .values(expires_at=(now or utcnow()) + timedelta(seconds=claim_seconds)))


def claim_owners(*, session: Session, now: datetime | None = None) -> set[str]:
    """The supervisors holding claims not yet expired."""
    return set(session.exec(select(BotScheduleRun.owner).where(col(BotScheduleRun.expires_at) >= (now or utcnow()))
                            .distinct()).all())


def release_claims(owner: str, *, session: Session, now: datetime | None = None) -> int:
    """The claims of a supervisor known to be gone (its process ended) expire now: any supervisor takes
    its runs again at once instead of when the claims would have expired. How many there were."""
    return int(session.exec(update(BotScheduleRun).where(col(BotScheduleRun.owner) == owner)
                            .values(expires_at=(now or utcnow()) - timedelta(seconds=1))).rowcount)


def keep_answer(run_id: int, text: str, *, session: Session) -> None:
    """A prompt's answer, kept with its run: a run taken again posts these words, not new ones."""
    session.execute(update(BotScheduleRun).where(col(BotScheduleRun.id) == run_id).values(text=text))


def hold_run(owner: str, run: ScheduledRun, claim_seconds: float = DEFAULT_CLAIM_SECONDS, *, session: Session,
             sending: bool = False, answer: str | None = None, now: datetime | None = None) -> str | None:
    """Before ``owner`` answers or posts ``run``: None when it may go on (its claim renewed; with
    ``sending``, the post marked as begun and a prompt's ``answer`` kept with the run, so that a run taken
    again posts these words), else why not: :data:`TAKEN` (its claim expired and another supervisor took
    the run, or it was finished), or in plain words why the run is skipped (the bot or the schedule
    disabled or deleted since it was claimed)."""
    now = now or utcnow()
    row = session.get(BotScheduleRun, run.run_id)
    bot = session.get(Bot, run.bot_id)
    schedule = session.get(BotSchedule, run.schedule_id)
    if bot is None:
        return "the bot was deleted"
    if schedule is None:
        return "the schedule was deleted"
    if row is None or row.owner != owner:
        return TAKEN
    if not bot.enabled:
        return "the bot is disabled"
    if not schedule.enabled and not row.run_now:
        return "the schedule is paused"
    values: dict[str, Any] = {"expires_at": now + timedelta(seconds=claim_seconds)}
    if sending:
        values["sent_at"] = row.sent_at or now
        if answer is not None:
            values["text"] = answer
    # Still its own (an expired claim nobody took yet is still its own: a supervisor taking it over compares
    # the expiry it read, which this moves on).
    held = session.exec(update(BotScheduleRun).where(
        col(BotScheduleRun.id) == run.run_id, col(BotScheduleRun.owner) == owner).values(**values)).rowcount
    return None if held else TAKEN


def hold_runs(owner: str, wanted: list[tuple[ScheduledRun, bool, str | None]],
              claim_seconds: float = DEFAULT_CLAIM_SECONDS, *, session: Session) -> list[str | None]:
    """:func:`hold_run` for each ``(run, sending, answer)`` of ``wanted``, in one transaction (the posts of runs
    due together are checked together)."""
    now = utcnow()
    return [hold_run(owner, run, claim_seconds, session=session, sending=sending, answer=answer, now=now)
            for run, sending, answer in wanted]


def finish_runs(done: list[tuple[ScheduledRun, str]], owner: str | None = None, *, session: Session) -> None:
    """The runs' posts are confirmed (or failed for good), each with what happened: their claims end,
    each schedule shows how its run went. With ``owner``: only the runs it still holds (a run another
    supervisor took since is that one's to confirm)."""
    if not done:
        return
    mine = col(BotScheduleRun.owner) == owner if owner is not None else true()
    session.execute(delete(BotScheduleRun).where(col(BotScheduleRun.id).in_([run.run_id for run, _ in done]), mine))
    for run, status in sorted(done, key=lambda item: item[0].schedule_id):  # rows locked in one order
        record_outcome(run.bot_id, run.schedule_id, status, session=session)


def record_outcome(bot_id: int, schedule_id: int, status: str, *, session: Session) -> None:
    """What a run posted (or why it did not), shown with the schedule."""
    session.execute(update(BotSchedule).where(col(BotSchedule.id) == schedule_id, col(BotSchedule.bot_id) == bot_id)
                    .values(last_status=status[:200]))
