"""The chain's one port to storage: what a run reads when it starts and writes as it goes.

A run reads the bot's settings, its LLM settings, the conversation, what the bot knows of
the author and today's usage (:class:`Loaded`), and writes the user message, its events,
the answer and the LLM accounting (:class:`RunWrite`); the Archivist and the built-in tools
read and write notes and files. All of it goes through a :class:`RunStore`:

- in the supervisor (Test Chat jobs), the CLI and the tests: the service functions in this
  process (:class:`grobot.core.agents.run_store_db.DatabaseStore`, the default);
- in a bot process: its supervisor, over the bot link (:mod:`bot_worker.remote_store`). So a
  bot imports no database layer (SQLAlchemy, SQLModel, pydantic: about 30 MiB per process)
  and holds no database connection; every rule still lives in the services.

Everything here is plain data that crosses the link as JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from grobot.core.agents.context import UserKnowledge
from grobot.core.agents.types import BotConfig, IncomingMessage, ReplyRules
from grobot.core.errors import GroBotError
from grobot.core.limits import LimitState
from grobot.core.llm.base import CallRecord
from grobot.core.llm.effective import EffectiveLLM
from grobot.core.moderation import Moderation


class StoreUnavailable(GroBotError, ConnectionError):
    """The store cannot read or write for now (its database locked or unreachable, the supervisor
    away): the same operation may work when tried again later."""


@dataclass
class Loaded:
    """What one run reads when it starts (one read-only transaction)."""

    bot: BotConfig
    llms: dict[str, EffectiveLLM]
    conversation_id: int | None
    history: list[dict[str, Any]]
    knowledge: UserKnowledge = field(default_factory=UserKnowledge)
    run_status: str | None = None
    rules: ReplyRules | None = None
    limits: LimitState | None = None  # today's usage and the limits, read with the rest
    moderation: Moderation | None = None  # None: the bot moderates nothing
    # The message it was read for (a preloaded read is used for that message only).
    bot_id: int | None = None
    conversation_key: str | None = None
    run_id: int | None = None

    def is_for(self, msg: IncomingMessage) -> bool:
        return (self.bot_id, self.conversation_key, self.run_id) == (msg.bot_id, msg.conversation_key, msg.run_id)

    def as_dict(self) -> dict[str, Any]:
        return {
            "bot": dict(vars(self.bot)), "llms": {k: v.as_dict() for k, v in self.llms.items()},
            "conversation_id": self.conversation_id, "history": self.history,
            "knowledge": {"directives": self.knowledge.directives, "notes": [list(n) for n in self.knowledge.notes]},
            "run_status": self.run_status, "rules": self.rules.as_dict() if self.rules is not None else None,
            "limits": self.limits.as_dict() if self.limits is not None else None,
            "moderation": self.moderation.as_dict() if self.moderation is not None else None,
            "bot_id": self.bot_id, "conversation_key": self.conversation_key, "run_id": self.run_id,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Loaded:
        knowledge = data.get("knowledge") or {}
        return cls(
            bot=BotConfig(**data["bot"]), llms={k: EffectiveLLM.from_dict(v) for k, v in data["llms"].items()},
            conversation_id=data.get("conversation_id"), history=list(data.get("history") or []),
            knowledge=UserKnowledge(directives=knowledge.get("directives") or "",
                                    notes=[(str(n), float(r)) for n, r in knowledge.get("notes") or []]),
            run_status=data.get("run_status"),
            rules=ReplyRules(**data["rules"]) if data.get("rules") else None,
            limits=LimitState(**data["limits"]) if data.get("limits") else None,
            moderation=Moderation.from_dict(data["moderation"]) if data.get("moderation") else None,
            bot_id=data.get("bot_id"), conversation_key=data.get("conversation_key"), run_id=data.get("run_id"),
        )


def message_key(msg: IncomingMessage) -> dict[str, Any]:
    """What :meth:`RunStore.load` needs of a message (it crosses the bot link)."""
    return {"bot_id": msg.bot_id, "conversation_key": msg.conversation_key, "run_id": msg.run_id,
            "author_id": msg.author_id, "platform": msg.platform}


def message_from_key(data: dict[str, Any]) -> IncomingMessage:
    return IncomingMessage(bot_id=int(data["bot_id"]), conversation_key=str(data["conversation_key"]), content="",
                           author_id=str(data.get("author_id") or ""), author_name="",
                           platform=str(data.get("platform") or "discord"), run_id=data.get("run_id"))


@dataclass
class UserMessageIn:
    """The user message a Discord run stores with its first write (its id is the run's id)."""

    bot_id: int
    conversation_key: str
    title: str
    content: str
    author_id: str
    author_name: str
    guild_id: str | None = None
    channel_id: str | None = None
    discord_message_id: str | None = None
    attachments: list[dict[str, Any]] | None = None
    counted_user: str | None = None  # the Discord user whose daily messages count (None: not counted)


@dataclass
class RunEnd:
    """What the last write of a run stores besides its events."""

    bot_id: int
    author_name: str  # the bot's name, on the answer's messages
    new_messages: list[dict[str, Any]] = field(default_factory=list)  # the answer and the tool exchange
    records: list[CallRecord] = field(default_factory=list)  # the LLM calls of the run
    stored_run: bool = False  # the run answers a stored message (Test Chat): its status is set
    error: str | None = None
    cancelled: bool = False  # the run was stopped (the error says so)


@dataclass
class RunWrite:
    """One write of a run, in one transaction: the user message (first write of a Discord run),
    events ``(seq, kind, data)``, and at the end what :class:`RunEnd` holds."""

    run_id: int | None = None
    conversation_id: int | None = None
    user_message: UserMessageIn | None = None
    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    end: RunEnd | None = None
    # An earlier write of this run failed, perhaps after it was stored (a timeout): store this
    # one only if it was not stored already (the same user message, the same first event).
    retry: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunWrite:
        user, end = data.get("user_message"), data.get("end")
        return cls(
            run_id=data.get("run_id"), conversation_id=data.get("conversation_id"),
            user_message=UserMessageIn(**user) if user else None,
            events=[(int(seq), str(kind), dict(payload)) for seq, kind, payload in data.get("events") or []],
            end=RunEnd(**{**end, "records": records_from(end.get("records"))}) if end else None,
            retry=bool(data.get("retry")),
        )


def records_from(items: list[dict[str, Any]] | None) -> list[CallRecord]:
    return [CallRecord(**item) for item in items or []]


class RunStore(Protocol):
    """Storage as a run sees it. Every method may raise; the chain reports what fails."""

    async def load(self, msg: IncomingMessage) -> Loaded:
        """What a run of ``msg`` reads at its start (:class:`Loaded`)."""

    async def tool_settings(self) -> tuple[float, float]:
        """``(acknowledge_after_seconds, tool_timeout_seconds)`` (only runs that call tools read them)."""

    async def write_run(self, write: RunWrite) -> tuple[int | None, int | None]:
        """Store one write of a run; returns ``(conversation id, run id)`` (known after the first)."""

    async def save_calls(self, bot_id: int, run_id: int | None, records: list[CallRecord],
                         notes: list[tuple[str, str, float]] | None = None) -> None:
        """LLM calls outside a run's writes (a silenced run, the Archivist), and the Archivist's
        notes ``(discord user id, note, reliability)``."""

    async def mcp_links(self, bot_id: int) -> list[Any]:
        """The bot's MCP associations (:class:`grobot.core.tools.catalog.Link`)."""

    async def list_files(self, bot_id: int) -> list[dict[str, Any]]: ...

    async def read_file(self, bot_id: int, path: str, max_chars: int) -> tuple[str, bool]: ...

    async def list_notes(self, bot_id: int, user: str) -> list[dict[str, Any]]: ...

    async def add_note(self, bot_id: int, user: str, note: str, reliability: float, source: str) -> dict[str, Any]: ...

    async def update_note(self, bot_id: int, user: str, note_id: int, note: str | None,
                          reliability: float | None) -> dict[str, Any]: ...

