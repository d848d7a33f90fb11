"""The fleet end to end: a real supervisor, real bot processes, the fake Discord and a fake LLM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from grobot.core.db import session_scope
from grobot.core.link_client import find_url
from grobot.core.services import bots, conversations, mcp_servers, tester_chat
from tests.helpers import pid_alive, wait_for
from tests.worker.harness import ROOT, fleet

pytestmark = pytest.mark.slow


def test_three_bots_answer_only_when_mentioned_and_change_alone(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        a, b, c = (world.add_bot(name, personality=f"You are {name}.") for name in ("alpha", "beta", "gamma"))
        world.start_supervisor()
        for bot_id in (a, b, c):
            world.wait_online(bot_id)
        status = world.status(a)
        assert status.discord_user_name == "alpha" and status.guild_count == 1

        # A mention is answered by the mentioned bot only, as a reply to the user's message.
        asked = world.mention(b, "hello there")
        reply = world.wait_reply(asked, containing="hello there")
        assert reply["author"]["id"] == str(world.discord_ids[b])
        quiet = world.discord.send_message(world.discord.channel_id, "nobody is mentioned here")
        # Each bot answers a later message: it read the earlier ones first and had its chance to (wrongly) answer them.
        # (From bob: alice is in beta's cooldown.)
        later = {bot_id: world.mention(bot_id, f"later for {bot_id}", author=world.discord.bob) for bot_id in (a, b, c)}
        for bot_id, message in later.items():
            world.wait_reply(message, containing=f"later for {bot_id}")
        assert len(world.discord.replies_to(asked["id"])) == 1
        assert world.discord.replies_to(quiet["id"]) == []
        for other in (a, c):
            assert [m["id"] for m in world.discord.channel_messages(world.discord.channel_id, bot_id=world.discord_ids[other])] \
                == [world.discord.replies_to(later[other]["id"])[0]["id"]]

        pids = {bot_id: world.status(bot_id).pid for bot_id in (a, b, c)}
        sessions = {bot_id: world.discord.session_of(world.discord_ids[bot_id]) for bot_id in (a, b, c)}

        # Personality: applies to the next message, no restart.
        with session_scope() as session:
            bots.update_bot(bots.get_bot(a, session=session), {"personality": "You are a pirate."}, session=session)
        asked = world.mention(a, "ahoy")
        world.wait_reply(asked, containing="ahoy")
        assert any("You are a pirate." in str(req.get("messages")) for req in world.llm.chat_requests())

        # Disable beta: its process stops, the others are untouched.
        with session_scope() as session:
            bots.update_bot(bots.get_bot(b, session=session), {"enabled": False}, session=session)
        world.wait_state(b, "stopped")
        wait_for(lambda: not pid_alive(pids[b]), 10)
        wait_for(lambda: world.discord.session_of(world.discord_ids[b]) is None, 10)

        # A new token for gamma: gamma alone reconnects with a new process and session.
        token, _ = world.discord.new_bot_token(user_id=world.discord_ids[c])
        with session_scope() as session:
            bots.set_token(bots.get_bot(c, session=session), token, session=session)
        wait_for(lambda: (world.status(c).pid not in (None, pids[c]) and world.status(c).state == "online"
                          and world.discord.session_of(world.discord_ids[c]) not in (None, sessions[c])), 20)

        # Delete alpha, add delta.
        with session_scope() as session:
            bots.delete_bot(bots.get_bot(a, session=session), session=session)
        wait_for(lambda: not pid_alive(pids[a]), 10)
        d = world.add_bot("delta")
        world.wait_online(d)
        asked = world.mention(d, "new here")
        world.wait_reply(asked, containing="new here")

        new_gamma = world.status(c).pid
        assert world.discord.session_of(world.discord_ids[c]) not in (None, sessions[c])
        assert pid_alive(new_gamma)
        # Every change touched one bot only: gamma was never restarted by the others' changes.
        assert world.discord.identify_count(world.discord_ids[c]) == 2

        # SIGTERM: every bot process is gone within 10 s.
        supervisor = world.supervisors[0]
        running = [world.status(bot_id).pid for bot_id in (c, d)]
        started = time.monotonic()
        supervisor.send_signal(signal.SIGTERM)
        supervisor.wait(10)
        wait_for(lambda: not any(pid_alive(pid) for pid in running), 10 - (time.monotonic() - started))
        assert supervisor.returncode == 0
        assert world.status(c).state == "stopped"
        log = world.log()
        assert "Housekeeping" not in log and "Traceback" not in log, log


def test_faults_crash_invalid_token_missing_intent(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        good = world.add_bot("good")
        bad = world.add_bot("bad")
        nointent = world.add_bot("nointent")
        closed = world.add_bot("closed")
        world.discord.revoke(_token_of(bad))  # 401 at login
        world.discord.reject_at_identify(_token_of(closed))  # gateway close 4004
        world.discord.deny_intent(world.discord_ids[nointent], "message_content")
        world.start_supervisor(GROBOT_BACKOFF_INITIAL="0.5", GROBOT_SPAWN="exec")  # one interpreter per bot
        world.wait_online(good)

        status = world.wait_state(bad, "error")
        assert "Discord rejected the token" in status.detail
        status = world.wait_state(closed, "error")
        assert "Discord rejected the token" in status.detail
        status = world.wait_state(nointent, "error")
        assert "Message Content Intent" in status.detail and "developer portal" in status.detail

        # kill -9 of a bot process: it comes back online with a new process.
        old = world.status(good).pid
        os.kill(old, signal.SIGKILL)
        wait_for(lambda: world.status(good).pid not in (None, old) and world.status(good).state == "online", 15)
        assert world.status(good).crash_count == 1
        assert "SIGKILL" in world.status(good).last_error
        asked = world.mention(good, "still there?")
        world.wait_reply(asked, containing="still there?")
        # An exec'd bot process gets its supervisor's link address, the one advertised for the web app
        # (its memory goes over it: tests/worker/test_memory_e2e.py).
        with session_scope(readonly=True) as session:
            link_url = find_url(session=session)
        with open(f"/proc/{world.status(good).pid}/environ", "rb") as handle:
            assert link_url and f"GROBOT_SUPERVISOR_URL={link_url}".encode() in handle.read().split(b"\0")

        # The rejected token is not retried: one login attempt, however long we wait (here: until the
        # supervisor has polled twice after the retry would have been due).
        wait_polls_after(world.supervisors[0], seconds=0.5)
        logins = world.discord.calls_by(world.discord_ids[bad], "GET", r"^/users/@me$")
        assert len(logins) <= 1 and world.status(bad).state == "error"
        assert world.discord.identify_count(world.discord_ids[closed]) == 0
        assert len(world.discord.calls_by(world.discord_ids[closed], "GET", r"^/users/@me$")) == 1
        # A new token is tried at once.
        token, _ = world.discord.new_bot_token(user_id=world.discord_ids[bad])
        with session_scope() as session:
            bots.set_token(bots.get_bot(bad, session=session), token, session=session)
        world.wait_online(bad)

        # Test Chat: a pending message is claimed and answered.
        with session_scope() as session:
            conv = tester_chat.create_session(good, session=session)
            mid = tester_chat.submit(conv.id, "from the web", session=session).id
        wait_for(lambda: _message_status(conv.id, mid) == "done", 20)
        with session_scope(readonly=True) as session:
            answers = [m.content for m in tester_chat.messages(conv.id, session=session) if m.role == "assistant"]
        assert len(answers) == 1 and "from the web" in answers[0]


def test_second_supervisor_on_sqlite_refuses_and_restart_adopts(grobot_env, tmp_path):
    with session_scope() as session:
        mcp_servers.create_server(session=session, name="time",
                                  command=str(Path(sys.executable).parent / "mcp-server-time"))
    with fleet(grobot_env, tmp_path) as world:
        a = world.add_bot("solo")
        first = world.start_supervisor()
        world.wait_online(a)
        # The supervisor's scheduled refresh caches the MCP servers' tool lists for the web app.
        wait_for(lambda: _cached_tools("time"), 30, message="tool list of 'time' cached by the supervisor")
        assert "get_current_time" in _cached_tools("time")
        # A server added from a shell without a test is listed within a poll, not at the 5-minute refresh.
        with session_scope() as session:
            mcp_servers.create_server(session=session, name="later",
                                      command=str(Path(sys.executable).parent / "mcp-server-time"))
        wait_for(lambda: _cached_tools("later"), 15, message="tool list of 'later' cached within a poll")
        second = subprocess.run([sys.executable, "-m", "bot_worker"], env=world.environ(), cwd=ROOT,
                                capture_output=True, text=True, timeout=30)
        assert second.returncode == 2
        assert "another supervisor is already running" in second.stderr
        old_pid = world.status(a).pid

        # The supervisor dies hard: its bot goes with it and the next supervisor runs it again, once.
        first.kill()
        first.wait(5)
        wait_for(lambda: not pid_alive(old_pid), 10)
        world.start_supervisor()
        world.wait_started()  # (its imports take many seconds on a loaded machine)
        wait_for(lambda: world.status(a).pid not in (None, old_pid) and world.status(a).state == "online", 45,
                 message=lambda: f"the bot online again under the next supervisor; log:\n{world._tail()}")
        wait_for(lambda: world.discord.online_bots() == {world.discord_ids[a]}, 10)
        assert sum(1 for s in world.discord.sessions.values()
                   if s.bot_id == world.discord_ids[a] and s.ws is not None and not s.ws.closed) == 1


def wait_polls_after(supervisor: subprocess.Popen[bytes], *, seconds: float, timeout: float = 30) -> None:
    """Wait until ``supervisor`` has polled the database twice after ``seconds`` from now (a later
    event that proves a (wrong) action due by then had its chance)."""
    from sqlmodel import select

    from grobot.core.models import Supervisor

    def polled_at() -> datetime | None:
        with session_scope(readonly=True) as session:
            row = session.exec(select(Supervisor).where(Supervisor.pid == supervisor.pid)).first()
            return _aware(row.heartbeat_at) if row is not None else None

    mark = datetime.now(UTC) + timedelta(seconds=seconds)
    first = wait_for(lambda: (at := polled_at()) is not None and at > mark and at, timeout,
                     message=f"a poll of supervisor {supervisor.pid} after {mark}")
    wait_for(lambda: (at := polled_at()) is not None and at > first, timeout,
             message=f"a second poll of supervisor {supervisor.pid}")


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _cached_tools(name: str) -> list[str]:
    with session_scope(readonly=True) as session:
        server = mcp_servers.get_server(name, session=session)
        return [tool["name"] for tool in server.tools_cache or []]


def _token_of(bot_id: int) -> str:
    with session_scope(readonly=True) as session:
        return bots.get_token(bots.get_bot(bot_id, session=session))


def _message_status(conversation_id: int, message_id: int) -> str | None:
    with session_scope(readonly=True) as session:
        for m in tester_chat.messages(conversation_id, session=session):
            if m.id == message_id:
                return m.status
    return None


# Leases of 8 s: a failover within seconds, and a supervisor stops its bots when its polls have not renewed
# them for 3.5 s (with 5 s, after 1.7 s: a loaded machine's slow polls fenced the bots just started, again and again).
PG_ENV = {"GROBOT_LEASE_SECONDS": "8"}


def _process_state(pid: int) -> str:
    """State, kernel wait channel and thread count of ``pid`` (for a failure message)."""
    try:
        status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status") if ":" in line)
        wchan = open(f"/proc/{pid}/wchan").read()
        return f"pid {pid}: state {status['State'].strip()}, threads {status['Threads'].strip()}, waiting in {wchan}"
    except OSError as exc:
        return f"pid {pid}: {exc}"


def _holder(world, bot_id: int) -> str | None:
    status = world.status(bot_id)
    return status.supervisor_id if status is not None else None


def test_two_supervisors_on_postgresql_fail_over_without_duplicates(pg_env, tmp_path):
    with fleet(pg_env, tmp_path) as world:
        a, b = world.add_bot("one"), world.add_bot("two")
        first = world.start_supervisor(**PG_ENV)
        world.wait_online(a)
        world.wait_online(b)
        holder = _holder(world, a)
        assert holder and holder.split(":")[1] == str(first.pid) and _holder(world, b) == holder
        second = world.start_supervisor(**PG_ENV)
        world.wait_started()
        before = world.mention(a, "before failover")
        world.wait_reply(before, containing="before failover", timeout=60)  # (two supervisors on a loaded machine)

        old_pids = {bot_id: world.status(bot_id).pid for bot_id in (a, b)}
        first.kill()  # kill -9: no chance to clean up
        killed_at = time.monotonic()
        for bot_id in (a, b):
            wait_for(lambda bot_id=bot_id: (_holder(world, bot_id) or "").split(":")[1:2] == [str(second.pid)]
                     and world.status(bot_id).state == "online"
                     and world.discord.session_of(world.discord_ids[bot_id]) is not None, 30)
        assert time.monotonic() - killed_at < 30
        assert all(world.status(bot_id).pid != old_pids[bot_id] for bot_id in (a, b))

        after = {bot_id: world.mention(bot_id, f"after failover {bot_id}") for bot_id in (a, b)}
        for bot_id, msg in after.items():
            try:
                world.wait_reply(msg, containing=f"after failover {bot_id}", timeout=60)
            except AssertionError as exc:  # say where each side stood (seen once in a full run under load)
                sessions = [(s.bot_id, s.ws is not None and not s.ws.closed) for s in world.discord.sessions.values()]
                raise AssertionError(f"{exc}\nlog of the killed supervisor:\n{world.log(0)[-6000:]}\n"
                                     f"log of the other:\n{world.log(1)[-8000:]}\nsessions (bot, open): {sessions}\n"
                                     f"old pids {old_pids}, now {[world.status(b).pid for b in (a, b)]}") from None
        # A later message answered: a (wrong) second answer to the earlier ones had its chance to arrive.
        for bot_id in (a, b):  # (from bob: alice is in the bots' cooldown)
            world.wait_reply(world.mention(bot_id, f"later {bot_id}", author=world.discord.bob), containing=f"later {bot_id}")
        for msg in (before, *after.values()):
            assert len(world.discord.replies_to(msg["id"])) == 1
        for bot_id in (a, b):
            assert world.discord.max_open_sessions[world.discord_ids[bot_id]] == 1


def test_frozen_supervisor_is_fenced_before_another_takes_over(pg_env, tmp_path):
    with fleet(pg_env, tmp_path) as world:
        a = world.add_bot("fenced")
        first = world.start_supervisor(**PG_ENV)
        world.wait_online(a)
        old_pid = world.status(a).pid
        second = world.start_supervisor(**PG_ENV)
        world.wait_started()
        first.send_signal(signal.SIGSTOP)  # alive but silent: it renews nothing, stops nothing
        try:
            # The bot process stops itself before its lease can pass...
            try:
                wait_for(lambda: not pid_alive(old_pid), 30)
            except AssertionError as exc:  # say where the bot stands (seen once in a full run)
                raise AssertionError(f"{exc}\n{_process_state(old_pid)}\nlog of the frozen supervisor:\n"
                                     + "\n".join(world.log(0).splitlines()[-40:])) from None
            # ...and the other supervisor runs it, never alongside the old process.
            wait_for(lambda: (_holder(world, a) or "").split(":")[1:2] == [str(second.pid)]
                     and world.status(a).state == "online" and world.status(a).pid != old_pid
                     and world.discord.session_of(world.discord_ids[a]) is not None, 30)
            assert world.discord.max_open_sessions[world.discord_ids[a]] == 1
            asked = world.mention(a, "who answers?")
            # (a write may wait for the frozen supervisor's open transaction: PostgreSQL ends it after 10 s idle)
            world.wait_reply(asked, containing="who answers?", timeout=45)
        finally:
            first.send_signal(signal.SIGCONT)
        # The woken supervisor sees it lost the lease and does not start the bot again: it notices its
        # bot process ended, then polls on past the time a restart would be due.
        wait_for(lambda: re.search(rf"Bot {a}: (the process stopped itself|process {old_pid} stopped)", world.log(0)), 30,
                 message=lambda: f"the woken supervisor noticing its bot process ended; log:\n{world.log(0)[-3000:]}")
        wait_polls_after(first, seconds=1.0)  # the restart backoff
        assert world.discord.max_open_sessions[world.discord_ids[a]] == 1
        assert _holder(world, a).split(":")[1] == str(second.pid) and world.status(a).pid != old_pid
        world.wait_reply(world.mention(a, "still one?", author=world.discord.bob), containing="still one?")
        assert len(world.discord.replies_to(asked["id"])) == 1


def _connections_by_name() -> dict[str, int]:
    """PostgreSQL connections to the test's database, by application name (but the test's own)."""
    from sqlalchemy import text

    with session_scope(readonly=True) as session:
        rows = session.execute(text("SELECT application_name, count(*) FROM pg_stat_activity "
                                    "WHERE datname = current_database() AND pid <> pg_backend_pid() GROUP BY 1"))
        return {name: count for name, count in rows}


def test_bot_processes_hold_no_postgresql_connection(pg_env, tmp_path):
    """Bots reach the database through their supervisor only: the fleet's connections do not
    grow with its bots (PostgreSQL allows 100 by default), idle or answering."""
    with fleet(pg_env, tmp_path) as world:
        ids = [world.add_bot(f"idle{i}") for i in range(3)]
        world.start_supervisor(**PG_ENV)
        for bot_id in ids:
            world.wait_online(bot_id)
        seen = {bot_id: world.status(bot_id).heartbeat_at for bot_id in ids}
        wait_for(lambda: all(world.status(bot_id).heartbeat_at > seen[bot_id] and world.status(bot_id).state == "online"
                             for bot_id in ids), 30, message="every bot online, its heartbeat written again")
        names = _connections_by_name()
        assert "grobot-worker" in names and not any(name.startswith("grobot-bot-") for name in names), names
        a, b, c = ids
        asked = world.mention(a, "still there?")
        world.wait_reply(asked, containing="still there?")
        names = _connections_by_name()
        assert not any(name.startswith("grobot-bot-") for name in names), names

        def stored() -> list[str]:  # the run, as the supervisor stored it for the bot
            with session_scope(readonly=True) as session:
                history = conversations.load_history_by_key(session=session, bot_id=a,
                                                            key=f"guild:{world.discord.channel_id}")[1]
            return [m["content"] for m in history]

        wait_for(lambda: len(stored()) == 2 and "still there?" in stored()[-1], 10)

        # Every bot sees every message of the guild; the others ignore it with the settings they
        # read last (unchanged, their supervisor says). A changed rule still reaches them, without a restart.
        with session_scope() as session:
            bots.update_bot(bots.get_bot(b, session=session), {"keywords": "banana"}, session=session)

        def answered(text: str) -> bool:
            try:
                world.wait_reply(world.discord.send_message(world.discord.channel_id, text), containing=text,
                                 timeout=3)
                return True
            except AssertionError:
                return False

        wait_for(lambda: answered(f"banana bread {time.monotonic()}"), 30, interval=0)
        assert not any(name.startswith("grobot-bot-") for name in _connections_by_name())


def test_database_outage_is_survived_and_recovered(pg_env, tmp_path):
    import psycopg2
    from sqlalchemy.engine import make_url

    url = make_url(pg_env.database_url)
    admin_dsn = f"host={url.host} port={url.port} user={url.username} dbname=postgres"

    def rename(src: str, dst: str) -> None:
        conn = psycopg2.connect(admin_dsn)
        conn.autocommit = True
        try:
            def attempt() -> bool:
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                                "AND pid <> pg_backend_pid()", (src,))
                    try:
                        cur.execute(f'ALTER DATABASE "{src}" RENAME TO "{dst}"')
                        return True
                    except psycopg2.Error:
                        return False  # a client reconnected in between: again

            wait_for(attempt, 15, interval=0.01)
        finally:
            conn.close()

    with fleet(pg_env, tmp_path) as world:
        a = world.add_bot("steady")
        supervisor = world.start_supervisor(**PG_ENV)
        world.wait_online(a)
        from grobot.core.db import dispose_engines

        dispose_engines()  # the test's own pooled connections would block the rename
        rename(url.database, url.database + "_away")  # the database is gone for everyone
        try:
            wait_for(lambda: "Database unreachable" in world.log(), 15)
            assert supervisor.poll() is None  # the supervisor keeps running and retrying
        finally:
            rename(url.database + "_away", url.database)
        # Back: the same supervisor (no restart) runs the bot again and it answers.
        wait_for(lambda: "Database reachable again" in world.log(), 20)
        wait_for(lambda: world.status(a).state == "online" and world.discord.session_of(world.discord_ids[a]), 30)
        asked = world.mention(a, "are you back?")
        world.wait_reply(asked, containing="are you back?")
        assert supervisor.poll() is None
        assert world.discord.max_open_sessions[world.discord_ids[a]] == 1


def test_unreachable_discord_is_one_clear_line_and_retried(grobot_env, tmp_path):
    """No network, a wrong proxy or DNS failure: the admin reads "cannot reach Discord", not a traceback."""
    import socket

    from sqlmodel import select

    from grobot.core.models import LogEntry

    with socket.socket() as probe:  # a port nobody listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    with fleet(grobot_env, tmp_path) as world:
        bot = world.add_bot("isolated")
        world.start_supervisor(GROBOT_BACKOFF_INITIAL="0.2", DISCORD_API_BASE=f"http://127.0.0.1:{closed_port}/api/v10")

        def failures() -> list[str]:
            with session_scope(readonly=True) as session:
                return list(session.exec(select(LogEntry.message).where(  # the bot process's own lines
                    LogEntry.bot_id == bot, LogEntry.level == "ERROR", LogEntry.logger == "bot_worker.bot_process")).all())

        lines = wait_for(lambda: (found := failures()) and len(found) >= 2 and found, 30,
                         message=lambda: f"two failed attempts; log:\n{world._tail()}")  # retried with backoff
        assert all(line.startswith(f"Cannot reach Discord at http://127.0.0.1:{closed_port}/api/v10: ")
                   and "Traceback" not in line for line in lines)
        # What the Bots page shows between two attempts: the bot's own reason, and when it tries again.
        status = wait_for(lambda: (s := world.status(bot)) and s.detail.startswith(
            f"cannot reach Discord: Cannot connect to host 127.0.0.1:{closed_port}") and "; restarting in" in s.detail
            and s, 20, message="the status between two attempts")
        assert status.state == "error" and status.crash_count == 0  # not a crash of the bot
