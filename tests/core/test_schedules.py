"""Scheduled posts as an admin meets them in the CLI, and the worker's claim: a due run claimed once
by two supervisors, a missed run skipped past its grace time, at most one caught up."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlmodel import select

from grobot.cli.main import main
from grobot.core.db import session_scope
from grobot.core.models import BotSchedule, utcnow
from grobot.core.services import bots, schedules

CHANNEL = "222222222222222222"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_schedules_from_the_cli(grobot_env, capsys):
    assert run(capsys, "bot", "add", "--name", "herald")[0] == 0
    code, out, _ = run(capsys, "bot", "schedule", "add", "herald", "--channel", CHANNEL, "--cron", "0 9 * * mon",
                       "--tz", "Europe/Paris", "--prompt", "Summarise this week's open questions.", "--name", "weekly",
                       "--json")
    added = json.loads(out)
    assert code == 0 and added["kind"] == "prompt" and added["next_run"].endswith(("CET", "CEST"))
    assert " 09:00:00 " in added["next_run"]  # shown in the schedule's zone
    code, _, err = run(capsys, "bot", "schedule", "add", "herald", "--channel", CHANNEL, "--cron", "every monday",
                       "--text", "hi")
    assert code == 2 and err.startswith("error: ") and "five fields" in err and "Traceback" not in err
    code, _, err = run(capsys, "bot", "schedule", "add", "herald", "--channel", CHANNEL, "--every", "60",
                       "--tz", "Mars/Olympus", "--text", "hi")
    assert code == 2 and "Unknown time zone" in err
    assert run(capsys, "bot", "schedule", "add", "herald", "--channel", CHANNEL, "--every", "3600", "--text", "tea")[0] == 0

    code, out, _ = run(capsys, "bot", "schedule", "list", "herald")
    assert code == 0 and "weekly" in out and "every 1 hour" in out and "cron 0 9 * * mon, Europe/Paris" in out
    schedule_id = str(added["id"])
    code, out, _ = run(capsys, "bot", "schedule", "pause", "herald", schedule_id)
    assert code == 0 and "paused" in out
    code, out, _ = run(capsys, "bot", "schedule", "run", "herald", schedule_id)
    assert code == 0 and "within a second or two" in out
    with session_scope() as session:
        row = session.get(BotSchedule, added["id"])
        assert row is not None and not row.enabled and row.next_run_at is None and row.run_requested
    assert run(capsys, "bot", "schedule", "resume", "herald", schedule_id)[0] == 0
    assert run(capsys, "bot", "schedule", "delete", "herald", schedule_id)[0] == 0
    code, _, err = run(capsys, "bot", "schedule", "delete", "herald", schedule_id)
    assert code == 2 and "no schedule numbered" in err
    code, out, _ = run(capsys, "bot", "schedule", "list", "herald", "--json")
    assert [s["content"] for s in json.loads(out)] == ["tea"]


def _bot_with_schedule(**fields) -> tuple[int, int]:
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="ticker")
        row = schedules.create_schedule(bot.id, channel_id=CHANNEL, content="tick", session=session, **fields)
        return bot.id, row.id


def test_a_due_run_is_claimed_once_and_missed_runs_follow_the_policy(grobot_env):
    bot_id, schedule_id = _bot_with_schedule(interval_seconds=5, grace_seconds=60)
    now = utcnow()
    with session_scope() as session:
        row = session.get(BotSchedule, schedule_id)
        assert row.next_run_at is not None and now < row.next_run_at <= now + timedelta(seconds=5)
        due = row.next_run_at
    # Two supervisors see it due (both read the row): the first claims it, the second finds it claimed;
    # the next run keeps the interval's phase.
    with session_scope() as session:
        seen_by_second = session.get(BotSchedule, schedule_id)
        session.expunge(seen_by_second)
    with session_scope() as first:
        claimed = schedules.claim_due([bot_id], session=first, now=due + timedelta(seconds=0.2))
    with session_scope() as second:
        again = schedules.claim_row(seen_by_second, session=second, now=due + timedelta(seconds=0.3))
        assert schedules.claim_due([bot_id], session=second, now=due + timedelta(seconds=0.3)) == []
    assert [r.due_at for r in claimed] == [due] and again == []
    with session_scope() as session:
        assert session.get(BotSchedule, schedule_id).next_run_at == due + timedelta(seconds=5)

    # The worker was down for 40 s (8 runs): within the grace time, one run is caught up, no more.
    with session_scope() as session:
        session.get(BotSchedule, schedule_id).next_run_at = due - timedelta(seconds=40)
    later = due + timedelta(seconds=0.5)
    with session_scope() as session:
        runs = schedules.claim_due([bot_id], session=session, now=later)
    assert len(runs) == 1
    with session_scope() as session:
        row = session.get(BotSchedule, schedule_id)
        assert row.next_run_at > later and row.last_status == "ran"
        assert schedules.claim_due([bot_id], session=session, now=later) == []

    # Down for ten minutes, over the one-minute grace: skipped, said so, and the next run from now.
    with session_scope() as session:
        session.get(BotSchedule, schedule_id).next_run_at = later - timedelta(minutes=10)
    with session_scope() as session:
        assert schedules.claim_due([bot_id], session=session, now=later) == []
    with session_scope() as session:
        row = session.get(BotSchedule, schedule_id)
        assert row.next_run_at > later and row.last_status.startswith("missed (10 minutes late")
        assert row.last_status.endswith("skipped")

    # A paused schedule never runs; "Run now" runs it once.
    with session_scope() as session:
        schedules.set_enabled(bot_id, schedule_id, False, session=session)
        schedules.request_run(bot_id, schedule_id, session=session)
    with session_scope() as session:
        assert [r.schedule_id for r in schedules.claim_due([bot_id], session=session, now=later)] == [schedule_id]
    with session_scope() as session:
        assert schedules.claim_due([bot_id], session=session, now=later + timedelta(hours=1)) == []


def test_a_run_its_bot_takes_after_the_grace_time_is_not_posted(caplog):
    """A run claimed for a bot that was not online to take it: past its grace time it is dropped, said so."""
    import asyncio

    from bot_worker.scheduled_posts import PostBox

    now = utcnow()
    stale = schedules.ScheduledRun(schedule_id=1, bot_id=7, name="weekly", channel_id=CHANNEL, kind="text",
                                   content="old", due_at=now - timedelta(minutes=6), grace_seconds=300)
    fresh = schedules.ScheduledRun(schedule_id=2, bot_id=7, name="", channel_id=CHANNEL, kind="text",
                                   content="new", due_at=now - timedelta(seconds=2), grace_seconds=300)
    box = PostBox()
    box.put(stale)
    box.put(fresh)
    assert asyncio.run(box.take(7, wait=0.1)) == [fresh]
    assert any("Scheduled post 1 (weekly)" in r.getMessage() and "not posted, its bot was not online" in r.getMessage()
               for r in caplog.records if r.levelname == "WARNING")


def test_a_poll_reads_whether_a_run_is_due_before_claiming_it(grobot_env):
    """The supervisor polls twice a second: what is due is read first (no write lock), claimed only when there."""
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="poll")
        bot_id = bot.id
    with session_scope() as session:
        schedules.create_schedule(bot_id, session=session, channel_id="1", content="hi", interval_seconds=3600)
    with session_scope(readonly=True) as session:
        assert not schedules.any_due([bot_id], session=session)
        assert not schedules.any_due([], session=session)
    with session_scope() as session:
        row = session.exec(select(BotSchedule)).one()
        row.next_run_at = utcnow() - timedelta(seconds=1)
        session.add(row)
    with session_scope(readonly=True) as session:
        assert schedules.any_due([bot_id], session=session)
        assert not schedules.any_due([bot_id + 1], session=session)
    with session_scope() as session:
        assert len(schedules.claim_due([bot_id], session=session)) == 1
    with session_scope(readonly=True) as session:
        assert not schedules.any_due([bot_id], session=session)
