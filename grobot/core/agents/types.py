"""Types shared by the chain and its callers (bot process, Test Chat jobs, CLI).

This is the contract between the agent chain and the code that feeds it messages:
callers build an :class:`IncomingMessage` and pass an event sink; the chain emits
:class:`Event` objects and returns a :class:`ChainResult`.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


class EventKind(str, enum.Enum):
    THINKING = "thinking"  # why a step decided what it did
    PROGRESS = "progress"  # tool started / finished / failed, acknowledgements
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    TOKEN = "token"  # a batch of answer text: data {"text": "..."}
    DONE = "done"  # data: usage and timings; final
    ERROR = "error"  # data {"message": "..."}; final


FINAL_KINDS = frozenset({EventKind.DONE, EventKind.ERROR})

NATIVE_MODE = "native"  # a bot's agent_mode: the output model calls the tools itself (else "chain")


@dataclass
class Event:
    kind: EventKind
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[Event], Awaitable[None]]


@dataclass
class Attachment:
    filename: str
    content_type: str = "application/octet-stream"
    size: int = 0
    url: str | None = None
    text: str | None = None  # decoded text attachments (go into the context)
    image_base64: str | None = None  # images (go to the output model when it supports images)


@dataclass
class IncomingMessage:
    """A message a bot received, from Discord or from the Test Chat."""

    bot_id: int
    conversation_key: str  # "guild:<channel id>", "dm:<channel id>", "thread:<id>", "test:<session>"
    content: str
    author_id: str
    author_name: str
    platform: str = "discord"  # "discord" | "test_chat" | "cli"
    guild_id: str | None = None
    guild_name: str | None = None
    channel_id: str | None = None
    channel_name: str | None = None
    parent_channel_id: str | None = None  # a thread's channel: its reply rules are the thread's too
    discord_message_id: str | None = None
    attachments: list[Attachment] = field(default_factory=list)
    is_dm: bool = False
    mentions_bot: bool = False
    is_reply_to_bot: bool = False
    author_is_bot: bool = False
    author_role_ids: list[str] = field(default_factory=list)  # the author's roles in the guild (none in a DM)
    # Test Chat: the id of the stored (pending) user message this run answers.
    run_id: int | None = None
    created_at: Any = None


@dataclass
class BotConfig:
    """The bot's settings as read at the start of this message."""

    id: int
    name: str
    personality: str
    agent_mode: str
    max_tool_rounds: int
    reply_when_relevant: bool = False
    user_cooldown_seconds: float = 0.0  # flood control (see grobot.core.flood)
    max_concurrent_runs: int = 1
    documents_enabled: bool = True  # answers from its documents (grobot.core.documents)
    documents_threshold: float = 0.3
    web_search: bool = False  # the web tools (web_search, web_read) are on
    web_search_url: str = ""  # the SearXNG instance they search ("": the keyless metasearch)
    channel_personality: str = ""  # the channel persona's addition (already in ``personality``)


@dataclass
class ChainResult:
    replied: bool  # False when the Gatekeeper decided to stay silent
    text: str = ""
    run_id: int | None = None  # id of the stored user message
    error: str | None = None
    public_error: str | None = None  # what a chat platform's user is told of ``error`` (None: ``error`` itself)
    llm_calls: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    refusal: str = ""  # why the checks refused it (a limit, the cooldown, busy, the reply rules): what the user is told
    images: list[Any] = field(default_factory=list)  # the tools' images (ToolImage), for the user with the answer


def limited_user(msg: IncomingMessage) -> str | None:
    """The Discord user whose daily messages count (Test Chat and CLI messages are not counted)."""
    return str(msg.author_id) if msg.platform == "discord" and msg.author_id else None


ACCESS_FIELDS = ("allowed_user_ids", "blocked_user_ids", "allowed_role_ids", "blocked_role_ids")
RULE_FIELDS = ("reply_in_dms", "allowed_channel_ids", "reply_to_mentions", "reply_to_replies", "always_on_channel_ids",
               "keywords", "reply_when_relevant", *ACCESS_FIELDS)


@dataclass(frozen=True)
class ReplyRules:
    """When a bot answers (see :func:`grobot.core.agents.gatekeeper.rules_decision`), as plain data."""

    reply_in_dms: bool = True
    allowed_channel_ids: list[str] = field(default_factory=list)
    reply_to_mentions: bool = True
    reply_to_replies: bool = True
    always_on_channel_ids: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    reply_when_relevant: bool = False
    # Who may use the bot (see grobot.core.agents.reply_rules.access_refused): Discord user and role ids.
    allowed_user_ids: list[str] = field(default_factory=list)
    blocked_user_ids: list[str] = field(default_factory=list)
    allowed_role_ids: list[str] = field(default_factory=list)
    blocked_role_ids: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, bot: Any) -> ReplyRules:
        """The rules of anything that has the rule fields (a ``Bot`` row, a dict's values)."""
        get = bot.get if isinstance(bot, dict) else (lambda name: getattr(bot, name))
        values: dict[str, Any] = {name: (list(get(name) or []) if name.endswith(("_ids", "keywords")) else bool(get(name)))
                                  for name in RULE_FIELDS}
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in RULE_FIELDS}
