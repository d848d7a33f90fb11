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
    """What one message reads: the bot's settings, and for a message its rules may answer,
    its MCP servers, what the chain reads at its start and, when asked, its memories (None
    when it could not be read: the catalog and the chain then read it themselves and report
    what fails)."""

    settings: BotSettings | None
    decision: bool | None = False  # the reply rules' word on the message (False: not for the bot)
    links: list[Any] | None = None
    loaded: Loaded | None = None
    memories: list[str] | None = None
    similarities: list[float] | None = None  # the message against the ``route_texts`` asked for
    documents: Found | None = None  # its passages of the bot's documents, looked up with the memories

    def as_dict(self) -> dict[str, Any]:
        return {"settings": self.settings.as_dict() if self.settings else None, "decision": self.decision,
                "links": [link.as_dict() for link in self.links] if self.links is not None else None,
                "loaded": self.loaded.as_dict() if self.loaded is not None else None, "memories": self.memories,
                "similarities": self.similarities,
                "documents": self.documents.as_dict() if self.documents is not None else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MessageData:
        from grobot.core.tools.catalog import Link

        links, loaded, found, scores = data.get("links"), data.get("loaded"), data.get("memories"), data.get("similarities")
        return cls(
            settings=BotSettings.from_dict(data["settings"]) if data.get("settings") else None,
            decision=None if data.get("decision") is None else bool(data["decision"]),
            links=[Link.from_dict(item) for item in links] if links is not None else None,
            loaded=Loaded.from_dict(loaded) if loaded else None,
            memories=[str(m) for m in found] if found is not None else None,
            similarities=[float(v) for v in scores] if scores is not None else None,
            documents=Found.from_dict(data.get("documents")),
        )


def incoming_dict(msg: IncomingMessage) -> dict[str, Any]:
    """The message as the reply rules see it (without attachments, which are read later)."""
    return {**vars(msg), "attachments": [], "created_at": None}
