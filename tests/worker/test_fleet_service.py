"""Leases, status writes and Test Chat claims in the database (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
from datetime import timedelta

from grobot.core.db import session_scope
from grobot.core.models import BotState, BotStatus, Message, MessageStatus, Supervisor, utcnow
from grobot.core.services import bots, fleet, tester_chat
from tests.helpers import make_token


def _bot(name: str, token: bool = True) -> int:
    with session_scope() as session:
        bot = bots.create_bot(session=session, name=name, token=make_token(10**17 + hash(name) % 10**9) if token else None)
        return bot.id


def test_leases_are_exclusive_until_they_expire(any_db_env):
    a, b = _bot("a"), _bot("b")
    with session_scope() as session:
        assert fleet.acquire_leases("s1", [a, b], lease_seconds=15, session=session) == [a, b]
    with session_scope() as session:
        assert fleet.acquire_leases("s2", [a, b], lease_seconds=15, session=session) == []
        assert fleet.renew_leases("s1", [a, b], lease_seconds=15, session=session) == {a, b}
    with session_scope() as session:  # s1's lease on a runs out
        session.get(BotStatus, a).lease_expires_at = fleet.utcnow() - timedelta(seconds=1)
    with session_scope() as session:
        assert fleet.acquire_leases("s2", [a, b], lease_seconds=15, session=session) == [a]
    with session_scope() as session:
        assert fleet.renew_leases("s1", [a, b], lease_seconds=15, session=session) == {b}  # s1 learns it lost a
        fleet.release_lease("s1", b, state=BotState.STOPPED.value, detail="disabled", session=session)
    with session_scope(readonly=True) as session:
        status = session.get(BotStatus, b)
        assert (status.supervisor_id, status.state, status.detail) == (None, "stopped", "disabled")


def test_status_lifecycle_and_fencing_of_a_replaced_process(grobot_env):
    a = _bot("a")
    with session_scope() as session:
        fleet.mark_starting(a, supervisor_id="s1", pid=1000, revision=1, session=session)
    with session_scope() as session:
        assert fleet.mark_online(a, pid=1000, user_id="42", user_name="alpha", guild_count=2, revision=1, session=session)
        assert not fleet.mark_online(a, pid=999, user_id="42", user_name="alpha", guild_count=2, revision=1, session=session)
        assert fleet.bot_heartbeat(a, pid=1000, guild_count=3, session=session)
        assert not fleet.bot_heartbeat(a, pid=999, session=session)  # an old process learns it was replaced
    with session_scope(readonly=True) as session:
        row = [r for r in fleet.fleet_view(session=session) if r.bot_id == a][0]
        assert (row.state, row.pid, row.running_revision) == ("online", 1000, 1)
        assert session.get(BotStatus, a).guild_count == 3
    with session_scope() as session:
        assert fleet.record_crash(a, "the bot process was killed (SIGKILL)", retry_in=1, session=session) == 1
    with session_scope() as session:
        fleet.mark_error(a, fleet.TOKEN_REJECTED, rejected_revision=1, session=session)
    with session_scope(readonly=True) as session:
        row = [r for r in fleet.fleet_view(session=session) if r.bot_id == a][0]
        assert row.state == "error" and not row.wanted and row.crash_count == 1
    with session_scope() as session:  # a new token: wanted again
        bot = bots.get_bot(a, session=session)
        bots.set_token(bot, make_token(10**17 + 5), session=session)
    with session_scope(readonly=True) as session:
        assert [r for r in fleet.fleet_view(session=session) if r.bot_id == a][0].wanted


def test_heartbeats_relayed_by_the_supervisor_are_written_for_the_registered_process_only(any_db_env):
    a, b = _bot("a"), _bot("b")
    with session_scope() as session:
        fleet.acquire_leases("s1", [a, b], lease_seconds=15, session=session)
        for bot_id, pid in ((a, 100), (b, 200)):
            fleet.mark_online(bot_id, pid=pid, user_id="1", user_name="x", guild_count=1, revision=1, session=session)
    at = fleet.utcnow() + timedelta(seconds=30)
    with session_scope() as session:
        fleet.record_heartbeats("s1", [fleet.Heartbeat(a, 100, at, guild_count=7),
                                       fleet.Heartbeat(b, 999, at, guild_count=9)],  # b's old process: ignored
                                session=session)
        fleet.record_heartbeats("s2", [fleet.Heartbeat(b, 200, at, guild_count=9)],  # not b's supervisor: ignored
                                session=session)
    with session_scope(readonly=True) as session:
        first, second = session.get(BotStatus, a), session.get(BotStatus, b)
        assert (fleet._aware(first.heartbeat_at), first.guild_count, first.state) == (at, 7, "online")
        assert fleet._aware(second.heartbeat_at) < at and second.guild_count == 1
    # Written late, a heartbeat of a process that has since stopped, crashed or failed changes nothing...
    with session_scope() as session:
        fleet.release_lease("s1", a, state=BotState.STOPPED.value, detail="disabled", session=session)
        fleet.record_crash(b, "the bot process was killed (SIGKILL)", retry_in=1, session=session)
    with session_scope() as session:
        fleet.record_heartbeats("s1", [fleet.Heartbeat(a, 100, at, 1), fleet.Heartbeat(b, 200, at, 1)], session=session)
    with session_scope(readonly=True) as session:
        assert session.get(BotStatus, a).state == "stopped" and session.get(BotStatus, b).state != "online"
    with session_scope() as session:  # the process said why it exits, and keeps its pid on the row
        fleet.mark_starting(b, supervisor_id="s1", pid=200, revision=1, session=session)
        fleet.mark_error(b, fleet.intent_error(["message_content"]), pid=200, session=session)
    with session_scope() as session:
        fleet.record_heartbeats("s1", [fleet.Heartbeat(b, 200, at, 1)], session=session)
    with session_scope(readonly=True) as session:
        assert session.get(BotStatus, b).state == "error"
    # A process between two gateway sessions is alive, not online: its state is left alone.
    with session_scope() as session:
        fleet.mark_starting(b, supervisor_id="s1", pid=200, revision=1, session=session)
    with session_scope() as session:
        fleet.record_heartbeats("s1", [fleet.Heartbeat(b, 200, at, 4, online=False)], session=session)
    with session_scope(readonly=True) as session:
        row = session.get(BotStatus, b)
        assert (row.state, row.guild_count, fleet._aware(row.heartbeat_at)) == ("starting", 4, at)
    # ...but it counts for a process still starting, before its pid is written.
    with session_scope() as session:
        fleet.mark_starting(a, supervisor_id="s1", pid=None, revision=1, session=session)
    with session_scope() as session:
        fleet.record_heartbeats("s1", [fleet.Heartbeat(a, 300, at, 1)], session=session)
    with session_scope(readonly=True) as session:
        assert session.get(BotStatus, a).state == "online"


def test_stale_heartbeat_shows_offline(grobot_env):
    a = _bot("a")
    with session_scope() as session:
        fleet.mark_online(a, pid=5, user_id="1", user_name="x", guild_count=1, revision=1, session=session)
        session.flush()
        session.get(BotStatus, a).heartbeat_at = fleet.utcnow() - timedelta(seconds=60)
    with session_scope() as session:
        assert fleet.mark_stale_offline(max_age=15, session=session) == [a]
    with session_scope(readonly=True) as session:
        assert session.get(BotStatus, a).state == "offline"


def test_intent_error_names_the_intent():
    assert "Message Content Intent" in fleet.intent_error(["message_content"])
    assert "developer portal" in fleet.intent_error(["members"])


def test_test_chat_claims_are_atomic(any_db_env):
    a = _bot("a", token=False)
    with session_scope() as session:
        conv = tester_chat.create_session(a, session=session)
        ids = [tester_chat.submit(conv.id, f"q{i}", session=session).id for i in range(20)]
    claimed: dict[str, list[int]] = {"s1": [], "s2": []}

    def worker(name: str) -> None:
        while True:
            with session_scope() as session:
                got = tester_chat.claim_pending(name, session=session, limit=3)
            if not got:
                return
            claimed[name].extend(m.id for m in got)

    threads = [threading.Thread(target=worker, args=(n,)) for n in claimed]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(claimed["s1"] + claimed["s2"]) == ids  # every message once, none twice
    with session_scope() as session:
        tester_chat.finish(ids[0], session=session)
        tester_chat.fail(ids[1], "model down", session=session)
        ended = tester_chat.recover_abandoned(session=session, live_supervisor_ids={"s1"})
    assert set(ended) == set(claimed["s2"]) - {ids[0], ids[1]}
    with session_scope(readonly=True) as session:
        rows = {m.id: m for m in tester_chat.messages(conv.id, session=session)}
    assert rows[ids[0]].status == MessageStatus.DONE.value
    assert rows[ids[1]].status == "error" and rows[ids[1]].error == "model down"
    for mid in ended:
        assert rows[mid].status == "error" and "stopped" in rows[mid].error


def test_a_followed_run_is_ended_only_when_its_worker_has_stopped(grobot_env):
    a = _bot("a")
    with session_scope() as session:
        conv = tester_chat.create_session(a, session=session)
        alive_run, gone_run = (tester_chat.submit(conv.id, q, session=session).id for q in ("q1", "q2"))
        fleet.register_supervisor("alive", hostname="h", pid=1, session=session)
        fleet.register_supervisor("gone", hostname="h", pid=2, session=session)
    with session_scope() as session:
        for run_id, holder in ((alive_run, "alive"), (gone_run, "gone")):
            session.get(Message, run_id).status = MessageStatus.RUNNING.value
            session.get(Message, run_id).claimed_by = holder
            session.get(Message, run_id).claimed_at = utcnow() - timedelta(minutes=1)
        session.get(Supervisor, "gone").heartbeat_at = utcnow() - timedelta(minutes=1)  # killed a minute ago
    with session_scope() as session:
        assert tester_chat.end_abandoned_run(alive_run, session=session) is False  # still answering it
        assert tester_chat.end_abandoned_run(gone_run, session=session) is True
    with session_scope(readonly=True) as session:
        assert tester_chat.run_status(alive_run, session=session) == ("running", "")
        assert tester_chat.run_status(gone_run, session=session) == ("error", tester_chat.ABANDONED_ERROR)


def test_a_supervisor_counts_as_stopped_after_three_heartbeats_and_ten_seconds(grobot_env, monkeypatch):
    """Test Chat's "the worker stopped" is the fleet's (a bot is shown offline after the same silence):
    three heartbeats and 10 s of ``GROBOT_HEARTBEAT_SECONDS``. A short heartbeat ends a killed worker's
    answer sooner; the default (5 s: 25 s) keeps a worker silent for 22 s (a busy machine) answering."""
    from grobot.core.settings import get_settings

    a = _bot("a")
    with session_scope() as session:
        conv = tester_chat.create_session(a, session=session)
        runs = {name: tester_chat.submit(conv.id, name, session=session).id for name in ("busy", "gone", "slow")}
        for name in runs:
            fleet.register_supervisor(name, hostname="h", pid=1, session=session)
    with session_scope() as session:
        for name, silent in (("busy", 10), ("gone", 15), ("slow", 22)):
            message = session.get(Message, runs[name])
            message.status, message.claimed_by = MessageStatus.RUNNING.value, name
            message.claimed_at = utcnow() - timedelta(minutes=1)
            session.get(Supervisor, name).heartbeat_at = utcnow() - timedelta(seconds=silent)

    monkeypatch.setenv("GROBOT_HEARTBEAT_SECONDS", "1")  # the tests' workers: stopped after 13 s
    get_settings.cache_clear()
    assert fleet.stale_after_seconds() == 13
    with session_scope() as session:
        assert tester_chat.worker_running(session=session)  # "busy" beat 10 s ago
        assert tester_chat.end_abandoned_run(runs["busy"], session=session) is False
        assert tester_chat.end_abandoned_run(runs["gone"], session=session) is True

    monkeypatch.delenv("GROBOT_HEARTBEAT_SECONDS")  # the default: stopped after 25 s
    get_settings.cache_clear()
    with session_scope() as session:
        assert tester_chat.end_abandoned_run(runs["slow"], session=session) is False
    with session_scope(readonly=True) as session:
        assert [tester_chat.run_status(runs[name], session=session)[0] for name in ("busy", "gone", "slow")] == \
            ["running", "error", "running"]


def test_a_peers_sweep_ends_only_the_answers_the_page_would_end(grobot_env, monkeypatch):
    """A supervisor's sweep ends another supervisor's Test Chat answers by the page's rule (silent for
    :func:`fleet.stale_after_seconds`: 25 s by default), not after one lease (15 s): a busy peer silent
    for 22 s keeps its answer, one silent for 30 s has stopped; the sweeping supervisor's own answer stays."""
    from bot_worker.supervisor import Supervisor as SupervisorHost
    from bot_worker.supervisor_config import SupervisorConfig
    from grobot.core.settings import get_settings

    for name in ("GROBOT_SUPERVISOR_ID", "GROBOT_HEARTBEAT_SECONDS", "GROBOT_SPAWN"):
        monkeypatch.setenv(name, "")  # the supervisor sets some for its bots: each is restored after the test
        monkeypatch.delenv(name)
    get_settings.cache_clear()
    sweeper = SupervisorHost(config=SupervisorConfig())
    a = _bot("a")
    with session_scope() as session:
        conv = tester_chat.create_session(a, session=session)
        holders = {"busy": 22, "gone": 30, sweeper.supervisor_id: 40}  # seconds since the last heartbeat
        runs = {name: tester_chat.submit(conv.id, name, session=session).id for name in holders}
        for name in holders:
            fleet.register_supervisor(name, hostname="h", pid=1, session=session)
    with session_scope() as session:
        for name, silent in holders.items():
            message = session.get(Message, runs[name])
            message.status, message.claimed_by = MessageStatus.RUNNING.value, name
            message.claimed_at = utcnow() - timedelta(minutes=1)
            session.get(Supervisor, name).heartbeat_at = utcnow() - timedelta(seconds=silent)

    assert fleet.stale_after_seconds() == 25 and sweeper.config.lease_seconds == 15
    sweeper._sweep()
    with session_scope(readonly=True) as session:
        assert {name: tester_chat.run_status(run, session=session) for name, run in runs.items()} == {
            "busy": ("running", ""), "gone": ("error", tester_chat.ABANDONED_ERROR),
            sweeper.supervisor_id: ("running", "")}
