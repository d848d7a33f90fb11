"""The value types of the data model: enums, the time helper, and column shorthands.

:mod:`grobot.core.models` holds the tables and re-exports these (``from grobot.core.models
import BotState`` keeps working).
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, Integer, Text
from sqlmodel import Field


def utcnow() -> datetime:
    """Now, as an aware UTC datetime (SQLModel's ``UTCDateTime`` columns require it)."""
    return datetime.now(UTC)


def fk_column(target: str, *, nullable: bool = False, index: bool = True, ondelete: str = "CASCADE") -> Any:
    """A foreign-key column (an integer id; the row goes with its parent by default)."""
    return Field(
        default=None if nullable else ...,
        sa_column=Column(Integer, ForeignKey(target, ondelete=ondelete), nullable=nullable, index=index),
    )


def json_column(default_factory: Any = dict, *, nullable: bool = False) -> Any:
    """A JSON column (None stored as SQL NULL when nullable)."""
    if nullable:
        return Field(default=None, sa_column=Column(JSON(none_as_null=True), nullable=True))
    return Field(default_factory=default_factory, sa_column=Column(JSON, nullable=False))


def text_column(*, nullable: bool = False, default: str | None = "") -> Any:
    """An unbounded text column."""
    return Field(default=None if nullable else default, sa_column=Column(Text, nullable=nullable))


class StrEnum(str, enum.Enum):
    """An enum whose members are their string values."""

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


class AgentMode(StrEnum):
    CHAIN = "chain"
    NATIVE = "native"


class LLMCategory(StrEnum):
    DECISION = "decision"
    TOOLS = "tools"
    OUTPUT = "output"


class BotState(StrEnum):
    STARTING = "starting"
    ONLINE = "online"
    OFFLINE = "offline"
    ERROR = "error"
    STOPPED = "stopped"


class McpTransport(StrEnum):
    STDIO = "stdio"
    STREAMABLE_HTTP = "streamable_http"
    SSE = "sse"


class MessageStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"
    CANCELLED = "cancelled"  # stopped by the tester (Stop) before it ended


class Role(StrEnum):
    ADMIN = "admin"
    TESTER = "tester"
