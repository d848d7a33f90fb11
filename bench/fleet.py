"""Benchmark of the bot fleet against the fake Discord and a fake LLM (instant unless ``--llm-ms``).

    .venv/bin/python bench/fleet.py [--sizes 10,50,100] [--messages 40] [--reconciles 20] [--memories N] [--stages]
                                    [--llm-ms N] [--access]

Prints: time until N bots are online; RSS per idle bot process; idle CPU of the fleet (and
of its supervisor, which receives the bots' heartbeats); reconcile latency (database
change -> bot online again) p50/p95 with the default poll period; platform overhead per
message (MESSAGE_CREATE -> first reply POST; end of the LLM stream -> completing edit)
p50/p95; bot CPU time per message, and the supervisor's (it reads and writes for the bots).
``--memories N``: the measured bot has N memories stored first (a bot after its first
conversations: each message it answers is then looked up in its memory). ``--stages``: also
where the first reply's time goes, from the fleet's own timings (GROBOT_TRACE_TIMINGS): when the
supervisor's read reached the bot and, inside that read, the Tool Router's vector, the database
and the memories and scores; when the bot had its tools and the first LLM token. ``--llm-ms N``:
the fake LLM waits N ms before each answer (a model's time to its first token; default 0, instant),
which shows what the platform's LLM calls per message cost against a real model. ``--access``: the
measured bot has a blocked user and role, blocked words and patterns, and before each measured message
a blocked user writes to it (no answer, no LLM call: checked), to show what that costs the others.

``BENCH_PROFILE=DIR`` (environment): the supervisor and the measured bot are profiled (cProfile on
each thread's CPU clock, through the bench's ``sitecustomize``, switched on by a signal only
during GroBot's measured rounds); their ``.prof`` files land in DIR and the bench prints each one's
costliest functions per message. The profiler slows both processes: read where the CPU goes, not
how much. ``BENCH_SQL_TEXTS=DIR``: the supervisor's SQL statements, each with how often it ran from the
warm-up to the end of the measured rounds, in DIR/<pid>.sql.txt.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers import pid_alive  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PROFILE_DIR = os.environ.get("BENCH_PROFILE", "")
PROFILE_ON, PROFILE_OFF = signal.SIGRTMIN + 3, signal.SIGRTMIN + 4  # SIGUSR1 is the supervisor's faulthandler
SQL_COUNT = signal.SIGRTMIN + 5

# BENCH_PROFILE: installed in every process of the fleet (PYTHONPATH); a process profiles from
# PROFILE_ON to PROFILE_OFF: its event loop's thread, and each job of a thread pool while it runs,
# each on its thread's CPU clock; at PROFILE_OFF it writes what it has so far to DIR/<pid>.prof.
PROFILE_SITECUSTOMIZE = r'''
import os, signal

_OUT = os.environ.get("BENCH_PROFILE_OUT", "")
if _OUT:  # the profiler's modules only where it profiles (an idle bot's memory is measured too)
    import cProfile, pstats, threading, time
    from concurrent.futures import thread as _pool
_state = {"on": False, "profiles": {}}


def _profile():
    key = threading.get_ident()
    found = _state["profiles"].get(key)
    if found is None:
        found = _state["profiles"][key] = cProfile.Profile(time.thread_time_ns, 1e-9)
    return found


_run = _pool._WorkItem.run if _OUT else None


def _profiled_run(self):
    if not _state["on"]:
        return _run(self)
    profile = _profile()
    profile.enable()
    try:
        return _run(self)
    finally:
        profile.disable()


def _on(*_):
    _state["on"] = True
    _profile().enable()


def _off(*_):
    _profile().disable()
    _state["on"] = False
    stats = None
    for profile in list(_state["profiles"].values()):
        profile.create_stats()
        if not profile.stats:
            continue
        if stats is None:
            stats = pstats.Stats(profile)
        else:
            stats.add(profile)
    if stats is not None:
        stats.dump_stats(os.path.join(_OUT, f"{os.getpid()}.prof"))


if _OUT:
    _pool._WorkItem.run = _profiled_run
    signal.signal(signal.SIGRTMIN + 3, _on)
    signal.signal(signal.SIGRTMIN + 4, _off)

# SQL statements: at each SQL_COUNT signal a process that has imported SQLAlchemy (the supervisor; bots
# import no database layer) counts every statement from then on (``before_cursor_execute`` on every
# engine) and writes "<signals so far> <statements so far>" to DIR/<pid>.sql.
import itertools, sys  # noqa: E401 (already imported at startup)

_SQL_OUT = os.environ.get("BENCH_SQL_OUT", "")
_SQL_TEXTS = os.environ.get("BENCH_SQL_TEXTS", "")
_sql = {"signals": 0, "counter": None}


def _sql_count(*_):
    if _sql["counter"] is None and "sqlalchemy" in sys.modules:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        counter = _sql["counter"] = itertools.count()
        texts = _sql["texts"] = {}

        def _count(conn, cursor, statement, *args, **kwargs):
            next(counter)
            if _SQL_TEXTS:
                key = " ".join(statement.split())[:150]
                texts[key] = texts.get(key, 0) + 1

        event.listen(Engine, "before_cursor_execute", _count)
    _sql["signals"] += 1
    counter = _sql["counter"]
    done = int(repr(counter)[6:-1]) if counter is not None else 0  # "count(N)": the next value, N so far
    path = os.path.join(_SQL_OUT, f"{os.getpid()}.sql")
    with open(path + ".tmp", "w") as handle:
        handle.write(f"{_sql['signals']} {done}")
    os.replace(path + ".tmp", path)
    if _SQL_TEXTS and _sql.get("texts"):  # BENCH_SQL_TEXTS=DIR: each statement's count so far, most frequent first
        with open(os.path.join(_SQL_TEXTS, f"{os.getpid()}.sql.txt"), "w") as handle:
            for text, n in sorted(_sql["texts"].items(), key=lambda item: -item[1]):
                handle.write(f"{n:6d}  {text}\n")


if _SQL_OUT:
    signal.signal(signal.SIGRTMIN + 5, _sql_count)
'''


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    index = min(len(values) - 1, max(0, round(q * (len(values) - 1))))
    return values[index]


def cpu_seconds(pid: int) -> float:
    """CPU time of process ``pid``: its threads' run time in nanoseconds (``/proc/PID/task/*/schedstat``),
    not the clock ticks of ``/proc/PID/stat`` (10 ms each, too coarse for a few ms per message)."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat") as handle:
                    total += int(handle.read().split()[0])
            except OSError:
                continue  # a thread that ended meanwhile
    except OSError:
        total = 0
    if total:
        return total / 1e9
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mib(pid: int) -> tuple[float, float, float]:
    """(RSS, unique set size, proportional set size) in MiB."""
    rss = uss = pss = 0.0
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    uss += int(line.split()[1]) / 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) / 1024
    except OSError:
        pass
    return rss, uss, pss


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (the supervisor, its fork server, the bots)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def wait_until(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"timeout waiting for {what}")
        time.sleep(0.02)


class Bench:
    def __init__(self, workdir: Path, *, trace: bool = False, llm_delay: float = 0.0) -> None:
        from grobot.core import migrations
        from tests.fakes.discord import FakeDiscord
        from tests.fakes.llm import FakeLLM

        self.workdir = workdir
        data = workdir / "data"
        data.mkdir()
        os.environ.update(DATABASE_URL=f"sqlite:///{data / 'grobot.db'}", GROBOT_DATA_DIR=str(data),
                          GROBOT_SECRET_KEY="bench-secret-key")
        from grobot.core.settings import get_settings

        get_settings.cache_clear()
        migrations.upgrade()
        self.discord = FakeDiscord().start()
        self.llm = FakeLLM().start()
        self.llm.default_delay = llm_delay
        from tests.fakes.llm import use_fake_llm

        use_fake_llm(self.llm)
        self.discord_ids: dict[int, int] = {}
        self.supervisor: subprocess.Popen[bytes] | None = None
        self.log_path = Path(os.environ.get("BENCH_SUPERVISOR_LOG") or workdir / "supervisor.log")
        self.trace = trace  # GROBOT_TRACE_TIMINGS for the fleet (--stages)
        # Every process of the fleet loads the bench's sitecustomize: the SQL counter, and the profiler.
        site = workdir / "site"
        site.mkdir(parents=True, exist_ok=True)
        (site / "sitecustomize.py").write_text(PROFILE_SITECUSTOMIZE)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
        self.sql_dir = workdir / "sql"
        self.sql_dir.mkdir()
        self.sql_signals: dict[int, int] = {}
        os.environ["BENCH_SQL_OUT"] = str(self.sql_dir)
        if PROFILE_DIR:
            Path(PROFILE_DIR).mkdir(parents=True, exist_ok=True)
            os.environ["BENCH_PROFILE_OUT"] = str(Path(PROFILE_DIR).resolve())

    def sql_so_far(self, pid: int) -> int:
        """SQL statements process ``pid`` has executed since its first count (the bench's sitecustomize)."""
        seen = self.sql_signals.get(pid, 0)
        path = self.sql_dir / f"{pid}.sql"
        os.kill(pid, SQL_COUNT)

        def read() -> tuple[int, int] | None:
            try:
                signals, count = (int(v) for v in path.read_text().split())
            except (OSError, ValueError):
                return None
            return (signals, count) if signals > seen else None

        signals, count = wait_until(read, 30, "the SQL count")
        self.sql_signals[pid] = signals
        return count

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, **self.discord.env(), OLLAMA_HOST=self.llm.url,
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                   GROBOT_LOG_LEVEL="WARNING", **({"GROBOT_TRACE_TIMINGS": "1"} if self.trace else {}))
        env.update(extra)
        return env

    def add_bots(self, count: int) -> list[int]:
        from grobot.core.db import session_scope
        from grobot.core.services import bots

        ids = []
        with session_scope() as session:
            start = len(self.discord_ids)
            for i in range(count):
                token, uid = self.discord.new_bot_token(f"bench{start + i}")
                bot = bots.create_bot(session=session, name=f"bench{start + i}", token=token, user_cooldown_seconds=0)
                self.discord_ids[bot.id] = uid
                ids.append(bot.id)
        return ids

    def store_memories(self, bot_id: int, count: int) -> None:
        """``count`` memories for ``bot_id``, stored by a short-lived process (before the supervisor opens Chroma)."""
        code = ("import sys; from grobot.core.memory.vector_store import get_memory; "
                "get_memory().add(int(sys.argv[1]), [f'alice mentioned fact number {i} about her garden' "
                "for i in range(int(sys.argv[2]))], {'user_id': '1'})")
        subprocess.run([sys.executable, "-c", code, str(bot_id), str(count)], env=self.env(), cwd=ROOT, check=True)

    def delete_all(self) -> None:
        from grobot.core.db import session_scope
        from grobot.core.services import bots

        with session_scope() as session:
            for bot_id in list(self.discord_ids):
                bots.delete_bot(bots.get_bot(bot_id, session=session), session=session)
        self.discord_ids.clear()

    def statuses(self) -> dict[int, Any]:
        from sqlmodel import select

        from grobot.core.db import session_scope
        from grobot.core.models import BotStatus

        with session_scope(readonly=True) as session:
            return {s.bot_id: s for s in session.exec(select(BotStatus)).all()}

    def start_supervisor(self, **extra: str) -> None:
        log = open(self.log_path, "ab")
        self.supervisor = subprocess.Popen([sys.executable, "-m", "bot_worker"], env=self.env(**extra), cwd=ROOT,
                                           stdout=log, stderr=subprocess.STDOUT)

    def stop_supervisor(self) -> float:
        assert self.supervisor is not None
        pids = [s.pid for s in self.statuses().values() if s.pid]
        started = time.monotonic()
        self.supervisor.send_signal(signal.SIGTERM)
        self.supervisor.wait(30)
        wait_until(lambda: not any(pid_alive(pid) for pid in pids), 30, "bot processes to stop")
        self.supervisor = None
        return time.monotonic() - started

    def all_online(self, ids: list[int]) -> bool:
        statuses = self.statuses()
        online = self.discord.online_bots()
        return all(statuses.get(i) is not None and statuses[i].state == "online" and self.discord_ids[i] in online
                   for i in ids)

    def close(self) -> None:
        if self.supervisor is not None:
            self.stop_supervisor()
        self.discord.stop()
        self.llm.stop()


def wait_first_reply(bench: Bench, uid: int, msg: dict[str, Any]) -> Any:
    """The first reply POST of bot ``uid`` to ``msg`` (the fake Discord's record of it)."""
    return bench.discord.wait_call(lambda c: c.bot_id == uid and c.method == "POST" and c.path.endswith("/messages")
                                   and str(((c.json or {}).get("message_reference") or {}).get("message_id"))
                                   == msg["id"], 30)


def _traced(log_path: Path, marker: str, count: int) -> list[dict[str, float]]:
    """The last ``count`` timing lines containing ``marker`` in the fleet's log, as ``{stage: ms}``."""
    lines = [line.split(marker, 1)[1] for line in log_path.read_text(errors="replace").splitlines() if marker in line]
    return [{name.strip(): float(value) for name, value in (part.rsplit(" ", 1) for part in line.split(","))}
            for line in lines[-count:]]


def _link_requests(log_path: Path, bot_id: int) -> dict[str, int]:
    """How many bot link requests of each operation bot ``bot_id`` has made so far (``--stages``)."""
    marker = f"bot {bot_id}: link request "
    counts: dict[str, int] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        if marker in line:
            op = line.split(marker, 1)[1].strip()
            counts[op] = counts.get(op, 0) + 1
    return counts


def print_stages(log_path: Path, count: int) -> None:
    """Where a message's first reply spends its time (``--stages``: the fleet's GROBOT_TRACE_TIMINGS lines)."""
    bot = _traced(log_path, "message timings (ms from receipt): ", count)
    read = _traced(log_path, "read for a message (ms): ", count)
    p50 = lambda rows, key: pct([row[key] for row in rows if key in row], .5)
    print(f"  where it goes (p50 of {len(bot)}, ms after the bot received the message; GROBOT_TRACE_TIMINGS):")
    print(f"    the supervisor's read answered {p50(bot, 'config'):6.2f}   tools listed {p50(bot, 'tools'):6.2f}"
          f"   first LLM token {p50(bot, 'first_token'):6.2f}")
    if read:
        print(f"    in the supervisor's read: vector started {p50(read, 'vector started'):5.2f}   database"
              f" {p50(read, 'database'):5.2f}   memories and scores {p50(read, 'memories and scores'):5.2f}")
    else:
        print("    (this tree's supervisor does not trace its read)")


def set_access(bench: Bench, bot_id: int) -> dict[str, Any]:
    """The measured bot's access lists and moderation (``--access``); the blocked user who writes to it."""
    from grobot.core.db import session_scope
    from grobot.core.services import bots

    blocked = bench.discord.add_user("mallory")
    with session_scope() as session:
        bots.update_bot(bots.get_bot(bot_id, session=session), {
            "blocked_user_ids": [blocked["id"]], "blocked_role_ids": ["999999999999999999"],
            "moderation_words": ["forbidden", "bad word"], "moderation_patterns": [r"secret\s+code\s+\d+"]},
            session=session)
    return blocked


@dataclass
class Measured:
    """What a series of messages to one bot cost: first reply and completing edit per message, CPU per process."""

    first_reply: list[float] = field(default_factory=list)
    completing: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # process role -> CPU seconds
    window: float = 0.0  # seconds the series took
    sql: int = 0  # SQL statements the supervisor executed meanwhile

    def add(self, other: Measured) -> None:
        self.first_reply += other.first_reply
        self.completing += other.completing
        for role, seconds in other.cpu.items():
            self.cpu[role] = self.cpu.get(role, 0.0) + seconds
        self.window += other.window
        self.sql += other.sql


def send_and_measure(bench: Bench, uid: int, pids: dict[str, int], count: int, start: int,
                     blocked: dict[str, Any] | None = None, profile: bool = False) -> Measured:
    """``count`` messages to the bot of Discord user ``uid``, one after the other (a quarter second apart,
    as chat comes): each one's first reply and completing edit, and the CPU of ``pids`` (role -> pid)."""
    channel = bench.discord.channel_id
    measured = Measured()
    profiled = [pids[role] for role in ("bot", "supervisor")] if profile else []
    for pid in profiled:
        os.kill(pid, PROFILE_ON)
    sql_before = bench.sql_so_far(pids["supervisor"])
    before = {role: cpu_seconds(pid) for role, pid in pids.items()}
    began = time.monotonic()
    for i in range(start, start + count):
        text = f"question number {i}"
        if blocked:
            bench.discord.send_message(channel, f"<@{uid}> blocked asks {i}", mentions=[uid], author=blocked)
        sent_at = time.monotonic()
        msg = bench.discord.send_message(channel, f"<@{uid}> {text}", mentions=[uid])
        post = wait_first_reply(bench, uid, msg)
        measured.first_reply.append(post.time - sent_at)
        answer = f"Echo: alice: {text}"

        def final_call() -> Any:
            for call in bench.discord.calls_by(uid):
                if call.time >= post.time and (call.json or {}).get("content") == answer:
                    return call
            return None

        done = wait_until(final_call, 30, "completing edit")
        llm = [r for r in bench.llm.requests if r.path == "/api/chat" and text in str((r.json or {}).get("messages", [])[-1:])
               and not (r.json or {}).get("format")]
        if llm:
            measured.completing.append(done.time - llm[0].time - bench.llm.default_delay)
        time.sleep(0.25)  # chat's pace; a background archivist of this message finishes (counted in CPU)
    time.sleep(0.5)
    measured.window = time.monotonic() - began
    measured.cpu = {role: cpu_seconds(pid) - before[role] for role, pid in pids.items() }
    measured.sql = bench.sql_so_far(pids["supervisor"]) - sql_before
    for pid in profiled:
        os.kill(pid, PROFILE_OFF)
    return measured


def print_profiles(pids: dict[str, int], messages: int, top: int = 30) -> None:
    """The costliest functions of the supervisor and the bot per message (``BENCH_PROFILE``)."""
    import io
    import pstats

    for role in ("supervisor", "bot"):
        path = Path(PROFILE_DIR) / f"{pids[role]}.prof"
        wait_until(path.exists, 30, f"the {role}'s profile")
        time.sleep(0.5)
        stats = pstats.Stats(str(path))
        total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
        print(f"  {role}: {1000 * total / messages:.2f} ms of profiled CPU per message (profile {path})")
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(str(path), stream=out).sort_stats(order).print_stats(top)
            print(f"  -- {role}, by {order} (all {messages} messages):")
            print("\n".join("    " + line for line in out.getvalue().splitlines()[6:] if line.strip()))


def start_bare_bot(bench: Bench) -> tuple[subprocess.Popen[bytes], int]:
    """The bare discord.py bot (:mod:`bench.bare_bot`) on the same fake Discord and fake LLM; ``(process, user id)``."""
    token, uid = bench.discord.new_bot_token("bare")
    log = open(bench.workdir / "bare_bot.log", "ab")
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "bare_bot.py")], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT, env=bench.env(BARE_BOT_TOKEN=token))
    wait_until(lambda: uid in bench.discord.online_bots(), 60, "the bare bot online")
    return proc, uid


def bench_messages(bench: Bench, bot_id: int, count: int, blocked: dict[str, Any] | None = None, rounds: int = 4) -> None:
    """Platform overhead and CPU per message with the fake LLM (default reply: streamed in 3 chunks), GroBot
    beside a bare discord.py bot on the same harness, in alternating rounds (the machine's state drifts).

    Each side's CPU per message is its processes' CPU during its own rounds less what they use while the
    other side's messages go by (the supervisor's polls and heartbeats, the gateway events of the other
    bot's messages, which every bot in a guild receives)."""
    uid = bench.discord_ids[bot_id]
    assert bench.supervisor is not None
    bare_proc, bare_uid = start_bare_bot(bench)
    pids = {"bot": bench.statuses()[bot_id].pid, "supervisor": bench.supervisor.pid, "bare": bare_proc.pid}
    bench.sql_so_far(pids["supervisor"])  # counts from now on
    try:
        for i in range(3):  # warm up (imports, connection pools, first queries)
            for who in (uid, bare_uid):
                msg = bench.discord.send_message(bench.discord.channel_id, f"<@{who}> warm up {i}", mentions=[who])
                wait_until(lambda: any("warm up" in r["content"] for r in bench.discord.replies_to(msg["id"])), 30,
                           "warm-up")
        time.sleep(1.5)
        requests_before = _link_requests(bench.log_path, bot_id)
        ours, floor = Measured(), Measured()
        per_round = max(1, count // rounds)
        for r in range(rounds):
            ours.add(send_and_measure(bench, uid, pids, per_round, 2 * r * per_round, blocked, profile=bool(PROFILE_DIR)))
            floor.add(send_and_measure(bench, bare_uid, pids, per_round, (2 * r + 1) * per_round))
    finally:
        bare_proc.terminate()
        bare_proc.wait(10)
    if blocked:  # a blocked user's message: no LLM call, nothing sent
        assert not any("blocked asks" in str(r.json) for r in bench.llm.requests), "a blocked user's message reached the LLM"
        assert not any("blocked asks" in str(c.json) for c in bench.discord.calls_by(uid)), "a blocked user was answered"
    n, n_bare = len(ours.first_reply), len(floor.first_reply)
    if PROFILE_DIR:
        print_profiles(pids, n)
    ms = lambda v: v * 1000
    delay = ms(bench.llm.default_delay)
    print(f"message -> first reply POST:      p50 {ms(pct(ours.first_reply, .5)):6.1f} ms   p95 "
          f"{ms(pct(ours.first_reply, .95)):6.1f} ms   (n={n}; {f'the LLM answers after {delay:.0f} ms' if delay else 'instant LLM'};"
          f" bare discord.py: p50 {ms(pct(floor.first_reply, .5)):.1f} ms)")
    if bench.trace:
        print_stages(bench.log_path, n)
        requests = _link_requests(bench.log_path, bot_id)
        per_op = {op: (requests.get(op, 0) - requests_before.get(op, 0)) / n for op in requests}
        print(f"    the bot's requests to its supervisor per message: {sum(per_op.values()):.2f} ("
              + ", ".join(f"{op} {v:.2f}" for op, v in sorted(per_op.items()) if v) + "; incl. the background archivist)")
    print(f"LLM stream end -> completing edit: p50 {ms(pct(ours.completing, .5)):6.1f} ms   p95 "
          f"{ms(pct(ours.completing, .95)):6.1f} ms   (measured from the answer request, less the LLM's wait)")
    # What each process uses while the other side's messages go by, per second, scaled to its own rounds.
    aside = {role: floor.cpu[role] / floor.window for role in ("bot", "supervisor")}
    aside["bare"] = ours.cpu["bare"] / ours.window
    net = {role: ours.cpu[role] - aside[role] * ours.window for role in ("bot", "supervisor")}
    bare_net = floor.cpu["bare"] - aside["bare"] * floor.window
    print(f"bot CPU per message:               {ms(net['bot'] / n):6.2f} ms   (incl. background archivist; "
          f"{ms(ours.cpu['bot'] / n):.2f} ms less {100 * aside['bot']:.2f} % of one core while the bare bot's messages go by)")
    print(f"supervisor CPU per message:        {ms(net['supervisor'] / n):6.2f} ms   (the bot's reads and writes it "
          f"serves: {ms(ours.cpu['supervisor'] / n):.2f} ms less its polls and heartbeats, {100 * aside['supervisor']:.2f} % "
          f"of one core while the bare bot's messages go by)")
    sql = (ours.sql - floor.sql / floor.window * ours.window) / n
    print(f"SQL statements per message:        {sql:6.1f}      (the supervisor's: {ours.sql / n:.1f} less its polls' "
          f"{floor.sql / floor.window:.1f} a second while the bare bot's messages go by)")
    total, bare_total = (net["bot"] + net["supervisor"]) / n, bare_net / n_bare
    print(f"CPU per message, bot + supervisor: {ms(total):6.2f} ms   against a bare discord.py bot's {ms(bare_total):.2f} ms "
          f"({ms(floor.cpu['bare'] / n_bare):.2f} less {100 * aside['bare']:.2f} % of one core while GroBot's go by) on the "
          f"same harness: {total / bare_total:.2f}x the floor (n={n} + {n_bare}, {rounds} alternating rounds)")


def bench_reconcile(bench: Bench, ids: list[int], trials: int) -> None:
    """Database change (new token) -> that bot online again with a new process, default poll period."""
    from grobot.core.db import session_scope
    from grobot.core.services import bots

    latencies = []
    for trial in range(trials):
        bot_id = ids[trial % len(ids)]
        old = bench.statuses()[bot_id].pid
        token, _ = bench.discord.new_bot_token(user_id=bench.discord_ids[bot_id])
        changed = time.monotonic()
        with session_scope() as session:
            bot = bots.get_bot(bot_id, session=session)
            bots.set_token(bot, token, session=session)
            revision = bot.gateway_revision
        wait_until(lambda: (lambda s: s.pid not in (None, old) and s.state == "online" and s.running_revision == revision)(
            bench.statuses()[bot_id]), 60, "reconcile")
        latencies.append(time.monotonic() - changed)
        time.sleep(0.3)
    print(f"reconcile latency (poll 2 s):      p50 {pct(latencies, .5):5.2f} s    p95 {pct(latencies, .95):5.2f} s"
          f"    (n={len(latencies)})")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,50,100")
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--reconciles", type=int, default=20)
    parser.add_argument("--memories", type=int, default=0, help="memories stored for the measured bot first")
    parser.add_argument("--stages", action="store_true",
                        help="also print where the first reply's time goes (the fleet traces its timings: a little slower)")
    parser.add_argument("--llm-ms", type=float, default=0.0,
                        help="the fake LLM waits this many ms before each answer (default 0: instant)")
    parser.add_argument("--access", action="store_true",
                        help="the measured bot has access lists and moderation, and a blocked user writes to it too")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="grobot-bench-") as tmp:
        bench = Bench(Path(tmp), trace=args.stages, llm_delay=args.llm_ms / 1000)
        try:
            for index, size in enumerate(sizes):
                ids = bench.add_bots(size)
                if index == 0 and args.memories:
                    bench.store_memories(ids[0], args.memories)
                    print(f"the measured bot has {args.memories} memories")
                blocked = set_access(bench, ids[0]) if index == 0 and args.access else None
                if blocked:
                    print("the measured bot has access lists and moderation; a blocked user writes before each message")
                started = time.monotonic()
                bench.start_supervisor()
                wait_until(lambda: bench.all_online(ids), 300, f"{size} bots online")
                print(f"{size:4d} bots online in {time.monotonic() - started:5.1f} s")
                if index == 0:
                    bench_messages(bench, ids[0], args.messages, blocked)
                if index == len(sizes) - 1:
                    time.sleep(3)
                    pids = [s.pid for s in bench.statuses().values() if s.pid]
                    mems = [rss_mib(pid) for pid in pids]
                    print(f"RSS per idle bot process:          mean {statistics.mean(m[0] for m in mems):5.1f} MiB"
                          f"   max {max(m[0] for m in mems):5.1f} MiB   (unique {statistics.mean(m[1] for m in mems):5.1f} MiB,"
                          f" proportional {statistics.mean(m[2] for m in mems):5.1f} MiB)")
                    assert bench.supervisor is not None
                    fleet_pss = sum(rss_mib(pid)[2] for pid in descendants(bench.supervisor.pid))
                    print(f"whole fleet (supervisor + fork server + {len(pids)} bots): {fleet_pss:6.0f} MiB proportional"
                          f" = {fleet_pss / len(pids):5.1f} MiB per bot")
                    before = sum(cpu_seconds(pid) for pid in pids)
                    supervisor_before = cpu_seconds(bench.supervisor.pid)
                    window = 10.0
                    time.sleep(window)
                    idle = sum(cpu_seconds(pid) for pid in pids) - before
                    supervisor_idle = cpu_seconds(bench.supervisor.pid) - supervisor_before
                    print(f"idle CPU of {len(pids)} bots:               {100 * idle / window:5.1f} % of one core"
                          f"   (their supervisor: {100 * supervisor_idle / window:4.1f} %)")
                    bench_reconcile(bench, ids, args.reconciles)
                took = bench.stop_supervisor()
                print(f"{size:4d} bots stopped (SIGTERM) in {took:4.1f} s")
                bench.delete_all()
        finally:
            bench.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
