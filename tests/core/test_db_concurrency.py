"""Many processes write to one database at once and nothing is lost."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sqlmodel import func, select

from grobot.core.db import session_scope
from grobot.core.models import LogEntry, Setting
from grobot.core.services import bots

WRITER = r"""
import sys

import pytest
from grobot.core.db import session_scope
from grobot.core.models import LogEntry, Setting
worker, rounds, bot_id = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for i in range(rounds):
    # An insert, and a read-modify-write that would lose updates without proper locking
    # (SQLite: BEGIN IMMEDIATE; PostgreSQL: SELECT ... FOR UPDATE).
    with session_scope() as session:
        session.add(LogEntry(bot_id=bot_id, level="INFO", logger="t", message=f"{worker}:{i}"))
        row = session.get(Setting, "counter", with_for_update=True)
        row.value = int(row.value) + 1
        session.add(row)
print("ok")
"""

PROCESSES = 20
ROUNDS = 15


@pytest.mark.slow  # twenty processes at once: a minute on a busy machine, for make test
def test_twenty_processes_write_at_once_without_loss(any_db_env):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="busy").id
        session.add(Setting(key="counter", value=0))
    env = any_db_env.environ()
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(w), str(ROUNDS), str(bot_id)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in range(PROCESSES)
    ]
    results = [p.communicate(timeout=240) for p in procs]
    failures = [err for (out, err), p in zip(results, procs) if p.returncode != 0]
    assert not failures, failures[0]
    with session_scope(readonly=True) as session:
        count = session.exec(select(func.count()).select_from(LogEntry).where(LogEntry.bot_id == bot_id)).one()
        counter = session.get(Setting, "counter").value
    assert count == PROCESSES * ROUNDS
    assert counter == PROCESSES * ROUNDS


def test_a_frozen_transaction_does_not_hold_its_row_locks_forever(pg_env):
    """A process stopped (SIGSTOP) inside a transaction keeps its connection alive but must not
    block the rows it locked: the server ends the transaction, and a waiting writer goes on."""
    import time

    from grobot.core.db import get_engine

    with session_scope() as session:
        session.add(Setting(key="lease-like", value=0))
    frozen = get_engine().connect()
    frozen.begin()
    frozen.exec_driver_sql("SELECT value FROM setting WHERE key = 'lease-like' FOR UPDATE")  # then silence
    started = time.monotonic()
    try:
        with session_scope() as session:  # waits for the lock until the server ends the frozen transaction
            row = session.get(Setting, "lease-like", with_for_update=True)
            row.value = 1
            session.add(row)
        waited = time.monotonic() - started
        assert 5 < waited < 30, waited
    finally:
        frozen.invalidate()
    with session_scope(readonly=True) as session:
        assert session.get(Setting, "lease-like").value == 1
