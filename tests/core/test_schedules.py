"""Scheduled posts as an admin meets them in the CLI, and the worker's claim: a due run claimed once
by two supervisors, a missed run skipped past its grace time, at most one caught up, a claim whose
supervisor died taken again (with the same nonce) once it expired."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlmodel import select

from grobot.cli.main import main
from grobot.core.db import session_scope
from grobot.core.models import Bot, BotSchedule, utcnow
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
        claimed = schedules.claim_due("A", session=first, now=due + timedelta(seconds=0.2))
    with session_scope() as second:
        again = schedules.claim_row(seen_by_second, owner="B", session=second, now=due + timedelta(seconds=0.3),
                                    until=due + timedelta(seconds=5))
        assert schedules.claim_due("B", session=second, now=due + timedelta(seconds=0.3)) == []
    assert [r.due_at for r in claimed] == [due] and again == []
    with session_scope() as session:
        assert session.get(BotSchedule, schedule_id).next_run_at == due + timedelta(seconds=5)

    # The worker was down for 40 s (8 runs): within the grace time, one run is caught up, no more.
    with session_scope() as session:
        session.get(BotSchedule, schedule_id).next_run_at = due - timedelta(seconds=40)
    later = due + timedelta(seconds=0.5)
    with session_scope() as session:
        runs = schedules.claim_due("A", session=session, now=later)
    assert len(runs) == 1
    with session_scope() as session:
        row = session.get(BotSchedule, schedule_id)
        assert row.next_run_at > later and row.last_status == "ran"
        assert schedules.claim_due("A", session=session, now=later) == []

    # Down for ten minutes, over the one-minute grace: skipped, said so, and the next run from now.
    with session_scope() as session:
        session.get(BotSchedule, schedule_id).next_run_at = later - timedelta(minutes=10)
    with session_scope() as session:
        assert schedules.claim_due("A", session=session, now=later) == []
    with session_scope() as session:
        row = session.get(BotSchedule, schedule_id)
        assert row.next_run_at > later and row.last_status.startswith("missed (10 minutes late")
        assert row.last_status.endswith("skipped")

    # A paused schedule never runs; "Run now" runs it once.
    with session_scope() as session:
        schedules.set_enabled(bot_id, schedule_id, False, session=session)
        schedules.request_run(bot_id, schedule_id, session=session)
    with session_scope() as session:
        assert [r.schedule_id for r in schedules.claim_due("A", session=session, now=later)] == [schedule_id]
    with session_scope() as session:
        assert schedules.claim_due("A", session=session, now=later + timedelta(hours=1)) == []


def test_a_claim_whose_supervisor_died_is_taken_again_once_expired_with_the_same_nonce(grobot_env, caplog):
    """At least once by the claim: a run claimed but never confirmed (its supervisor was killed before the
    post) is taken again by another supervisor once its claim expired, not before, with the same nonce
    (Discord then returns the message already made); a confirmed run is not taken again; past its grace
    time it is dropped, said so."""
    bot_id, schedule_id = _bot_with_schedule(interval_seconds=3600, grace_seconds=60)
    with session_scope() as session:
        due = session.get(BotSchedule, schedule_id).next_run_at
    with session_scope() as session:
        [first] = schedules.claim_due("A", session=session, now=due, claim_seconds=5)
    with session_scope(readonly=True) as session:  # A is killed: nothing to take before the claim expires
        assert not schedules.any_due(session=session, now=due + timedelta(seconds=4))
        assert schedules.any_due(session=session, now=due + timedelta(seconds=6))
    with session_scope() as session:
        assert schedules.claim_due("B", session=session, now=due + timedelta(seconds=4)) == []
        [again] = schedules.claim_due("B", session=session, now=due + timedelta(seconds=6), claim_seconds=5)
        assert schedules.claim_due("C", session=session, now=due + timedelta(seconds=7)) == []
    assert (again.run_id, again.due_at, again.nonce(0)) == (first.run_id, first.due_at, first.nonce(0))
    assert first.nonce(0) != first.nonce(1) and len(first.nonce(12)) <= 25
    # B renews its claim while it works (a prompt's answer), keeps the answer, confirms the post.
    with session_scope() as session:
        schedules.renew_claims("B", [again.run_id], 60, session=session, now=due + timedelta(seconds=6))
        schedules.keep_answer(again.run_id, "the answer", session=session)
    with session_scope() as session:
        assert schedules.claim_due("C", session=session, now=due + timedelta(seconds=30)) == []
        schedules.finish_runs([(again, "posted")], session=session)
    with session_scope() as session:
        assert not schedules.any_due(session=session, now=due + timedelta(hours=1, seconds=-1))
        assert session.get(BotSchedule, schedule_id).last_status == "posted"
    # A "Run now" whose supervisor died keeps the answer it wrote; past the grace time it is dropped.
    with session_scope() as session:
        schedules.request_run(bot_id, schedule_id, session=session)
    with session_scope() as session:
        [now_run] = schedules.claim_due("A", session=session, claim_seconds=1)
        schedules.keep_answer(now_run.run_id, "kept words", session=session)
    with session_scope() as session:
        [taken] = schedules.claim_due("B", session=session, now=now_run.due_at + timedelta(seconds=2))
    assert taken.answer == "kept words" and taken.nonce(0) == now_run.nonce(0)
    with session_scope() as session:
        assert schedules.claim_due("C", session=session, now=now_run.due_at + timedelta(minutes=2)) == []
        assert not schedules.any_due(session=session, now=now_run.due_at + timedelta(minutes=2))
    assert any(r.levelname == "WARNING" and "claimed by a worker that stopped, and its grace time has passed"
               in r.getMessage() for r in caplog.records)


def test_a_poll_reads_whether_a_run_is_due_before_claiming_it(grobot_env):
    """The supervisor polls twice a second: what is due is read first (no write lock), claimed only when there."""
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="poll")
        bot_id = bot.id
    with session_scope() as session:
        schedules.create_schedule(bot_id, session=session, channel_id="1", content="hi", interval_seconds=3600)
    with session_scope(readonly=True) as session:
        assert not schedules.any_due(session=session)
    with session_scope() as session:
        row = session.exec(select(BotSchedule)).one()
        row.next_run_at = utcnow() - timedelta(seconds=1)
        session.add(row)
        bots.set_enabled(session.get(Bot, bot_id), False, session=session)
    with session_scope(readonly=True) as session:  # a disabled bot posts nothing
        assert not schedules.any_due(session=session)
    with session_scope() as session:
        bots.set_enabled(session.get(Bot, bot_id), True, session=session)
    with session_scope(readonly=True) as session:
        assert schedules.any_due(session=session)
    with session_scope() as session:
        assert len(schedules.claim_due("A", session=session)) == 1
    with session_scope(readonly=True) as session:
        assert not schedules.any_due(session=session)


def test_a_run_whose_post_began_is_taken_again_only_while_discord_keeps_its_nonce(grobot_env, caplog):
    """Discord returns the message of a nonce it saw only for "the past few minutes": a run whose post had
    begun when its supervisor stalled is taken again within ``nonce_seconds`` of that (same nonce, same
    words), later dropped and said so (never posted twice); the supervisor that stalled finds its claim
    gone and posts nothing, and cannot confirm (delete) the run another one holds."""
    _, schedule_id = _bot_with_schedule(interval_seconds=3600, grace_seconds=600)
    with session_scope() as session:
        due = session.get(BotSchedule, schedule_id).next_run_at
    with session_scope() as session:
        [first] = schedules.claim_due("A", session=session, now=due, claim_seconds=5)
    with session_scope() as session:  # A's answer is ready: it still holds the claim, its post begins
        assert schedules.hold_run("A", first, 5, sending=True, answer="the words", session=session,
                                  now=due + timedelta(seconds=1)) is None
    with session_scope() as session:  # A stalls; B takes the run within the nonce window
        [again] = schedules.claim_due("B", session=session, now=due + timedelta(seconds=30), claim_seconds=5,
                                      nonce_seconds=120)
    assert again.answer == "the words" and again.nonce(0) == first.nonce(0)
    with session_scope() as session:  # A resumes: not its run any more
        assert schedules.hold_run("A", first, 5, sending=True, answer="other words", session=session,
                                  now=due + timedelta(seconds=31)) == schedules.TAKEN
        schedules.finish_runs([(first, "posted")], "A", session=session)
    with session_scope() as session:  # B's post begins too; then B stalls past the nonce window
        assert schedules.hold_run("B", again, 5, sending=True, answer="the words", session=session,
                                  now=due + timedelta(seconds=32)) is None
    with session_scope() as session:
        assert schedules.claim_due("C", session=session, now=due + timedelta(seconds=125), claim_seconds=5,
                                   nonce_seconds=120) == []
        assert session.get(BotSchedule, schedule_id).last_status.startswith("dropped")
    assert any(r.levelname == "WARNING" and "not posted again (it may have been posted)" in r.getMessage()
               for r in caplog.records)


def test_a_run_of_a_bot_disabled_since_its_claim_is_skipped(grobot_env):
    """The post path asks before it answers and before it posts: a run claimed before the admin disabled the
    bot, paused the schedule or deleted either is skipped, said in plain words; a "Run now" of a paused
    schedule is still posted."""
    bot_id, schedule_id = _bot_with_schedule(interval_seconds=3600)
    with session_scope() as session:
        due = session.get(BotSchedule, schedule_id).next_run_at
        [run] = schedules.claim_due("A", session=session, now=due)
    with session_scope() as session:
        schedules.set_enabled(bot_id, schedule_id, False, session=session)
    with session_scope() as session:
        assert schedules.hold_run("A", run, session=session, now=due) == "the schedule is paused"
        schedules.request_run(bot_id, schedule_id, session=session)
    with session_scope() as session:
        [run_now] = schedules.claim_due("A", session=session)
    with session_scope() as session:
        assert schedules.hold_run("A", run_now, session=session, sending=True) is None
        bots.set_enabled(session.get(Bot, bot_id), False, session=session)
    with session_scope() as session:
        assert schedules.hold_run("A", run_now, session=session) == "the bot is disabled"
        schedules.delete_schedule(bot_id, schedule_id, session=session)
    with session_scope() as session:
        assert schedules.hold_run("A", run_now, session=session) == "the schedule was deleted"
        bots.delete_bot(session.get(Bot, bot_id), session=session)
    with session_scope() as session:
        assert schedules.hold_run("A", run_now, session=session) == "the bot was deleted"
