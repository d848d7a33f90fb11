"""Reading a bot's log: level, text, days in a time zone, pages and the CSV / JSON Lines export."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta

import pytest

from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.models import LogEntry
from grobot.core.services import bots, log_entries


def test_days_in_the_readers_zone_pages_and_export(any_db_env):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Logged").id
        start = datetime(2026, 3, 9, 22, 0, tzinfo=UTC)  # 10 March 03:30 in Kolkata
        for i in range(30):
            session.add(LogEntry(bot_id=bot_id, created_at=start + timedelta(minutes=i), level="INFO",
                                 logger="bot_worker.bot_process", message=f"=line {i}, with a comma"))
    since, until = log_entries.day_range("2026-03-10", "2026-03-10", "Asia/Kolkata")
    assert (since, until) == (datetime(2026, 3, 9, 18, 30, tzinfo=UTC),
                              datetime(2026, 3, 10, 18, 30, tzinfo=UTC))
    with session_scope(readonly=True) as session:
        kolkata = log_entries.recent_logs(session=session, bot_id=bot_id, since=since, until=until, limit=100)
        utc_day = log_entries.recent_logs(session=session, bot_id=bot_id, limit=100,
                                          since=datetime(2026, 3, 10, tzinfo=UTC))
        page2 = log_entries.recent_logs(session=session, bot_id=bot_id, limit=10, offset=10)
    assert len(kolkata) == 30 and len(utc_day) == 0
    assert [line.message for line in page2] == [f"=line {i}, with a comma" for i in range(19, 9, -1)]

    text = log_entries.export(page2[:2], fmt="csv", zone="Asia/Kolkata")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["time", "level", "logger", "message"]
    # A cell that a spreadsheet would run as a formula is quoted.
    assert rows[1] == ["2026-03-10T03:49:00.000+05:30", "INFO", "bot_worker.bot_process", "'=line 19, with a comma"]
    lines = [json.loads(line) for line in log_entries.export(page2[:2], fmt="jsonl").splitlines()]
    assert lines[0] == {"time": "2026-03-09T22:19:00.000+00:00", "level": "INFO", "logger": "bot_worker.bot_process",
                        "message": "=line 19, with a comma"}


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_no_exported_cell_can_run_as_a_spreadsheet_formula(start):
    """An MCP server's stderr or a model's text ends up in the log: its CSV cells never start a formula."""
    line = log_entries.LogLine(id=1, created_at=datetime(2026, 3, 9, tzinfo=UTC), level="WARNING",
                               logger=f"{start}mcp.weather", message=f"{start}HYPERLINK(\"http://x\")")
    row = list(csv.reader(io.StringIO(log_entries.export([line], fmt="csv"))))[1]
    assert row[2:] == [f"'{start}mcp.weather", f"'{start}HYPERLINK(\"http://x\")"]


def test_wrong_ranges_are_refused_in_words():
    with pytest.raises(ValidationError, match="the date range ends before it starts"):
        log_entries.day_range("2026-03-10", "2026-03-09")
    with pytest.raises(ValidationError, match="is not a date"):
        log_entries.day_range("10/03/2026", "")
    assert log_entries.zone_of("Not/AZone") is UTC
