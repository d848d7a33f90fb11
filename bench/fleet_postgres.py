"""The fleet on PostgreSQL with its default connection limit: do N bots fit, and what do they hold?

    .venv/bin/python bench/fleet_postgres.py [--bots 100] [--max-connections 100] [--idle 15] [--messages 40] [--pauses 5]

Starts a throwaway PostgreSQL cluster (``max_connections`` as given; 100 is PostgreSQL's
default, and the ``postgres`` image's), a supervisor and N bots against the fake Discord,
then prints: time until all N are online, how many connections the server refused ("too
many clients", from its log) meanwhile, and the connections held per kind of process
once the bots have been idle for ``--idle`` seconds; then the per-message figures of
``bench/fleet.py`` on PostgreSQL, and the first reply to messages that each come after
``--idle`` seconds of silence. (Bots hold no connection: their supervisor reads and writes
for them over the bot link.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))

from fleet import Bench, bench_messages, wait_first_reply, wait_until  # noqa: E402

from tests.pg import PgCluster  # noqa: E402


class LimitedCluster(PgCluster):
    """A throwaway cluster with ``max_connections`` set (the tests' cluster allows 300)."""

    def __init__(self, max_connections: int) -> None:
        super().__init__()
        self.max_connections = max_connections

    def _run(self, *args: str) -> None:
        super()._run(*(a.replace("max_connections=300", f"max_connections={self.max_connections}") for a in args))


def connections(cluster: PgCluster) -> Counter[str]:
    """Connections to the ``grobot`` database by kind of process (every bot counts as ``grobot-bot``)."""
    import psycopg2

    conn = psycopg2.connect(cluster.dsn("postgres"))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT application_name FROM pg_stat_activity WHERE datname = 'grobot'")
            return Counter("grobot-bot" if name.startswith("grobot-bot-") else name or "(unnamed)"
                           for (name,) in cur.fetchall())
    finally:
        conn.close()


def first_replies_after_pauses(bench: Bench, bot_id: int, count: int, *, pause: float) -> list[float]:
    """Message -> first reply, each message after ``pause`` seconds of silence (seconds)."""
    uid, latencies = bench.discord_ids[bot_id], []
    for i in range(count):
        time.sleep(pause)  # the bot is idle
        sent_at = time.monotonic()
        msg = bench.discord.send_message(bench.discord.channel_id, f"<@{uid}> after a pause {i}", mentions=[uid])
        latencies.append(wait_first_reply(bench, uid, msg).time - sent_at)
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bots", type=int, default=100)
    parser.add_argument("--max-connections", type=int, default=100)
    parser.add_argument("--idle", type=float, default=15.0)
    parser.add_argument("--messages", type=int, default=40, help="per-message figures on PostgreSQL (0: none)")
    parser.add_argument("--pauses", type=int, default=5, help="messages after --idle seconds of silence")
    args = parser.parse_args()
    cluster = LimitedCluster(args.max_connections).start()
    try:
        url = cluster.create_database("grobot")
        with tempfile.TemporaryDirectory(prefix="grobot-bench-") as tmp:
            bench = Bench(Path(tmp))  # on SQLite until told otherwise: switch to the cluster
            os.environ["DATABASE_URL"] = url
            from grobot.core import migrations
            from grobot.core.db import dispose_engines, set_application_name
            from grobot.core.settings import get_settings

            get_settings.cache_clear()
            dispose_engines()
            set_application_name("grobot-bench")
            migrations.upgrade()
            from tests.fakes.llm import use_fake_llm

            use_fake_llm(bench.llm)  # in the PostgreSQL database now
            try:
                ids = bench.add_bots(args.bots)
                started = time.monotonic()
                bench.start_supervisor()
                wait_until(lambda: bench.all_online(ids), 300, f"{args.bots} bots online")
                print(f"{args.bots} bots online in {time.monotonic() - started:5.1f} s "
                      f"(PostgreSQL max_connections={args.max_connections})")
                time.sleep(args.idle)
                held = connections(cluster)
                print(f"connections after {args.idle:.0f} s idle: {sum(held.values())} "
                      f"({', '.join(f'{name} {count}' for name, count in held.most_common())})")
                log = (cluster.root / "log").read_text(errors="replace")  # the server's own log
                print(f"connections refused ('too many clients') meanwhile: {log.count('too many clients')}")
                if args.messages:
                    bench_messages(bench, ids[0], args.messages)
                    after = first_replies_after_pauses(bench, ids[1], args.pauses, pause=args.idle)
                    print(f"message -> first reply POST after {args.idle:.0f} s without messages: "
                          f"p50 {1000 * statistics.median(after):6.1f} ms   (n={len(after)})")
            finally:
                bench.close()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
