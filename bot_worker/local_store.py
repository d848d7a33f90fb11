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
from collections import OrderedDict
from concurrent.futures import Executor
from datetime import datetime
from typing import Any

from sqlmodel import Session

from bot_worker.link_data import BotSettings, MessageData
from bot_worker.timings import timings_logger
from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.run_store import RunWrite
from grobot.core.agents.run_store_db import DatabaseStore, save_calls, write_run
from grobot.core.agents.tool_router import precomputable
from grobot.core.agents.types import IncomingMessage, ReplyRules
from grobot.core.llm.service import CallRecord
from grobot.core.logs import write_log_rows
from grobot.core.models import Bot
from grobot.core.services import bot_runs, conversations, fleet
from grobot.core.services.bots import get_token
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)


def bot_settings(bot: Any, *, with_token: bool = False) -> BotSettings:
    """``bot``: a ``Bot``, or a row of its columns."""
    return BotSettings(
        id=bot.id or 0, name=bot.name, enabled=bool(bot.enabled), version=fleet.config_version(bot.updated_at),
        gateway_revision=int(bot.gateway_revision or 0), message_content_intent=bool(bot.message_content_intent),
        members_intent=bool(bot.members_intent), rules=ReplyRules.of(bot),
        token=get_token(bot) if with_token else None,
    )


def read_for_message(bot_id: int, msg: IncomingMessage, *, session: Session) -> MessageData:
    """What ``msg`` reads (:func:`grobot.core.services.bot_runs.read_for_message`), as the bot's data."""
    read = bot_runs.read_for_message(bot_id, msg, session=session)
    if read is None:
        return MessageData(settings=None)
    return MessageData(settings=bot_settings(read.bot), decision=read.decision, links=read.links, loaded=read.loaded)


async def _similarities(memory: Any, text: str, candidates: list[str]) -> list[float] | None:
    """The Tool Router's scores of ``text`` against ``candidates``, within the memory time limit
    (None: the bot's router asks again, or decides by words)."""
    try:
        return list(await asyncio.wait_for(memory.similarities(text, candidates), get_settings().memory_budget_seconds))
    except Exception as exc:
        logger.info("No tool scores for the message (%s)", type(exc).__name__)
        return None


class PendingScores:
    """The Tool Router's scores of messages whose read was answered before them.

    A bot sends a message's read and right after it a request for its scores (one slot per
    message key, made by whichever of the two comes first). The read starts the message's
    vector and is answered once the database is read, without waiting for the model; the
    bot goes on with its answer while the model runs, and the scores come when they are
    ready. Slots nobody claims (the bot gone) are dropped, oldest first.
    """

    KEEP = 256

    def __init__(self) -> None:
        self._slots: OrderedDict[tuple[int, str], asyncio.Future[list[float] | None]] = OrderedDict()

    def _slot(self, bot_id: int, key: str) -> asyncio.Future[list[float] | None]:
        slot = self._slots.get((bot_id, key))
        if slot is None:
            slot = self._slots[(bot_id, key)] = asyncio.get_running_loop().create_future()
            while len(self._slots) > self.KEEP:
                _, oldest = self._slots.popitem(last=False)
                if not oldest.done():
                    oldest.set_result(None)
        return slot

    def fill(self, bot_id: int, key: str, scores: asyncio.Future[list[float] | None]) -> None:
        """``scores`` answer the slot when they are done (None if cancelled)."""
        slot = self._slot(bot_id, key)

        def done(future: asyncio.Future[list[float] | None]) -> None:
            if not slot.done():
                slot.set_result(None if future.cancelled() or future.exception() is not None else future.result())

        scores.add_done_callback(done)

    def drop(self, bot_id: int, key: str) -> None:
        """No scores for ``key``: its request is answered None at once."""
        slot = self._slot(bot_id, key)
        if not slot.done():
            slot.set_result(None)

    async def take(self, bot_id: int, key: str, *, timeout: float) -> list[float] | None:
        slot = self._slot(bot_id, key)
        try:
            return await asyncio.wait_for(asyncio.shield(slot), timeout)
        except TimeoutError:
            return None
        finally:
            self._slots.pop((bot_id, key), None)


class LocalBotStore(DatabaseStore):
    """:class:`bot_worker.remote_store.BotStore` on the database of this process; ``deps``: the
    supervisor's (its memory looks a message's memories up and scores it against the tools)."""

    def __init__(self, executor: Executor | None = None, *, deps: ChainDeps | None = None) -> None:
        super().__init__(executor)
        self.deps = deps if deps is not None else ChainDeps(store=self)
        self.pending_scores = PendingScores()

    async def settings_at_start(self, bot_id: int) -> BotSettings | None:
        def read(session: Session) -> BotSettings | None:
            bot = session.get(Bot, bot_id)
            return bot_settings(bot, with_token=True) if bot is not None else None

        return await self._read(read)

    async def for_message(self, bot_id: int, msg: IncomingMessage, *, memories: bool = False,
                          route_texts: list[str] | None = None, scores_key: str | None = None) -> MessageData:
        """``scores_key``: the scores are not waited for but answered to :meth:`tool_scores` with
        this key (the bot asks for them right after this read, and goes on with the read's answer)."""
        from grobot.core.agents.chain import start_memory_lookup

        marks = [time.perf_counter()]
        memory = self.deps.memory
        start_embedding = getattr(memory, "start_embedding", None) if route_texts and precomputable(msg.content) else None
        deferred: asyncio.Future[list[float] | None] | None = None
        if start_embedding is not None:
            # The message's vector, for the Tool Router (and the memory lookup): the model runs
            # beside the database read.
            await start_embedding(msg.content)
            if scores_key:
                deferred = asyncio.ensure_future(_similarities(memory, msg.content, list(route_texts or [])))
                self.pending_scores.fill(bot_id, scores_key, deferred)
        if scores_key and deferred is None:
            self.pending_scores.drop(bot_id, scores_key)  # none to compute: the router asks for them if needed
        marks.append(time.perf_counter())
        data = await self._read(lambda session: read_for_message(bot_id, msg, session=session))
        marks.append(time.perf_counter())
        if data.loaded is None:
            if deferred is not None:
                deferred.cancel()  # not answered: nobody needs them
            return data
        # After the read, and only for a message the bot answers. (At the same time, a Chroma query
        # would fight over the GIL on SQLite, where the read is Python on this thread: a waiting
        # thread may lose its 5 ms switch interval. On PostgreSQL it measured the same.)
        lookup = start_memory_lookup(msg, memory) if memories else None  # a query (and the embedding if not started)
        scores = (asyncio.ensure_future(_similarities(memory, msg.content, list(route_texts or [])))
                  if start_embedding is not None and deferred is None else None)
        if lookup is not None:
            data.memories = await lookup  # within the memory time budget
        elif memories:
            data.memories = []
        if scores is not None:
            data.similarities = await scores
        if timings_logger.isEnabledFor(logging.DEBUG):
            marks.append(time.perf_counter())
            vector, read, rest = (1000 * (b - a) for a, b in zip(marks, marks[1:]))
            timings_logger.debug("bot %s: read for a message (ms): vector started %.2f, database %.2f, memories and "
                                 "scores %.2f", bot_id, vector, read, rest)
        return data

    async def tool_scores(self, bot_id: int, key: str) -> list[float] | None:
        """The scores :meth:`for_message` computes for ``key`` after answering (None: none were
        computed, or not within the memory time limit)."""
        return await self.pending_scores.take(bot_id, key, timeout=get_settings().memory_budget_seconds)

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
