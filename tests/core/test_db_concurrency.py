"""Many processes write to one database at once and nothing is lost."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import LogEntry, Setting
from grobot.core.services import bots

# One interpreter imports GroBot once and forks the writers (as the supervisor forks its bots): twenty
# interpreters each importing it cost about 20 s of CPU, and each started writing when its imports ended,
# seconds apart. The forked writers wait at a pipe and start together.
WRITERS = r"""
import os
import sys
import traceback

from grobot.core.db import session_scope
from grobot.core.models import LogEntry, Setting

processes, rounds, bot_id = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


def write(worker):
    for i in range(rounds):
        # A read-modify-write that would lose updates without proper locking (SQLite: BEGIN IMMEDIATE;
        # PostgreSQL: SELECT ... FOR UPDATE), then an insert. The read comes first: an insert flushed
        # before it would take SQLite's write lock even in a deferred transaction.
        with session_scope() as session:
            row = session.get(Setting, "counter", with_for_update=True)
            row.value = int(row.value) + 1
            session.add(row)
            session.add(LogEntry(bot_id=bot_id, level="INFO", logger="t", message=f"{worker}:{i}"))


start, go = os.pipe()
children = []
for worker in range(processes):
    pid = os.fork()
    if pid == 0:  # a writer of its own, with its own engine and connection (none was opened before the fork)
        os.close(go)
        os.read(start, 1)  # returns when the parent closes the pipe: every writer at once
        code = 0
        try:
            write(worker)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stderr.flush()
        os._exit(code)
    children.append(pid)
os.close(go)
failed = [pid for pid in children if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0]
print(f"{len(children) - len(failed)} writers ok")
sys.exit(1 if failed else 0)
"""

PROCESSES = 20
ROUNDS = 15


@pytest.mark.slow  # twenty processes at once: seconds on a busy machine, for make test
def test_twenty_processes_write_at_once_without_loss(any_db_env):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="busy").id
        session.add(Setting(key="counter", value=0))
    result = subprocess.run([sys.executable, "-c", WRITERS, str(PROCESSES), str(ROUNDS), str(bot_id)],
                            env=any_db_env.environ(), capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{PROCESSES} writers ok"
    with session_scope(readonly=True) as session:
        written = session.exec(select(LogEntry.message).where(LogEntry.bot_id == bot_id)).all()
        counter = session.get(Setting, "counter").value
    assert sorted(written) == sorted(f"{w}:{i}" for w in range(PROCESSES) for i in range(ROUNDS))  # each once
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
