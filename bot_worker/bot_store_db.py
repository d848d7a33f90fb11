"""A bot's data on the database: what the supervisor serves its bots over the bot link.

:class:`LocalBotStore` is :class:`bot_worker.bot_store.BotStore` on the service functions
in this process. The supervisor runs it for its bots (:func:`serve`, behind
``/v1/bots/{id}/store/{op}``); a bot started by hand, without a supervisor, uses it
directly. Every rule stays in the services; this module only translates.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, exists
from sqlmodel import Session, select

from bot_worker.bot_link import StoreError
from bot_worker.bot_store import BotSettings, MessageData
from grobot.core.agents.db_store import DatabaseStore, load_for_run, save_calls, write_run
from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.gatekeeper import rules_decision
from grobot.core.agents.store import RunWrite, message_from_key, records_from
from grobot.core.agents.tool_router import precomputable
from grobot.core.agents.types import Attachment, IncomingMessage, ReplyRules
from grobot.core.errors import GroBotError, NotFoundError, ValidationError
from grobot.core.llm.service import CallRecord
from grobot.core.logs import write_log_rows
from grobot.core.models import Bot, BotMcpServer, Conversation, Message
from grobot.core.services import fleet
from grobot.core.services.bots import get_token
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)


def bot_settings(bot: Any, *, with_token: bool = False) -> BotSettings:
    """``bot``: a ``Bot``, or a row of its columns."""
    return BotSettings(
        id=bot.id or 0, name=bot.name, enabled=bool(bot.enabled), version=fleet.config_version(bot.updated_at),
        gateway_revision=int(bot.gateway_revision or 0), message_content_intent=bool(bot.message_content_intent),
        members_intent=bool(bot.members_intent), rules=ReplyRules.of(bot),
        user_cooldown_seconds=float(bot.user_cooldown_seconds or 0), max_concurrent_runs=int(bot.max_concurrent_runs or 1),
        token=get_token(bot) if with_token else None,
    )


_BOT_QUERY: Any = None


def _bot_with_links_flag() -> Any:
    """``SELECT bot.*, EXISTS(its MCP associations) WHERE id = :bot_id`` (built once).

    Core, not the ORM: the row's columns read like a ``Bot``'s attributes, without an
    entity to build and track (read for every message a bot may answer)."""
    global _BOT_QUERY
    if _BOT_QUERY is None:
        has_links = exists().where(BotMcpServer.bot_id == Bot.id).label("has_links")
        _BOT_QUERY = select(*Bot.__table__.columns, has_links).where(Bot.id == bindparam("bot_id"))  # type: ignore[attr-defined]
    return _BOT_QUERY


def read_for_message(bot_id: int, msg: IncomingMessage, *, session: Session) -> MessageData:
    """The bot's settings; for a message its reply rules may answer, also its MCP associations
    (queried only when it has any: the bot's row says so in the same query) and what the
    chain reads at its start. A part that cannot be read is None."""
    bot = session.connection().execute(_bot_with_links_flag(), {"bot_id": bot_id}).first()
    if bot is None:
        return MessageData(settings=None)
    links_exist = bot.has_links
    data = MessageData(settings=bot_settings(bot))
    if bot.enabled and rules_decision(bot, msg) is not False:
        try:
            from grobot.core.tools.catalog import read_links

            data.links = read_links(bot_id, session=session) if links_exist else []
        except Exception as exc:
            logger.warning("Could not read the MCP servers of bot %s: %s", bot_id, type(exc).__name__,
                           extra={"bot_id": bot_id})
        try:
            data.loaded = load_for_run(msg, session=session, bot=bot)
        except Exception as exc:  # the chain reads again and reports it
            logger.debug("Preloading the run of bot %s failed: %s", bot_id, type(exc).__name__)
    return data


MAX_ROUTE_TEXTS = 256  # tool descriptions a message may be scored against


async def _similarities(memory: Any, text: str, candidates: list[str]) -> list[float] | None:
    """The Tool Router's scores of ``text`` against ``candidates``, within the memory time limit
    (None: the bot's router asks again, or decides by words)."""
    try:
        return list(await asyncio.wait_for(memory.similarities(text, candidates), get_settings().memory_budget_seconds))
    except Exception as exc:
        logger.info("No tool scores for the message (%s)", type(exc).__name__)
        return None


class LocalBotStore(DatabaseStore):
    """:class:`bot_worker.bot_store.BotStore` on the database of this process; ``deps``: the
    supervisor's (its memory looks a message's memories up and scores it against the tools)."""

    def __init__(self, executor: Executor | None = None, *, deps: ChainDeps | None = None) -> None:
        super().__init__(executor)
        self.deps = deps if deps is not None else ChainDeps(store=self)

    async def settings_at_start(self, bot_id: int) -> BotSettings | None:
        def read(session: Session) -> BotSettings | None:
            bot = session.get(Bot, bot_id)
            return bot_settings(bot, with_token=True) if bot is not None else None

        return await self._read(read)

    async def for_message(self, bot_id: int, msg: IncomingMessage, *, memories: bool = False,
                          route_texts: list[str] | None = None) -> MessageData:
        from grobot.core.agents.chain import start_memory_lookup

        memory = self.deps.memory
        embedding = getattr(memory, "embedding", None)
        routed = bool(route_texts) and embedding is not None and precomputable(msg.content)
        if routed:
            # The message's vector, for the Tool Router (and the memory lookup), on the memory's
            # threads while this one reads: the embedding releases the GIL while it runs.
            embedding(msg.content)
        data = await self._read(lambda session: read_for_message(bot_id, msg, session=session))
        if data.loaded is None:
            return data
        # After the read, and only for a message the bot answers. (At the same time, a Chroma query
        # would fight over the GIL on SQLite, where the read is Python on this thread: a waiting
        # thread may lose its 5 ms switch interval. On PostgreSQL it measured the same.)
        lookup = start_memory_lookup(msg, memory) if memories else None  # a query (and the embedding if not started)
        scores = asyncio.ensure_future(_similarities(memory, msg.content, list(route_texts or []))) if routed else None
        if lookup is not None:
            data.memories = await lookup  # within the memory time budget
        elif memories:
            data.memories = []
        if scores is not None:
            data.similarities = await scores
        return data

    async def mark_online(self, bot_id: int, *, pid: int, user_id: str, user_name: str, guild_count: int,
                          revision: int) -> bool:
        return await self._write(lambda session: fleet.mark_online(
            bot_id, pid=pid, user_id=user_id, user_name=user_name, guild_count=guild_count, revision=revision,
            session=session))

    async def record_exit(self, bot_id: int, detail: str, *, pid: int, rejected_revision: int | None = None) -> None:
        await self._write(lambda session: fleet.mark_error(bot_id, detail, session=session,
                                                           rejected_revision=rejected_revision, pid=pid))

    async def forget(self, bot_id: int, key: str, user_id: str) -> int:
        from bot_worker.conversations import forget

        return await self._write(lambda session: forget(bot_id, key, user_id, session=session))

    async def output_takes_images(self, bot_id: int) -> bool:
        from grobot.core.services.llm_settings import effective_llm

        return await self._read(lambda session: bool(
            effective_llm(session=session, category="output", bot_id=bot_id).supports_images))

    async def heartbeat(self, bot_id: int, *, pid: int, guild_count: int, online: bool
                        ) -> tuple[bool, str | None, datetime | None]:
        """A bot started by hand writes its own heartbeat: ``(still its process, lease holder, expiry)``."""
        def work(session: Session) -> tuple[bool, str | None, datetime | None]:
            ok = fleet.bot_heartbeat(bot_id, pid=pid, guild_count=guild_count, online=online, session=session)
            holder, expires = fleet.lease_of(bot_id, session=session)
            return ok, holder, expires

        return await self._write(work)

    async def write_own_run(self, bot_id: int, write: RunWrite) -> tuple[int | None, int | None]:
        """:meth:`write_run` for bot ``bot_id`` only: its conversation and its run, or NotFoundError."""
        def work(session: Session) -> tuple[int | None, int | None]:
            if write.conversation_id is not None:
                conversation = session.get(Conversation, write.conversation_id)
                if conversation is None or conversation.bot_id != bot_id:
                    raise NotFoundError(f"bot {bot_id} has no conversation numbered {write.conversation_id}")
            _check_run(session, bot_id, write.run_id)
            if write.user_message is not None:
                write.user_message.bot_id = bot_id
            if write.end is not None:
                write.end.bot_id = bot_id
                write.end.stored_run = False  # stored runs are the supervisor's Test Chat jobs
            return write_run(session, write)

        return await self._write(work)

    async def save_own_calls(self, bot_id: int, run_id: int | None, records: list[CallRecord],
                             notes: list[tuple[str, str, float]]) -> None:
        """:meth:`save_calls` for bot ``bot_id`` only (its run, or NotFoundError), in one transaction."""
        def work(session: Session) -> None:
            _check_run(session, bot_id, run_id)
            save_calls(session, bot_id, run_id, records, notes)

        await self._write(work)

    async def council_plan(self, bot_id: int, asker: str | None) -> Any:
        """The bot's advisory council (:class:`grobot.core.agents.council.CouncilPlan`)."""
        from grobot.core.services import council

        return await self._read(lambda session: council.council_plan(bot_id, session=session, discord_user_id=asker))

    async def save_deliberation(self, bot_id: int, deliberation: Any, *, asked_by: str, platform: str) -> int:
        """Store a deliberation of the bot (an object with ``as_dict``, or its dict) with its LLM calls."""
        from grobot.core.services import council

        return await self._write(lambda session: council.save_deliberation(
            bot_id, deliberation, session=session, asked_by=asked_by, platform=platform).id or 0)

    async def write_logs(self, rows: list[dict[str, Any]]) -> int:
        """Log records of a bot; returns how many were dropped (the bot was deleted meanwhile)."""
        return await self._thread(lambda: write_log_rows(rows))

    async def close(self) -> None:
        return None


def _check_run(session: Session, bot_id: int, run_id: int | None) -> None:
    """NotFoundError unless run ``run_id`` (a stored user message) is one of bot ``bot_id``'s."""
    if run_id is None:
        return
    stored = session.get(Message, run_id)
    owner = session.get(Conversation, stored.conversation_id) if stored is not None else None
    if owner is None or owner.bot_id != bot_id:
        raise NotFoundError(f"bot {bot_id} has no run numbered {run_id}")


def _incoming(data: dict[str, Any], bot_id: int) -> IncomingMessage:
    fields = {k: v for k, v in data.items() if k in IncomingMessage.__dataclass_fields__}
    fields["attachments"] = [Attachment(**a) for a in fields.get("attachments") or []]
    return IncomingMessage(**{**fields, "bot_id": bot_id, "run_id": None})


async def serve(store: LocalBotStore, bot_id: int, op: str, payload: dict[str, Any]) -> Any:
    """One operation a bot asked for over the bot link: its JSON-ready result.

    Every operation acts on the bot of the request's path only (what a payload says about
    the bot is overridden). Domain errors reach the bot with their kind and message.
    """
    try:
        return await _serve(store, bot_id, op, payload)
    except NotFoundError as exc:
        raise StoreError("not_found", str(exc), 404) from None
    except ValidationError as exc:
        raise StoreError("validation", str(exc), 422) from None
    except GroBotError as exc:
        raise StoreError("error", str(exc), 409) from None


async def _serve(store: LocalBotStore, bot_id: int, op: str, payload: dict[str, Any]) -> Any:
    if op == "message":
        data = await store.for_message(bot_id, _incoming(payload["message"], bot_id),
                                       memories=bool(payload.get("memories")),
                                       route_texts=[str(t) for t in payload.get("route_texts") or []][:MAX_ROUTE_TEXTS])
        return {"settings": data.settings.as_dict() if data.settings else None,
                "links": [link.as_dict() for link in data.links] if data.links is not None else None,
                "loaded": data.loaded.as_dict() if data.loaded is not None else None, "memories": data.memories,
                "similarities": data.similarities}
    if op == "load":
        # A bot's runs answer Discord messages: stored runs (run_id) are the supervisor's Test Chat jobs.
        msg = message_from_key({**payload["message"], "bot_id": bot_id, "run_id": None})
        return (await store.load(msg)).as_dict()
    if op == "write_run":
        return list(await store.write_own_run(bot_id, RunWrite.from_dict(payload)))
    if op == "save_calls":
        notes = [(str(u), str(n), float(r)) for u, n, r in payload.get("notes") or []]
        await store.save_own_calls(bot_id, payload.get("run_id"), records_from(payload.get("records")), notes)
        return None
    if op == "tool_settings":
        return list(await store.tool_settings())
    if op == "mcp_links":
        return [link.as_dict() for link in await store.mcp_links(bot_id)]
    if op == "list_files":
        return await store.list_files(bot_id)
    if op == "read_file":
        return list(await store.read_file(bot_id, str(payload["path"]), int(payload["max_chars"])))
    if op == "list_notes":
        return await store.list_notes(bot_id, str(payload["user"]))
    if op == "add_note":
        return await store.add_note(bot_id, str(payload["user"]), str(payload["note"]), float(payload["reliability"]),
                                    str(payload.get("source") or "tool"))
    if op == "update_note":
        reliability = payload.get("reliability")
        return await store.update_note(bot_id, str(payload["user"]), int(payload["note_id"]), payload.get("note"),
                                       float(reliability) if reliability is not None else None)
    if op == "start":
        settings = await store.settings_at_start(bot_id)
        return settings.as_dict() if settings is not None else None
    if op == "online":
        return await store.mark_online(bot_id, pid=int(payload["pid"]), user_id=str(payload["user_id"]),
                                       user_name=str(payload["user_name"]), guild_count=int(payload["guild_count"]),
                                       revision=int(payload["revision"]))
    if op == "exit":
        await store.record_exit(bot_id, str(payload["detail"]), pid=int(payload["pid"]),
                                rejected_revision=payload.get("rejected_revision"))
        return None
    if op == "forget":
        return await store.forget(bot_id, str(payload["key"]), str(payload["user_id"]))
    if op == "images":
        return await store.output_takes_images(bot_id)
    if op == "council_plan":
        return (await store.council_plan(bot_id, payload.get("asker"))).as_dict()
    if op == "council_save":
        return await store.save_deliberation(bot_id, dict(payload["deliberation"]), asked_by=str(payload["asked_by"]),
                                             platform="discord")
    if op == "logs":
        rows = [{"bot_id": bot_id, "created_at": datetime.fromisoformat(r["created_at"]), "level": str(r["level"]),
                 "logger": str(r["logger"])[:200], "message": str(r["message"])[:10_000]} for r in payload["rows"]]
        return await store.write_logs(rows)
    raise StoreError("bad_request", f"unknown operation {op!r}", 404)
