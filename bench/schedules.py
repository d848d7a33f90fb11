"""Scheduled posts across a fleet on two supervisors: does every run fire once, on time, across a supervisor kill?

    .venv/bin/python bench/schedules.py [--bots 50] [--schedules 100] [--seconds 90] [--kill-at 30]

Starts a throwaway PostgreSQL cluster, two supervisors and N bots against the fake Discord, gives
them the schedules (fixed texts on intervals of 20 and 30 s, spread over the bots), kills one
supervisor (SIGKILL) at ``--kill-at`` seconds while the fake Discord holds one of its posts (lost on
the way: the run it was posting must be taken again once its claim expired), and watches the posts for ``--seconds``. Each post is
matched to the run it answers; it prints the runs due, those posted once, twice (duplicates) and never
(lost) as the channel shows them, and how late the posts were (p50, p95, max; a run is on time
within 2 s), for the runs of the surviving supervisor's bots and for those of the killed one's (any
live supervisor posts a due run; a run the killed one had claimed waits for its claim to expire).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))

from fleet import Bench, pct, wait_until  # noqa: E402

from tests.pg import PgCluster  # noqa: E402

FAST = {"GROBOT_POLL_SECONDS": "1", "GROBOT_HEARTBEAT_SECONDS": "2", "GROBOT_LEASE_SECONDS": "10",
        "GROBOT_GUILD_READY_TIMEOUT": "0.1", "GROBOT_MEMORY_PRELOAD": "0"}
ON_TIME = 2.0
DISCORD_EPOCH_MS = 1420070400000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bots", type=int, default=50)
    parser.add_argument("--schedules", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--kill-at", type=float, default=30.0, help="kill one supervisor after this (0: none)")
    args = parser.parse_args()
    cluster = PgCluster().start()
    try:
        url = cluster.create_database("grobot")
        with tempfile.TemporaryDirectory(prefix="grobot-bench-") as tmp:
            bench = Bench(Path(tmp))
            os.environ["DATABASE_URL"] = url
            from sqlmodel import col, select

            from grobot.core import migrations
            from grobot.core.db import dispose_engines, session_scope
            from grobot.core.models import BotSchedule, BotScheduleRun, BotStatus
            from grobot.core.services import schedules
            from grobot.core.settings import get_settings

            get_settings.cache_clear()
            dispose_engines()
            migrations.upgrade()
            from tests.fakes.llm import use_fake_llm

            use_fake_llm(bench.llm)
            supervisors: list[subprocess.Popen[bytes]] = []
            try:
                ids = bench.add_bots(args.bots)
                for i in range(2):
                    log = open(Path(tmp) / f"supervisor{i}.log", "ab")
                    supervisors.append(subprocess.Popen([sys.executable, "-m", "bot_worker"], env=bench.env(**FAST),
                                                        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))
                wait_until(lambda: bench.all_online(ids), 600, f"{args.bots} bots online")
                channel = str(bench.discord.channel_id)
                with session_scope() as session:
                    made = [schedules.create_schedule(ids[i % len(ids)], channel_id=channel, content=f"run of s{i}",
                                                      interval_seconds=20 if i % 2 == 0 else 30, session=session)
                            for i in range(args.schedules)]
                    plan = {f"run of s{i}": (row.bot_id, row.next_run_at.timestamp(), row.interval_seconds)
                            for i, row in enumerate(made)}
                    schedule_ids = [row.id for row in made]
                started = time.time()
                killed_at, killed_bots, caught = None, set(), set()
                ids_of = {f"run of s{i}": row_id for i, row_id in enumerate(schedule_ids)}
                while time.time() - started < args.seconds:
                    if args.kill_at and killed_at is None and time.time() - started >= args.kill_at:
                        # The kill lands while a post is under way: the next one is lost on the way to
                        # Discord (never made), and the supervisor that sent it is the one killed.
                        hold = bench.discord.hold(after=False)
                        hold.reached.wait(30)
                        with session_scope(readonly=True) as session:
                            holders = {s.bot_id: s.supervisor_id or "" for s in session.exec(
                                select(BotStatus)).all()}
                            claims = session.exec(select(BotScheduleRun).order_by(col(BotScheduleRun.claimed_at))).all()
                            in_flight = {(row.schedule_id, row.due_at.timestamp()): row.owner for row in claims}
                        held = {proc.pid: {b for b, h in holders.items() if h.split(":")[1:2] == [str(proc.pid)]}
                                for proc in supervisors}
                        owners = {owner.split(":")[1] for owner in in_flight.values()}
                        victim = next((p for p in supervisors if str(p.pid) in owners), supervisors[0])
                        killed_bots = held[victim.pid]
                        victim.send_signal(signal.SIGKILL)
                        victim.wait(10)
                        hold.release()
                        killed_at = time.time()
                        caught = {key for key, owner in in_flight.items() if owner.split(":")[1] == str(victim.pid)}
                        print(f"killed a supervisor (SIGKILL) at {killed_at - started:.0f} s while Discord held one of its "
                              f"posts: {len(caught)} run(s) it had claimed, {len(killed_bots)} bots it ran")
                    time.sleep(0.5)
                end = time.time()
                with session_scope() as session:
                    for row in session.exec(select(BotSchedule).order_by(col(BotSchedule.id))).all():
                        row.enabled, row.next_run_at = False, None

                def posts() -> dict[str, list[float]]:
                    """The times each schedule's text was posted, as the channel shows it (a post Discord
                    returned for a nonce it saw counts once); the i-th post answers its i-th run."""
                    found: dict[str, list[float]] = {text: [] for text in plan}
                    for message in bench.discord.channel_messages(channel):
                        text = str(message.get("content") or "")
                        if text in found:  # a message id holds its time (ms since Discord's epoch)
                            found[text].append(((int(message["id"]) >> 22) + DISCORD_EPOCH_MS) / 1000)
                    return found

                def expected(first: float, every: float) -> int:  # the runs surely due before the end
                    return sum(1 for k in range(int(max(0.0, end - first) // every) + 1) if first + k * every <= end - 1)

                # The posts handed over just before the end: wait for every run due (a lost one stays missing).
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and any(len(times) < expected(first, every) for text, times in
                                                          posts().items() for _, first, every in (plan[text],)):
                    time.sleep(0.2)
                posted = posts()
                lateness: dict[bool, list[float]] = {True: [], False: []}  # by: of a killed supervisor's bot
                due_count, once, twice, lost = 0, 0, 0, []
                phases: dict[str, list[float]] = {}
                in_flight_late: list[float] = []  # the runs the killed supervisor had claimed, not confirmed
                for text, (bot_id, first, every) in plan.items():
                    dues = [first + k * every for k in range(int(max(0.0, end - first) // every) + 1)
                            if first + k * every <= end]
                    certain = [d for d in dues if d <= end - 1]  # (one due in the last second may not be claimed)
                    times = sorted(posted[text])
                    due_count += len(certain)
                    once += min(len(times), len(certain))
                    twice += max(0, len(times) - len(dues))
                    lost += [(text, d) for d in certain[len(times):]]
                    for at, due in zip(times, dues, strict=False):
                        lateness[bot_id in killed_bots].append(at - due)
                        if any(key[0] == ids_of[text] and abs(key[1] - due) < 0.01 for key in caught):
                            in_flight_late.append(at - due)
                        phase = ("before the kill" if killed_at is None or due < killed_at
                                 else "during the failover" if bot_id in killed_bots and at - due > ON_TIME
                                 and due < killed_at + 60 else "after the kill")
                        phases.setdefault(phase, []).append(at - due)
                print(f"{args.schedules} schedules on {args.bots} bots, two supervisors, {args.seconds:.0f} s: "
                      f"{due_count} runs due, {once} posted once, {twice} posted twice, {len(lost)} lost")
                for killed, values in ((False, lateness[False]), (True, lateness[True])):
                    if not values:
                        continue
                    on_time = sum(1 for v in values if v <= ON_TIME)
                    print(f"  {'bots of the killed supervisor' if killed else 'bots of the other supervisor '}: "
                          f"late p50 {1000 * statistics.median(values):6.0f} ms, p95 {1000 * pct(values, 95):6.0f} ms, "
                          f"max {max(values):5.1f} s; {on_time}/{len(values)} within {ON_TIME:.0f} s")
                if in_flight_late:
                    print(f"  runs the killed one had claimed: {len(in_flight_late):4} late p50 "
                          f"{1000 * statistics.median(in_flight_late):6.0f} ms, max {max(in_flight_late):5.1f} s")
                for phase, values in phases.items():
                    print(f"  runs due {phase:20}: {len(values):4} late p50 {1000 * statistics.median(values):6.0f} ms, "
                          f"max {max(values):5.1f} s")
                if lost:
                    print("  lost: " + ", ".join(f"{t} due {datetime.fromtimestamp(d):%H:%M:%S}" for t, d in lost[:10]))
            finally:
                for proc in supervisors:
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGTERM)
                for proc in supervisors:
                    try:
                        proc.wait(30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                bench.supervisor = None
                bench.close()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
