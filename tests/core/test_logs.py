"""Bot logs reach ``log_entry`` in batches, and a database outage never breaks the caller."""

from __future__ import annotations

import logging
import os
import shutil
import time

from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.logs import DatabaseLogHandler
from grobot.core.models import LogEntry
from grobot.core.services import bots
from tests.helpers import wait_for


def _logger(handler: logging.Handler, name: str) -> logging.Logger:
    log = logging.getLogger(name)
    log.handlers = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
    return log


def test_records_with_a_bot_id_are_written_in_batches(grobot_env):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="logger").id
    handler = DatabaseLogHandler(batch_size=50, flush_interval=0.05)
    log = _logger(handler, "grobot.test.batches")
    try:
        for i in range(120):
            log.info("event %d", i, extra={"bot_id": bot_id})
        log.info("no bot id: platform record, not stored per bot")
        assert handler.flush(timeout=10)
        with session_scope(readonly=True) as session:
            rows = session.exec(select(LogEntry).where(LogEntry.bot_id == bot_id).order_by(LogEntry.id)).all()
        assert [r.message for r in rows] == [f"event {i}" for i in range(120)]
        assert rows[0].level == "INFO" and rows[0].logger == "grobot.test.batches"
    finally:
        handler.close()


def test_database_down_does_not_block_and_nothing_is_lost_when_it_returns(grobot_env, tmp_path):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="resilient").id
    # The handler's database lives at a path whose folder is, for now, a plain file:
    # every write fails as it would with the database down.
    outage = tmp_path / "outage"
    outage.write_text("not a folder")
    url = f"sqlite:///{outage / 'grobot.db'}"
    handler = DatabaseLogHandler(batch_size=20, flush_interval=0.05, database_url=url)
    log = _logger(handler, "grobot.test.outage")
    try:
        started = time.monotonic()
        for i in range(300):
            log.warning("during outage %d", i, extra={"bot_id": bot_id})
        elapsed = time.monotonic() - started
        assert elapsed < 2.0, f"logging blocked for {elapsed:.2f} s while the database was down"
        assert handler.flush(timeout=0.5) is False  # still pending: nothing written, nothing raised
        # The database comes back (same data, now reachable at that path).
        from grobot.core.db import dispose_engines

        dispose_engines()  # checkpoints the WAL so that the copy holds every row
        back = tmp_path / "back"
        back.mkdir()
        shutil.copy(grobot_env.data_dir / "grobot.db", back / "grobot.db")
        # In one step: the handler retries all along and would create a folder at that path itself.
        outage.unlink()
        os.rename(back, outage)
        wait_for(lambda: handler.flush(timeout=0.5), timeout=30, message="logs written after the outage")
        from grobot.core.db import get_engine

        with get_engine(url).connect() as conn:
            count = conn.exec_driver_sql("SELECT count(*) FROM log_entry WHERE bot_id = ?", (bot_id,)).scalar()
        assert count == 300
    finally:
        handler.close()


def test_a_console_record_is_one_line_whatever_its_text_says():
    """A record's text (a tool's error, a name) cannot start a console line that passes for another
    record; a traceback after it keeps its lines."""
    import io

    from grobot.core.logs import console_handler

    stream = io.StringIO()
    log = _logger(console_handler(stream), "tests.console_one_line")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("Tool %s failed: %s", "lookup", "no result\n2026-01-01 00:00:00,000 ERROR grobot: admin password reset")
    lines = stream.getvalue().splitlines()
    assert lines[0].endswith("tests.console_one_line: Tool lookup failed: no result\\x0a2026-01-01 00:00:00,000 ERROR "
                             "grobot: admin password reset")
    assert lines[1] == "Traceback (most recent call last):" and lines[-1] == "ValueError: boom"
