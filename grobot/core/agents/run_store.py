"""The chain's one port to storage: what a run reads when it starts and writes as it goes.

A run reads the bot's settings, its LLM settings, the conversation, what the bot knows of
the author and today's usage (:class:`Loaded`), and writes the user message, its events,
the answer and the LLM accounting (:class:`RunWrite`); the Archivist and the built-in tools
read and write notes and files. All of it goes through a :class:`RunStore`:

- in the supervisor (Test Chat jobs), the CLI and the tests: the service functions in this
  process (:class:`grobot.core.store.run_store_db.DatabaseStore`, the default);
- in a bot process: its supervisor, over the bot link (:mod:`bot_worker.remote_store`). So a
  bot imports no database layer (SQLAlchemy, SQLModel, pydantic: about 30 MiB per process)
  and holds no database connection; every rule still lives in the services.

Everything here is plain data that crosses the link as JSON.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from grobot.core.agents.context import UserKnowledge
from grobot.core.agents.types import BotConfig, IncomingMessage, ReplyRules
from grobot.core.errors import GroBotError
from grobot.core.limits import LimitState
from grobot.core.llm.base import CallRecord
from grobot.core.llm.effective import EffectiveLLM
from grobot.core.moderation import Moderation
from grobot.core.tools.base import ToolImage
from grobot.core.wording import counted, duration

logger = logging.getLogger(__name__)


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


Scores = dict[str, float]  # tool text -> its similarity to the message (the Tool Router's)
# What a Discord user is told when their message cannot be read (the details go to the bot's log).
UNREADABLE_NOTICE = "Sorry, I can't answer right now (my settings cannot be read); please try again shortly."


def ready(value: Any) -> asyncio.Future[Any]:
    """An awaitable that is already done with ``value`` (call on a running event loop)."""
    future = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


def addressed(msg: IncomingMessage) -> bool:
    """Whether ``msg`` asks the bot directly (a mention, a reply to it, a DM, Test Chat, the CLI):
    a message that cannot be answered then says why instead of staying silent."""
    return msg.platform != "discord" or msg.mentions_bot or msg.is_dm or msg.is_reply_to_bot


@dataclass
class Prepared:
    """One message as read before its checks: what every host gets from :meth:`RunStore.prepare`.

    ``decision``: the reply rules' word, evaluated once where the settings were read (True:
    answer; None: the Gatekeeper model decides; False: not for the bot); ``rules``: those rules
    (None: the bot could not be read), which say why to a user who asked. For a message the bot
    may answer: ``loaded`` (the settings and the run's start), ``links`` (its MCP servers; None:
    the catalog reads them), ``memories``, ``scores`` (the Tool Router's similarities by tool
    text; None: the router computes them) and ``documents`` (passages of the bot's documents;
    None: the chain looks them up), each an awaitable that may still be running.
    ``unreadable``: why the message could not be read ("" when it was); it is then refused with
    those words (a message not addressed to the bot stays silent).
    """

    msg: IncomingMessage
    decision: bool | None = False
    rules: ReplyRules | None = None
    loaded: Loaded | None = None
    links: list[Any] | None = None
    memories: Awaitable[list[str]] | None = None
    scores: Awaitable[Scores | None] | None = None
    documents: Awaitable[Any] | None = None  # its passages of the bot's documents (grobot.core.documents.message.Found)
    unreadable: str = ""

    @classmethod
    def failed(cls, msg: IncomingMessage, why: str) -> Prepared:
        """A message that could not be read: refused when it asked the bot directly, with ``why`` in
        Test Chat and the CLI, in plain words on Discord (:data:`UNREADABLE_NOTICE`)."""
        return cls(msg, decision=True if addressed(msg) else False,
                   unreadable=why if msg.platform != "discord" else UNREADABLE_NOTICE)

    async def found_memories(self) -> list[str]:
        """The memories ([] when none were looked up, or the lookup failed: an answer goes on without)."""
        try:
            return list(await self.memories) if self.memories is not None else []
        except Exception as exc:
            logger.info("No memories for the message (%s)", type(exc).__name__)
            return []

    async def found_scores(self) -> Scores | None:
        """The Tool Router's scores (None: none were computed, or they failed: the router computes them)."""
        try:
            return await self.scores if self.scores is not None else None
        except Exception as exc:
            logger.info("No tool scores for the message (%s)", type(exc).__name__)
            return None

    def discard(self) -> None:
        """Stop what is still being looked up for a message that is not answered."""
        for pending in (self.memories, self.scores, self.documents):
            if isinstance(pending, asyncio.Future) and not pending.done():
                pending.cancel()


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
    # An answered message's line in the bot's log (:func:`answered_line`): where, from whom, how long, how
    # many calls and tokens (never what was said), stored with the run's end.
    answered: dict[str, Any] | None = None


def answered_line(answered: dict[str, Any], run_id: int | None) -> str:
    """``Answered a message (channel 5, tess, run 7) in 3 min 26 s: 7 LLM calls, 3,000 tokens in, 200 out``
    (the user by name when known, else ``user ID``; never what was said)."""
    user = answered.get("user") or ""
    who = answered.get("name") or (f"user {user}" if user and user != "?" else "an unknown user")
    return (f"Answered a message ({answered.get('where')}, {who}, run {run_id if run_id is not None else '-'}) in "
            f"{duration(float(answered.get('ms') or 0) / 1000)}: {counted(int(answered.get('calls') or 0), 'LLM call')}, "
            f"{int(answered.get('tokens_in') or 0):,} tokens in, {int(answered.get('tokens_out') or 0):,} out")


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
        """As JSON-ready data (shallow: the events' payloads and the messages are JSON already)."""
        user, end = self.user_message, self.end
        return {"run_id": self.run_id, "conversation_id": self.conversation_id,
                "user_message": dict(vars(user)) if user is not None else None, "events": self.events,
                "end": {**vars(end), "records": [dict(vars(r)) for r in end.records]} if end is not None else None,
                "retry": self.retry}

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
    """Storage as a run sees it. Every method but :meth:`prepare` may raise; the chain reports what fails."""

    async def prepare(self, msg: IncomingMessage, *, memory: Any = None) -> Prepared:
        """Read ``msg`` (:class:`Prepared`): the reply rules' decision and, for a message the bot may
        answer, what its run reads at its start, its MCP servers, its memories (from ``memory``,
        the host's, when the store does not look them up itself) and the Tool Router's scores.
        Never raises: a message that cannot be read is :meth:`Prepared.failed`."""

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



@runtime_checkable
class ImageStore(Protocol):
    """A store that keeps the images of stored runs (the database's: Test Chat shows them)."""

    async def save_images(self, run_id: int, images: list[ToolImage]) -> list[int]:
        """Store a tool's images of run ``run_id``; returns their ids."""
        ...

    async def sent_images(self, run_id: int) -> list[ToolImage]:
        """The images the user sent with stored message ``run_id`` (Test Chat)."""
        ...
