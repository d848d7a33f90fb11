"""A bot's data on the database: what the supervisor serves its bots over the bot link.

:class:`LocalBotStore` is :class:`bot_worker.remote_store.BotStore` on the service functions
in this process. The supervisor runs it for its bots (:func:`bot_worker.link_ops.dispatch`, behind
``/v1/bots/{id}/store/{op}``); a bot started by hand, without a supervisor, uses it
directly. Every rule stays in the services; this module only translates.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from concurrent.futures import Executor
from datetime import datetime
from typing import Any

from sqlmodel import Session

from bot_worker.link_data import BotSettings, MessageData
from bot_worker.timings import timings_logger
from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.run_store import RunWrite
from grobot.core.agents.types import IncomingMessage, ReplyRules
from grobot.core.documents import message as doc_message
from grobot.core.llm.service import CallRecord
from grobot.core.logs import write_log_rows
from grobot.core.memory import NoopMemory
from grobot.core.memory.lookup import start_memory_lookup
from grobot.core.models import Bot
from grobot.core.services import bot_runs, conversations, fleet
from grobot.core.services.bots import get_token
from grobot.core.settings import get_settings
from grobot.core.store.run_store_db import DatabaseStore, save_calls, write_run

logger = logging.getLogger(__name__)


def bot_settings(bot: Any, *, with_token: bool = False) -> BotSettings:
    """``bot``: a ``Bot``, or a row of its columns."""
    return BotSettings(
        id=bot.id or 0, name=bot.name, enabled=bool(bot.enabled), version=fleet.config_version(bot.updated_at),
        gateway_revision=int(bot.gateway_revision or 0), message_content_intent=bool(bot.message_content_intent),
        members_intent=bool(bot.members_intent), rules=ReplyRules.of(bot),
        token=get_token(bot) if with_token else None,
    )


_BUILTIN_TEXTS: list[str] = []


def tool_texts(bot_id: int, *, has_links: bool, session: Session) -> list[str]:
    """What the Tool Router compares a message of the bot with, as the database knows its tools: the
    built-ins a bot process has (its files, notes, memory and Discord tools) and the tools its MCP
    servers listed last (``mcp_server.tools_cache``). A tool the bot's catalog has besides is scored
    by the router itself."""
    from grobot.core.agents.tool_router import tool_text
    from grobot.core.services.mcp_servers import bot_links
    from grobot.core.tools.base import ToolSpec
    from grobot.core.tools.builtins import builtin_tools
    from grobot.core.tools.mcp_results import namespaced

    if not _BUILTIN_TEXTS:
        placeholder = object()  # the tools are only built, never called
        _BUILTIN_TEXTS.extend(tool_text(t.spec) for t in builtin_tools(0, store=placeholder, discord=placeholder,
                                                                       memory=placeholder))
    texts = list(_BUILTIN_TEXTS)
    if not has_links:
        return texts
    for link, server in bot_links(session=session, bot_id=bot_id):
        allowed = set(link.allowed_tools) if link.allowed_tools else None
        for tool in server.tools_cache or []:
            name = str(tool.get("name") or "")
            if name and (allowed is None or name in allowed):
                description = str(tool.get("description") or "").strip() or name
                texts.append(tool_text(ToolSpec(name=namespaced(server.name, name), description=description,
                                                input_schema={})))
    return texts


async def _similarities(memory: Any, text: str, candidates: list[str]) -> list[float] | None:
    """The Tool Router's scores of ``text`` against ``candidates``, within the memory time limit
    (None: the bot's router asks again, or decides by words)."""
    try:
        return list(await asyncio.wait_for(memory.similarities(text, candidates), get_settings().memory_budget_seconds))
    except Exception as exc:
        logger.info("No tool scores for the message (%s)", type(exc).__name__)
        return None


async def _none() -> Any:
    return None


class LocalBotStore(DatabaseStore):
    """:class:`bot_worker.remote_store.BotStore` on the database of this process; ``deps``: the
    supervisor's (its memory looks a message's memories up and scores it against the tools)."""

    def __init__(self, executor: Executor | None = None, *, deps: ChainDeps | None = None) -> None:
        super().__init__(executor)
        self.deps = deps if deps is not None else ChainDeps(store=self)

    async def settings_at_start(self, bot_id: int) -> BotSettings | None:
        def read(session: Session) -> BotSettings | None:
            bot = session.get(Bot, bot_id)
            return bot_settings(bot, with_token=True) if bot is not None else None

        return await self._read(read)

    async def prepare_for_bot(self, bot_id: int, msg: IncomingMessage
                              ) -> tuple[MessageData, Awaitable[dict[str, Any]] | None]:
        """What bot ``bot_id``'s process reads of a Discord message, in one request answered in two
        parts: at once its settings, the reply rules' word and, for a message it may answer, its MCP
        servers and its run's start; then (the awaitable, None for a message it does not answer) its
        memories and the Tool Router's scores against :func:`tool_texts`, from the supervisor's memory.

        The message's vector starts before the database read when the bot has memories (the model
        runs beside the read); for the scores, only when a word of the message is near a tool (the
        memory's word filter). The bot checks the message and gets ready while they come.
        """
        from grobot.core.agents.tool_router import precomputable
        from grobot.core.store.run_store_db import read_for_message

        marks = [time.perf_counter()]
        memory = self.deps.memory
        start_embedding = getattr(memory, "start_embedding", None)
        if start_embedding is not None and memory.may_have_memories(bot_id) and msg.content.strip():  # type: ignore[attr-defined]
            await start_embedding(msg.content)  # the lookup's vector, beside the database read
        marks.append(time.perf_counter())

        def read(session: Session) -> tuple[Any, list[str]]:
            found = read_for_message(msg, session=session, cache=self.settings_cache)
            if found is None or found.settings is None or found.decision is False or not precomputable(msg.content):
                return found, []
            has_links = bool(found.bot.has_links)
            return found, found.settings.part("tool_texts", lambda: tool_texts(bot_id, has_links=has_links,
                                                                               session=session))

        found, texts = await self._read(read)
        marks.append(time.perf_counter())
        if found is None:
            return MessageData(settings=None), None
        settings = found.settings.part("bot_settings", lambda: bot_settings(found.bot)) if found.settings is not None \
            else bot_settings(found.bot)
        data = MessageData(settings=settings, decision=found.decision)
        if found.decision is False:
            return data, None
        data.links, data.loaded = found.links, found.loaded
        return data, self._lookups(bot_id, msg, texts, marks, bot=found.loaded.bot if found.loaded else None)

    async def _lookups(self, bot_id: int, msg: IncomingMessage, texts: list[str], marks: list[float], *,
                       bot: Any = None) -> dict[str, Any]:
        """A message's memories, its passages of the bot's documents and its scores against ``texts``
        (the second part of :meth:`prepare_for_bot`)."""
        memory = self.deps.memory
        scored = _similarities(memory, msg.content, texts) if texts and not isinstance(memory, NoopMemory) \
            else _none()
        lookup = start_memory_lookup(msg, memory)
        passages = doc_message.start_lookup(memory, msg, bot) if bot is not None else None  # beside the memories
        found, scores = await asyncio.gather(lookup if lookup is not None else _none(), scored)
        documents = (await passages if passages is not None else doc_message.NOTHING) if bot is not None else None
        if timings_logger.isEnabledFor(logging.DEBUG):
            marks.append(time.perf_counter())
            vector, database, rest = (1000 * (b - a) for a, b in zip(marks, marks[1:]))
            timings_logger.debug("bot %s: read for a message (ms): vector started %.2f, database %.2f, memories and "
                                 "scores %.2f", bot_id, vector, database, rest)
        return {"memories": list(found or []), "documents": documents.as_dict() if documents is not None else None,
                "scores": dict(zip(texts, scores)) if scores is not None and len(scores) == len(texts) else None}

    async def mark_online(self, bot_id: int, *, pid: int, user_id: str, user_name: str, guild_count: int,
                          revision: int) -> bool:
        return await self._write(lambda session: fleet.mark_online(
            bot_id, pid=pid, user_id=user_id, user_name=user_name, guild_count=guild_count, revision=revision,
            session=session))

    async def record_exit(self, bot_id: int, detail: str, *, pid: int, rejected_revision: int | None = None) -> None:
        await self._write(lambda session: fleet.mark_error(bot_id, detail, session=session,
                                                           rejected_revision=rejected_revision, pid=pid))

    async def forget(self, bot_id: int, key: str, user_id: str) -> int:
        return await self._write(lambda session: conversations.forget_user(session=session, bot_id=bot_id, key=key,
                                                                           user_id=user_id))

    async def save_roles(self, bot_id: int, guild_id: str, guild_name: str, roles: list[tuple[str, str, int]]) -> int:
        """The roles the bot sees in a guild now (for the access lists, by name)."""
        from grobot.core.services.discord_roles import save_roles

        return await self._write(lambda session: save_roles(bot_id, guild_id, guild_name, roles, session=session))

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
        return await self._write(lambda session: write_run(session, bot_runs.own_write(bot_id, write, session=session)))

    async def save_own_calls(self, bot_id: int, run_id: int | None, records: list[CallRecord],
                             notes: list[tuple[str, str, float]]) -> None:
        """:meth:`save_calls` for bot ``bot_id`` only (its run, or NotFoundError), in one transaction."""
        def work(session: Session) -> None:
            bot_runs.check_run(bot_id, run_id, session=session)
            save_calls(session, bot_id, run_id, records, notes)

        await self._write(work)

    async def council_plan(self, bot_id: int, asker: str | None) -> Any:
        """The bot's advisory council (:class:`grobot.core.agents.council.CouncilPlan`)."""
        from grobot.core.services import council

        return await self._read(lambda session: council.council_plan(bot_id, session=session, discord_user_id=asker))

    async def save_deliberation(self, bot_id: int, deliberation: Any, *, asked_by: str, platform: str,
                                deliberation_id: int | None = None) -> int:
        """Store a deliberation of the bot (an object with ``as_dict``, or its dict): a new one, or the running one
        ``deliberation_id`` as it is now; a finished one with its LLM calls."""
        from grobot.core.services import council

        return await self._write(lambda session: council.save_deliberation(
            bot_id, deliberation, session=session, asked_by=asked_by, platform=platform,
            deliberation_id=deliberation_id).id or 0)

    async def drop_deliberation(self, bot_id: int, deliberation_id: int) -> None:
        """Remove a running deliberation of the bot that was stopped."""
        from grobot.core.services import council

        await self._write(lambda session: council.drop_deliberation(bot_id, deliberation_id, session=session))

    async def write_logs(self, rows: list[dict[str, Any]]) -> int:
        """Log records of a bot; returns how many were dropped (the bot was deleted meanwhile)."""
        return await self._thread(lambda: write_log_rows(rows))

    async def close(self) -> None:
        return None
