"""Plain data a bot process reads over the bot link: its settings, and what one message reads.

Both ends import it (the bot's :mod:`bot_worker.remote_store`, the supervisor's
:mod:`bot_worker.local_store`); it imports no database layer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from grobot.core.agents.run_store import Loaded
from grobot.core.agents.types import IncomingMessage, ReplyRules
from grobot.core.documents.message import Found

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BotSettings:
    """What a bot process needs of its ``bot`` row, as plain data."""

    id: int
    name: str
    enabled: bool
    version: str  # changes with every change of the settings (``Bot.updated_at``)
    gateway_revision: int = 0
    message_content_intent: bool = True
    members_intent: bool = False
    rules: ReplyRules = field(default_factory=ReplyRules)
    token: str | None = field(default=None, repr=False)  # only in the answer at start

    def as_dict(self) -> dict[str, Any]:
        return {**vars(self), "rules": self.rules.as_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BotSettings:
        return cls(**{**data, "rules": ReplyRules(**data["rules"])})


@dataclass
class MessageData:
    """What a bot's supervisor read of one message, first (the bot makes it its
    :class:`~grobot.core.agents.run_store.Prepared`): the bot's settings (None: no such bot), the
    reply rules' word on the message and, for a message the bot may answer, its MCP servers (None:
    the catalog reads them) and what the chain reads at its start. Its memories and the Tool
    Router's scores follow in the answer's second part (:func:`lookups_from`)."""

    settings: BotSettings | None
    decision: bool | None = False
    links: list[Any] | None = None
    loaded: Loaded | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"settings": self.settings.as_dict() if self.settings else None, "decision": self.decision,
                "links": [link.as_dict() for link in self.links] if self.links is not None else None,
                "loaded": self.loaded.as_dict() if self.loaded is not None else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MessageData:
        from grobot.core.tools.catalog import Link

        links, loaded = data.get("links"), data.get("loaded")
        return cls(
            settings=BotSettings.from_dict(data["settings"]) if data.get("settings") else None,
            decision=None if data.get("decision") is None else bool(data["decision"]),
            links=[Link.from_dict(item) for item in links] if links is not None else None,
            loaded=Loaded.from_dict(loaded) if loaded else None,
        )


def lookups_from(data: dict[str, Any] | None) -> tuple[list[str], dict[str, float] | None, Found | None]:
    """``(memories, scores, document passages)`` of a message from the second part of its read
    (None: none came)."""
    data = data or {}
    scores = data.get("scores")
    return ([str(m) for m in data.get("memories") or []],
            {str(k): float(v) for k, v in scores.items()} if isinstance(scores, dict) else None,
            Found.from_dict(data.get("documents")))


def incoming_dict(msg: IncomingMessage) -> dict[str, Any]:
    """The message as the reply rules see it (without attachments, which are read later)."""
    return {**vars(msg), "attachments": [], "created_at": None}
