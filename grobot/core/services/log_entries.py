"""Reading a bot's log entries (newest first, filtered, paged and limited in SQL), and their export."""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlmodel import Session, col, select

from grobot.core.errors import ValidationError
from grobot.core.models import AppUser, LogEntry
from grobot.core.services import discord_users
from grobot.core.wording import duration

logger = logging.getLogger(__name__)

# The levels a filter may name, lowest first; a filter shows its level and the ones above.
LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MAX_LIMIT = 1000
MAX_SEARCH_CHARS = 200
MAX_OFFSET = 100_000
MAX_EXPORT = 10_000


@dataclass(frozen=True)
class LogLine:
    """One log entry as lists show it."""

    id: int
    created_at: datetime
    level: str
    logger: str
    message: str


# Where a log line comes from, as an admin reads it: the first prefix of its logger (a module's name) that
# matches, else "GroBot". The module's name stays in the line (the download has it).
SOURCES: tuple[tuple[str, str], ...] = (
    ("bot_worker.tester_chat", "Test Chat"),
    ("bot_worker.council_command", "Council"),
    ("grobot.core.agents.council", "Council"),
    ("grobot.core.store.council_run", "Council"),
    ("grobot.core.memory", "Memory"),
    ("grobot.core.embeddings", "Memory"),
    ("bot_worker.bot_process", "Discord"),
    ("bot_worker.fleet_bot", "Discord"),
    ("bot_worker.discord_io", "Discord"),
    ("bot_worker.slash_commands", "Discord"),
    ("bot_worker.streaming", "Discord"),
    ("bot_worker.run_stops", "Discord"),
    ("discord", "Discord"),
    ("grobot.core.tools", "Tools"),
    ("grobot.core.services.mcp_tool_lists", "Tools"),
    ("mcp", "Tools"),
    ("grobot.core.agents", "Answering"),
    ("grobot.core.store", "Answering"),
    ("grobot.core.answering", "Answering"),
    ("grobot.core.flood", "Answering"),
    ("grobot.core.llm", "LLM"),
    ("grobot.core.limits", "Limits"),
    ("grobot.core.services.budgets", "Limits"),
    ("grobot.core.services.usage", "Limits"),
    ("bot_worker", "Worker"),
)


def source_of(logger_name: str) -> str:
    """Where a log line comes from in words ("Discord", "Test Chat", "Tools", "Answering", "LLM", ...)."""
    for prefix, source in SOURCES:
        if logger_name.startswith(prefix):
            return source
    return "GroBot"


_APP_USER = re.compile(r"\buser app-user:(\d{1,12})\b")
_DISCORD_USER = re.compile(r"\b(Discord )?user (\d{15,22})\b")
_MILLISECONDS = re.compile(r"\bin (\d{4,})(?:\.\d+)? ms\b")


def readable_messages(lines: list[LogLine], *, session: Session, bot_id: int) -> list[str]:
    """The messages of ``lines`` as an admin reads them: a web app user and a Discord user by name (where
    known), a time over a second in seconds or minutes ("in 3 min 26 s", not "in 206039 ms"). Lines
    written before GroBot wrote them so read the same."""
    texts = [line.message for line in lines]
    app_ids = {int(m) for text in texts for m in _APP_USER.findall(text)}
    discord_ids = {m[1] for text in texts for m in _DISCORD_USER.findall(text)}
    app_names = dict(session.exec(select(AppUser.id, AppUser.username).where(col(AppUser.id).in_(app_ids))).all()) \
        if app_ids else {}
    discord_names = discord_users.display_names(session=session, bot_id=bot_id, user_ids=discord_ids)

    def app_user(match: re.Match[str]) -> str:
        name = app_names.get(int(match.group(1)))
        return name if name else "a web app user who no longer exists"

    def discord_user(match: re.Match[str]) -> str:
        name = discord_names.get(match.group(2))
        return f"{match.group(1) or ''}user {name}" if name else match.group(0)

    def seconds(match: re.Match[str]) -> str:
        return f"in {duration(int(match.group(1)) / 1000)}"

    return [_MILLISECONDS.sub(seconds, _DISCORD_USER.sub(discord_user, _APP_USER.sub(app_user, text)))
            for text in texts]


def levels_from(min_level: str) -> tuple[str, ...]:
    """``min_level`` and the levels above it ("" or "ALL": every level)."""
    level = (min_level or "ALL").upper()
    if level == "ALL":
        return LEVELS
    if level not in LEVELS:
        raise ValidationError(f"unknown log level {min_level!r}; one of: ALL, {', '.join(LEVELS)}")
    return LEVELS[LEVELS.index(level):]


def zone_of(name: str) -> ZoneInfo | timezone:
    """The time zone named ``name`` (IANA, as browsers report it); UTC when empty or unknown."""
    try:
        return ZoneInfo(name) if name else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def day_range(first: str, last: str, zone: str = "") -> tuple[datetime | None, datetime | None]:
    """``first`` to ``last`` (``YYYY-MM-DD``, either may be empty), whole days in ``zone``, as UTC bounds
    ``[since, until)``."""
    tz = zone_of(zone)

    def start_of(text: str) -> datetime:
        try:
            day = date.fromisoformat(text)
        except ValueError:
            raise ValidationError(f"{text!r} is not a date (YYYY-MM-DD)") from None
        return datetime.combine(day, time.min, tzinfo=tz).astimezone(UTC)

    since = start_of(first) if first else None
    until = start_of(last) + timedelta(days=1) if last else None
    if since is not None and until is not None and until <= since:
        raise ValidationError("the date range ends before it starts")
    return since, until


def recent_logs(
    *, session: Session, bot_id: int, min_level: str = "ALL", search: str = "", limit: int = 100,
    before_id: int | None = None, since: datetime | None = None, until: datetime | None = None, offset: int = 0,
    max_limit: int = MAX_LIMIT,
) -> list[LogLine]:
    """The bot's newest ``limit`` entries at ``min_level`` or above whose message or logger
    contains ``search`` (case-insensitive), older than ``before_id`` when given, written in
    ``[since, until)`` when given, skipping the ``offset`` newest (a page)."""
    if not 1 <= limit <= max_limit:
        raise ValidationError(f"limit must be between 1 and {max_limit}")
    if not 0 <= offset <= MAX_OFFSET:
        raise ValidationError(f"a page starts at most {MAX_OFFSET:,} entries back; narrow the dates instead")
    search = (search or "").strip()
    if len(search) > MAX_SEARCH_CHARS:
        raise ValidationError(f"the search text is at most {MAX_SEARCH_CHARS} characters")
    stmt = select(LogEntry.id, LogEntry.created_at, LogEntry.level, LogEntry.logger, LogEntry.message).where(
        LogEntry.bot_id == bot_id
    )
    levels = levels_from(min_level)
    if levels != LEVELS:
        stmt = stmt.where(col(LogEntry.level).in_(levels))
    if search:
        pattern = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        stmt = stmt.where(col(LogEntry.message).ilike(pattern, escape="\\") | col(LogEntry.logger).ilike(pattern, escape="\\"))
    if before_id is not None:
        stmt = stmt.where(col(LogEntry.id) < before_id)
    if since is not None:
        stmt = stmt.where(col(LogEntry.created_at) >= since)
    if until is not None:
        stmt = stmt.where(col(LogEntry.created_at) < until)
    stmt = stmt.order_by(col(LogEntry.id).desc()).offset(offset).limit(limit)
    return [LogLine(*row) for row in session.exec(stmt).all()]


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP's list of what makes a spreadsheet cell a formula


def _cell(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet shows and never runs: a formula start gets a quote before it."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def export(lines: list[LogLine], *, fmt: str = "csv", zone: str = "") -> str:
    """Entries as CSV (time, level, logger, message) or JSON Lines, times in ``zone`` with their offset."""
    tz = zone_of(zone)
    stamped = [(_aware(line.created_at).astimezone(tz).isoformat(timespec="milliseconds"), line) for line in lines]
    if fmt == "jsonl":
        return "".join(json.dumps({"time": t, "level": ln.level, "logger": ln.logger, "message": ln.message},
                                  ensure_ascii=False) + "\n" for t, ln in stamped)
    if fmt != "csv":
        raise ValidationError("the export format is csv or jsonl")
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["time", "level", "logger", "message"])
    for t, line in stamped:
        writer.writerow([t, line.level, _cell(line.logger), _cell(line.message)])
    return out.getvalue()
