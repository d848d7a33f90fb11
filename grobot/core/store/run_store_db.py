"""The chain's store in this process: the service functions on the database (see :mod:`.run_store`).

Used by the supervisor (its Test Chat jobs, and the bot link, where it serves its bots),
the CLI and the tests. Reads on SQLite run on the event loop (WAL: a read never waits for
writers, and it saves the thread hop); reads of a network database and every write run in
a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import insert
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlmodel import Session, col, select

from grobot.core.agents.context import UserKnowledge
from grobot.core.agents.reply_rules import rules_decision
from grobot.core.agents.run_store import Loaded, Prepared, RunWrite, StoreUnavailable, UserMessageIn, answered_line
from grobot.core.agents.types import BotConfig, IncomingMessage, ReplyRules, limited_user
from grobot.core.db import session_scope
from grobot.core.errors import GroBotError, NotFoundError, error_line
from grobot.core.llm.context_window import newest_within
from grobot.core.llm.service import CallRecord
from grobot.core.memory.lookup import start_memory_lookup
from grobot.core.models import AgentEvent, Bot, LogEntry, Message, MessageStatus, utcnow
from grobot.core.moderation import Moderation
from grobot.core.services import (
    app_settings,
    channel_personas,
    conversations,
    llm_calls,
    usage_accounting,
    usage_limits,
    user_notes,
)
from grobot.core.services import files as files_service
from grobot.core.services.llm_settings import bot_llms, effective_llms
from grobot.core.settings import get_settings
from grobot.core.store.bot_cache import BotSettingsCache, CachedBot
from grobot.core.tools.base import ToolImage

logger = logging.getLogger(__name__)

T = TypeVar("T")
ANSWERED_LOGGER = "grobot.core.agents.chain"  # the logger an answered message's line is stored under


def load_for_run(msg: IncomingMessage, *, session: Session, settings: CachedBot | None = None,
                 counters: usage_limits.Counters | None = None) -> Loaded:
    """Everything a run of ``msg`` needs, read in the caller's session (``settings``: its bot's, when
    just read, with what is kept of them: :mod:`grobot.core.store.bot_cache`; ``counters``: its usage
    and its bot's settings version, when just read: :func:`usage_limits.read_counters`).

    A caller that has just read the bot for this message (the bot link, for the reply
    rules) reads this in the same session: one session per message.
    """
    if counters is None:
        counters = usage_limits.read_counters(session=session, bot_id=msg.bot_id, discord_user_id=limited_user(msg))
    if settings is None:
        settings = BotSettingsCache().current(msg.bot_id, session=session, version=counters.version)
    if settings is None:
        raise NotFoundError(f"no bot numbered {msg.bot_id}")
    bot = settings.bot
    config = BotConfig(id=bot.id or 0, name=bot.name, personality=bot.personality or "", agent_mode=bot.agent_mode,
                       max_tool_rounds=max(0, int(bot.max_tool_rounds)), reply_when_relevant=bot.reply_when_relevant,
                       user_cooldown_seconds=float(bot.user_cooldown_seconds or 0),
                       max_concurrent_runs=int(bot.max_concurrent_runs or 1),
                       documents_enabled=bool(bot.documents_enabled), documents_threshold=float(bot.documents_threshold),
                       web_search=bool(bot.web_search),
                       web_search_url=(bot.web_search_url or app_settings.get_value("web_search_url", session=session))
                       if bot.web_search else "")
    run_status, channel_id = None, msg.channel_id
    if msg.run_id is not None:
        stored = session.get(Message, msg.run_id)
        if stored is None:
            raise NotFoundError(f"no stored message numbered {msg.run_id}")
        channel_id = channel_id or stored.as_channel_id  # Test Chat: the channel it is tested as
        conversation_id: int | None = stored.conversation_id
        run_status = stored.status
        history = conversations.load_history(session=session, conversation_id=stored.conversation_id,
                                             before_id=msg.run_id)
    else:
        conversation_id, history = conversations.load_history_by_key(session=session, bot_id=msg.bot_id,
                                                                     key=msg.conversation_key)
    # The channel's persona (a thread: its parent's), resolved once here for every host; not looked for
    # when the bot's row, read with its flags (:func:`read_for_message`), says it has none.
    persona = settings.persona(channel_id, msg.parent_channel_id, lambda: channel_personas.for_message(
        session=session, bot_id=bot.id or 0, channel_id=channel_id, parent_channel_id=msg.parent_channel_id)) \
        if not msg.is_dm and bot.has_personas else None
    if persona is not None:
        config.personality = channel_personas.with_addition(config.personality, persona.personality)
        config.channel_personality = persona.personality or ""
    llms = effective_llms(session=session, bot_id=bot.id, channel=persona.llms if persona is not None else None,
                          own=settings.part("llms", lambda: bot_llms(session=session, bot_id=bot.id)))
    # No more history than the largest window of its models can hold (the rest would be trimmed off every prompt).
    history = newest_within(history, max(int(llm.context_window) for llm in llms.values()))
    knowledge = UserKnowledge()
    if msg.author_id:
        knowledge.directives, knowledge.notes = user_notes.directives_and_notes(
            session=session, bot_id=msg.bot_id, discord_user_id=str(msg.author_id))
    limits = usage_limits.read_state(session=session, bot=bot, discord_user_id=limited_user(msg), counters=counters)
    moderation = Moderation.of(bot)
    return Loaded(bot=config, llms=llms, conversation_id=conversation_id, history=history, knowledge=knowledge,
                  run_status=run_status, rules=ReplyRules.of(bot), limits=limits,
                  moderation=moderation if moderation.checks_text or moderation.ask_model else None, bot_id=msg.bot_id,
                  conversation_key=msg.conversation_key, run_id=msg.run_id)


@dataclass
class MessageRead:
    """What a message of a bot reads, in one session: the bot's row (its columns, as attributes),
    the reply rules' word on the message and, for a message the bot may answer, its MCP
    associations (None: they could not be read) and what its run reads at its start."""

    bot: Any
    decision: bool | None = False
    links: list[Any] | None = None
    loaded: Loaded | None = None
    settings: CachedBot | None = None


def read_for_message(msg: IncomingMessage, *, session: Session, cache: BotSettingsCache | None = None
                     ) -> MessageRead | None:
    """The bot's row (None: no such bot) and the reply rules' word on ``msg`` (evaluated here, once
    per message; a disabled bot answers nothing on Discord); for a message it may answer, also its
    MCP associations (queried only when it has any: the bot's row says so in the same query) and
    what the chain reads at its start (:func:`load_for_run`, which may raise). ``cache``: what this
    store keeps of its bots' settings (none: all read now).

    The usage counters come first, with the bot's settings version in the same statement: a
    message of a bot whose settings are kept costs one statement for both."""
    counters = usage_limits.read_counters(session=session, bot_id=msg.bot_id, discord_user_id=limited_user(msg))
    settings = (cache or BotSettingsCache()).current(msg.bot_id, session=session, version=counters.version)
    if settings is None:
        return None
    bot = settings.bot
    data = MessageRead(bot=bot, decision=rules_decision(bot, msg) if bot.enabled or msg.platform != "discord"
                       else False, settings=settings)
    if data.decision is False:
        return data
    try:
        from grobot.core.services.mcp_tool_lists import read_links

        links = settings.part("links", lambda: read_links(msg.bot_id, session=session)) if bot.has_links else []
        data.links = list(links)
    except Exception as exc:  # the catalog reads them again, and reports what fails
        logger.warning("Could not read the MCP servers of bot %s: %s", msg.bot_id, type(exc).__name__,
                       extra={"bot_id": msg.bot_id})
    data.loaded = load_for_run(msg, session=session, settings=settings, counters=counters)
    return data


def prepared_from(msg: IncomingMessage, read: MessageRead | None, *, memory: Any = None,
                  scores: Any = None) -> Prepared:
    """The :class:`Prepared` of a message read in this process: its memories looked up in ``memory``
    (started now, for a message the bot may answer); ``scores``: an awaitable of the Tool Router's."""
    if read is None:
        return Prepared.failed(msg, f"no bot numbered {msg.bot_id}") if msg.platform != "discord" \
            else Prepared(msg, decision=False)
    prepared = Prepared(msg, decision=read.decision, rules=ReplyRules.of(read.bot), loaded=read.loaded, links=read.links)
    if read.decision is not False:
        prepared.memories = start_memory_lookup(msg, memory) if memory is not None else None
        prepared.scores = scores
    return prepared


_INSERT_LOG = insert(LogEntry.__table__)  # type: ignore[attr-defined]  # a Core row: no entity to build and flush


def write_run(session: Session, write: RunWrite) -> tuple[int | None, int | None]:
    """One write of a run in ``session``; returns ``(conversation id, run id)``."""
    conversation_id, run_id = write.conversation_id, write.run_id
    if run_id is None and write.user_message is not None:
        stored = _stored_user_message(session, write.user_message, conversation_id) if write.retry else None
        conversation_id, run_id = stored or _store_user_message(session, write.user_message, conversation_id)
    events, end = write.events, write.end
    if write.retry and events and run_id is not None:
        # A failed write's events come again, with newer ones: store those not stored yet, and
        # the end unless its last event was (it was stored in the same transaction).
        seqs = [seq for seq, _, _ in events]
        stored_seqs: set[int] = set(session.execute(select(AgentEvent.seq).where(
            AgentEvent.run_id == run_id, col(AgentEvent.seq).in_(seqs))).scalars())
        events = [event for event in events if event[0] not in stored_seqs]
        if seqs[-1] in stored_seqs:
            end = None
    now = utcnow()
    rows = [{"run_id": run_id, "seq": seq, "kind": kind, "data": dict(data), "created_at": now}
            for seq, kind, data in events]
    if rows:
        # A Core executemany on the table (every column is given): the ORM's bulk-insert layer adds nothing here.
        session.connection().execute(insert(AgentEvent), rows)
    if end is not None:
        if conversation_id is not None and (end.error is None or end.cancelled) and end.new_messages:
            conversations.append_run_messages(session=session, conversation_id=conversation_id,
                                              messages=end.new_messages, author_name=end.author_name)
        if end.records:
            llm_calls.insert_calls(session=session, bot_id=end.bot_id, run_id=run_id, records=end.records)
        if end.answered is not None and end.error is None:  # the bot's log line, with the answer
            line = answered_line(end.answered, run_id)
            session.connection().execute(_INSERT_LOG, {"bot_id": end.bot_id, "created_at": now, "level": "INFO",
                                                       "logger": ANSWERED_LOGGER, "message": line[:10_000]})
            logger.debug("Bot %s: %s", end.bot_id, line)
        if run_id is not None and end.stored_run:
            asked = session.get(Message, run_id)
            if asked is not None and asked.status in (MessageStatus.PENDING.value, MessageStatus.RUNNING.value):
                asked.status = (MessageStatus.CANCELLED.value if end.cancelled else
                                MessageStatus.ERROR.value if end.error else MessageStatus.DONE.value)
                asked.error = (end.error or "")[:2000]
                session.add(asked)
    return conversation_id, run_id


def _stored_user_message(session: Session, msg: UserMessageIn, conversation_id: int | None) -> tuple[int, int] | None:
    """The user message of a first write that is tried again, if the failed try stored it
    (found by its Discord message id; a message without one cannot be told apart)."""
    if not msg.discord_message_id:
        return None
    conversation = conversations.find_conversation(session=session, bot_id=msg.bot_id, key=msg.conversation_key)
    if conversation is None or (conversation_id is not None and conversation.id != conversation_id):
        return None
    found = session.execute(select(Message.id).where(Message.conversation_id == conversation.id,
                                                     Message.discord_message_id == msg.discord_message_id,
                                                     Message.role == "user").order_by(Message.id.desc())  # type: ignore[union-attr]
                            .limit(1)).scalar()
    return (conversation.id or 0, int(found)) if found is not None else None


def _store_user_message(session: Session, msg: UserMessageIn, conversation_id: int | None) -> tuple[int, int]:
    if conversation_id is None:
        conversation_id = conversations.get_or_create_conversation(
            session=session, bot_id=msg.bot_id, key=msg.conversation_key, title=msg.title,
            guild_id=msg.guild_id, channel_id=msg.channel_id).id
    run_id = conversations.insert_user_message(
        session=session, conversation_id=conversation_id or 0, content=msg.content, author_id=msg.author_id,
        author_name=msg.author_name, discord_message_id=msg.discord_message_id, attachments=msg.attachments)
    if msg.counted_user is not None:
        usage_accounting.count_user_message(session=session, bot_id=msg.bot_id, discord_user_id=msg.counted_user)
    return conversation_id or 0, run_id


def save_calls(session: Session, bot_id: int, run_id: int | None, records: list[CallRecord],
               notes: list[tuple[str, str, float]] | None = None) -> None:
    """LLM calls outside a run's writes, and the Archivist's notes ``(discord user id, note, reliability)``
    (suggestions for an admin when the bot's ``notes_need_approval`` is on)."""
    llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=run_id, records=records)
    if not notes:
        return
    approval = session.exec(select(Bot.notes_need_approval).where(Bot.id == bot_id)).first()
    status = user_notes.SUGGESTED if approval else user_notes.ACTIVE
    for user, text, reliability in notes:
        user_notes.add_note(session=session, bot_id=bot_id, discord_user_id=user, note=text[:1000],
                            reliability=reliability, source="archivist", status=status)


def unavailable_reason(exc: DBAPIError) -> str:
    """The driver's own words for a locked or unreachable database ("database is locked"), in one line."""
    return " ".join(str(exc.orig or exc).split())[:200]


def note_dict(note: Any) -> dict[str, Any]:
    return {"id": note.id, "note": note.note, "reliability": round(float(note.reliability), 3)}


class DatabaseStore:
    """:class:`grobot.core.agents.run_store.RunStore` on the database of this process.

    ``executor``: the threads its database work runs in (default: the event loop's default
    executor). The supervisor gives the store it serves its bots with threads of its own, so
    that no burst of bot traffic delays its own work there (renewing its leases).
    """

    def __init__(self, executor: Executor | None = None) -> None:
        self.executor = executor
        self.settings_cache = BotSettingsCache()  # what its messages read of their bots' settings, per version

    async def _thread(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn)

    async def _read(self, fn: Callable[[Session], T], *, in_thread: bool = False) -> T:
        """``fn`` in a read-only session: on SQLite on the event loop (WAL: a read never waits
        for writers) unless ``in_thread``; a network database always in a thread."""
        def work() -> T:
            with session_scope(readonly=True) as session:
                return fn(session)

        if get_settings().is_sqlite and not in_thread:
            return work()
        return await self._thread(work)

    async def _write(self, fn: Callable[[Session], T]) -> T:
        def work() -> T:
            with session_scope() as session:
                return fn(session)

        try:
            return await self._thread(work)
        except DBAPIError as exc:
            if isinstance(exc, OperationalError) or exc.connection_invalidated:
                raise StoreUnavailable(f"the database is busy or unreachable ({unavailable_reason(exc)})") from exc
            raise

    async def prepare(self, msg: IncomingMessage, *, memory: Any = None) -> Prepared:
        """Read ``msg`` in one session (:func:`read_for_message`); its memories from ``memory``; the
        Tool Router computes its scores itself (in this process, when it needs them)."""
        try:
            read = await self._read(lambda session: read_for_message(msg, session=session, cache=self.settings_cache))
        except Exception as exc:
            if not isinstance(exc, (GroBotError, ConnectionError)):
                logger.exception("Reading the run of bot %s failed", msg.bot_id, extra={"bot_id": msg.bot_id})
            return Prepared.failed(msg, error_line(exc))
        return prepared_from(msg, read, memory=memory)

    async def load(self, msg: IncomingMessage) -> Loaded:
        return await self._read(lambda session: load_for_run(msg, session=session))

    async def tool_settings(self) -> tuple[float, float]:
        def read(session: Session) -> tuple[float, float]:
            values = app_settings.get_values(("acknowledge_after_seconds", "tool_timeout_seconds"), session=session)
            return float(values["acknowledge_after_seconds"]), float(values["tool_timeout_seconds"])

        return await self._read(read, in_thread=True)

    async def write_run(self, write: RunWrite) -> tuple[int | None, int | None]:
        return await self._write(lambda session: write_run(session, write))

    async def save_calls(self, bot_id: int, run_id: int | None, records: list[CallRecord],
                         notes: list[tuple[str, str, float]] | None = None) -> None:
        await self._write(lambda session: save_calls(session, bot_id, run_id, records, notes))

    async def save_images(self, run_id: int, images: list[ToolImage]) -> list[int]:
        from grobot.core.services import run_images

        return await self._write(lambda session: run_images.save(session=session, run_id=run_id,
                                                                 origin=run_images.TOOL, images=images))

    async def sent_images(self, run_id: int) -> list[ToolImage]:
        from grobot.core.services import tester_chat

        return await self._read(lambda session: tester_chat.sent_images(run_id, session=session), in_thread=True)

    async def mcp_links(self, bot_id: int) -> list[Any]:
        from grobot.core.services.mcp_tool_lists import read_links

        return await self._read(lambda session: read_links(bot_id, session=session))

    async def list_files(self, bot_id: int) -> list[dict[str, Any]]:
        rows = await self._read(lambda session: files_service.list_files(session=session, bot_id=bot_id), in_thread=True)
        return [{"path": r.path, "size": r.size, "content_type": r.content_type} for r in rows]

    async def read_file(self, bot_id: int, path: str, max_chars: int) -> tuple[str, bool]:
        return await self._read(lambda session: files_service.read_text(
            session=session, bot_id=bot_id, path=path, max_chars=max_chars), in_thread=True)  # reads the disk too

    async def list_notes(self, bot_id: int, user: str) -> list[dict[str, Any]]:
        return await self._read(lambda session: [note_dict(n) for n in user_notes.list_notes(
            session=session, bot_id=bot_id, discord_user_id=user)], in_thread=True)

    async def add_note(self, bot_id: int, user: str, note: str, reliability: float, source: str) -> dict[str, Any]:
        return await self._write(lambda session: note_dict(user_notes.add_note(
            session=session, bot_id=bot_id, discord_user_id=user, note=note, reliability=reliability, source=source)))

    async def update_note(self, bot_id: int, user: str, note_id: int, note: str | None,
                          reliability: float | None) -> dict[str, Any]:
        def work(session: Session) -> dict[str, Any]:
            found = user_notes.get_note(session=session, note_id=note_id)
            if found.bot_id != bot_id or found.discord_user_id != user or found.status != user_notes.ACTIVE:
                raise NotFoundError(f"note {note_id} is not a note about this user")
            return note_dict(user_notes.update_note(session=session, note_id=note_id, note=note,
                                                    reliability=reliability))

        return await self._write(work)
