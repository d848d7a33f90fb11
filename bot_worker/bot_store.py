"""A bot process's data, through its supervisor: the bot's settings, its runs, its files and notes.

A bot process imports no database layer and holds no database connection. What it reads
and writes goes to its supervisor over the bot link (:mod:`bot_worker.bot_link`), which
runs the same service functions as everything else (:mod:`bot_worker.bot_store_db`):

- the bot's own operations (:class:`BotStore`): its settings at start, the settings and
  run data for one message, the online and exit status, ``/reset``, its log records;
- the chain's (:class:`grobot.core.agents.store.RunStore`): a run's reads and writes, the
  Archivist's, and the built-in tools' files and notes.

A bot started by hand (no supervisor in its environment) uses
:class:`bot_worker.bot_store_db.LocalBotStore` instead: the same operations on the database.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot_worker.bot_link import BotLinkClient
from grobot.core.agents.store import Loaded, RunStore, RunWrite, message_key
from grobot.core.agents.types import IncomingMessage, ReplyRules
from grobot.core.errors import GroBotError, NotFoundError, ValidationError
from grobot.core.llm.service import CallRecord

logger = logging.getLogger(__name__)

STORE_TIMEOUT_SECONDS = 60.0  # a write may wait on a busy database (SQLite waits up to 30 s for a lock)
ERRORS: dict[str, type[GroBotError]] = {"not_found": NotFoundError, "validation": ValidationError}


class StoreUnavailable(ConnectionError):
    """The supervisor could not read or write for the bot (its database unreachable, say): try again later."""


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
    user_cooldown_seconds: float = 0.0
    max_concurrent_runs: int = 1
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
    links: list[Any] | None = None
    loaded: Loaded | None = None
    memories: list[str] | None = None
    similarities: list[float] | None = None  # the message against the ``route_texts`` asked for


def incoming_dict(msg: IncomingMessage) -> dict[str, Any]:
    """The message as the reply rules see it (without attachments, which are read later)."""
    return {**vars(msg), "attachments": [], "created_at": None}


class BotStore(RunStore, Protocol):
    """Everything a bot process reads and writes (besides Discord and its LLMs)."""

    async def settings_at_start(self, bot_id: int) -> BotSettings | None: ...

    async def for_message(self, bot_id: int, msg: IncomingMessage, *, memories: bool = False,
                          route_texts: list[str] | None = None) -> MessageData:
        """What ``msg`` reads (:class:`MessageData`); ``memories``: look its memories up too;
        ``route_texts``: score the message against these tool texts for the Tool Router."""

    async def mark_online(self, bot_id: int, *, pid: int, user_id: str, user_name: str, guild_count: int,
                          revision: int) -> bool: ...

    async def record_exit(self, bot_id: int, detail: str, *, pid: int, rejected_revision: int | None = None) -> None: ...

    async def forget(self, bot_id: int, key: str, user_id: str) -> int: ...

    async def output_takes_images(self, bot_id: int) -> bool: ...

    async def close(self) -> None: ...


class RemoteBotStore:
    """:class:`BotStore` through the supervisor (``POST /v1/bots/{id}/store/{op}`` on the bot link)."""

    def __init__(self, bot_id: int, link: BotLinkClient) -> None:
        self.bot_id = bot_id
        self.link = link

    async def _call(self, op: str, payload: dict[str, Any] | None = None) -> Any:
        status, data = await self.link.call(self.bot_id, f"store/{op}", payload or {}, timeout=STORE_TIMEOUT_SECONDS)
        if status == 200:
            return data.get("result")
        error = str(data.get("error") or f"the supervisor answered {status}")
        if status >= 500:
            raise StoreUnavailable(f"the supervisor could not do it: {error}")
        raise ERRORS.get(str(data.get("kind")), GroBotError)(error)

    # -- the bot's own ------------------------------------------------------------------------
    async def settings_at_start(self, bot_id: int) -> BotSettings | None:
        data = await self._call("start")
        return BotSettings.from_dict(data) if data else None

    async def for_message(self, bot_id: int, msg: IncomingMessage, *, memories: bool = False,
                          route_texts: list[str] | None = None) -> MessageData:
        from grobot.core.tools.catalog import Link

        data = await self._call("message", {"message": incoming_dict(msg), "memories": memories,
                                            "route_texts": route_texts or []})
        links, loaded, found, scores = data.get("links"), data.get("loaded"), data.get("memories"), data.get("similarities")
        return MessageData(
            settings=BotSettings.from_dict(data["settings"]) if data.get("settings") else None,
            links=[Link.from_dict(item) for item in links] if links is not None else None,
            loaded=Loaded.from_dict(loaded) if loaded else None,
            memories=[str(m) for m in found] if found is not None else None,
            similarities=[float(v) for v in scores] if scores is not None else None,
        )

    async def mark_online(self, bot_id: int, *, pid: int, user_id: str, user_name: str, guild_count: int,
                          revision: int) -> bool:
        return bool(await self._call("online", {"pid": pid, "user_id": user_id, "user_name": user_name,
                                                "guild_count": guild_count, "revision": revision}))

    async def record_exit(self, bot_id: int, detail: str, *, pid: int, rejected_revision: int | None = None) -> None:
        await self._call("exit", {"detail": detail, "pid": pid, "rejected_revision": rejected_revision})

    async def forget(self, bot_id: int, key: str, user_id: str) -> int:
        return int(await self._call("forget", {"key": key, "user_id": user_id}))

    async def output_takes_images(self, bot_id: int) -> bool:
        return bool(await self._call("images"))

    # -- the chain's (RunStore) ---------------------------------------------------------------
    async def load(self, msg: IncomingMessage) -> Loaded:
        return Loaded.from_dict(await self._call("load", {"message": message_key(msg)}))

    async def tool_settings(self) -> tuple[float, float]:
        ack, timeout = await self._call("tool_settings")
        return float(ack), float(timeout)

    async def write_run(self, write: RunWrite) -> tuple[int | None, int | None]:
        conversation_id, run_id = await self._call("write_run", write.as_dict())
        return conversation_id, run_id

    async def save_calls(self, bot_id: int, run_id: int | None, records: list[CallRecord],
                         notes: list[tuple[str, str, float]] | None = None) -> None:
        await self._call("save_calls", {"run_id": run_id, "records": [dict(vars(r)) for r in records],
                                        "notes": [list(n) for n in notes or []]})

    async def mcp_links(self, bot_id: int) -> list[Any]:
        from grobot.core.tools.catalog import Link

        return [Link.from_dict(item) for item in await self._call("mcp_links")]

    async def list_files(self, bot_id: int) -> list[dict[str, Any]]:
        return list(await self._call("list_files"))

    async def read_file(self, bot_id: int, path: str, max_chars: int) -> tuple[str, bool]:
        text, cut = await self._call("read_file", {"path": path, "max_chars": max_chars})
        return str(text), bool(cut)

    async def list_notes(self, bot_id: int, user: str) -> list[dict[str, Any]]:
        return list(await self._call("list_notes", {"user": user}))

    async def add_note(self, bot_id: int, user: str, note: str, reliability: float, source: str) -> dict[str, Any]:
        return dict(await self._call("add_note", {"user": user, "note": note, "reliability": reliability,
                                                  "source": source}))

    async def update_note(self, bot_id: int, user: str, note_id: int, note: str | None,
                          reliability: float | None) -> dict[str, Any]:
        return dict(await self._call("update_note", {"user": user, "note_id": note_id, "note": note,
                                                     "reliability": reliability}))

    # -- the advisory council (grobot.core.agents.council.CouncilPort) -------------------------
    async def council_plan(self, bot_id: int, asker: str | None) -> Any:
        from grobot.core.agents.council import CouncilPlan

        return CouncilPlan.from_dict(await self._call("council_plan", {"asker": asker}))

    async def save_deliberation(self, bot_id: int, deliberation: Any, *, asked_by: str, platform: str) -> int:
        return int(await self._call("council_save", {"deliberation": deliberation.as_dict(), "asked_by": asked_by}))

    async def close(self) -> None:
        await self.link.close()


class LinkLogWriter:
    """Writes a batch of log records through the bot link (the log handler's writer thread calls it).

    Plain ``urllib`` in that thread: the records must reach the supervisor even while the
    bot's event loop is busy or already gone.
    """

    def __init__(self, bot_id: int, link: BotLinkClient, timeout: float = 10.0) -> None:
        self.url = f"{link.url}/v1/bots/{bot_id}/store/logs"
        self.headers = {**link.headers, "Content-Type": "application/json"}
        self.timeout = timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1: never a proxy

    def __call__(self, rows: list[dict[str, Any]]) -> int:
        """Send ``rows``; returns how many the supervisor dropped (their bot was deleted)."""
        body = json.dumps({"rows": [{**row, "created_at": row["created_at"].isoformat()} for row in rows]}).encode()
        request = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
        with self._opener.open(request, timeout=self.timeout) as response:  # raises on any status but 2xx
            return int(json.loads(response.read()).get("result") or 0)
