"""The agent chain: one message in, events out, the answer stored.

Gatekeeper -> Context -> (Tool Identifier -> Parameter Extractor / Clarifier -> Executor)*
-> Synthesizer -> Archivist (background). ``native`` bots run one tool-calling loop on the
output model instead. Everything about the bot is read from the database per message;
nothing is kept between messages except the shared HTTP clients.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from grobot.core.agents import archivist, context, gatekeeper, prompts
from grobot.core.agents.clarifier import clarify
from grobot.core.agents.events import RunRecorder
from grobot.core.agents.executor import PlannedCall, execute
from grobot.core.agents.native import run_native
from grobot.core.agents.parameter_extractor import Extraction, check, extract
from grobot.core.agents.run import BotConfig, Run
from grobot.core.agents.synthesizer import synthesize
from grobot.core.agents.tool_identifier import identify
from grobot.core.agents.types import ChainResult, EventKind, EventSink, IncomingMessage
from grobot.core.db import session_scope
from grobot.core.errors import GroBotError, NotFoundError
from grobot.core.llm.base import new_call_id
from grobot.core.memory import MemoryPort, NoopMemory
from grobot.core.memory.runtime import memory_failed, memory_worked, process_memory
from grobot.core.models import AgentMode, Bot, Message, MessageStatus
from grobot.core.services import (app_settings, conversations, discord_users, llm_calls, usage_accounting,
                                  usage_limits, user_notes)
from grobot.core.services.llm_settings import EffectiveLLM, effective_llms
from grobot.core.settings import get_settings
from grobot.core.tools.base import ToolCatalog, ToolContext, ToolSpec

logger = logging.getLogger(__name__)

MEMORIES_PER_MESSAGE = 5


@dataclass
class Loaded:
    """What one run reads from the database when it starts (see :func:`load_for_run`)."""

    bot: BotConfig
    llms: dict[str, EffectiveLLM]
    conversation_id: int | None
    history: list[dict[str, Any]]
    knowledge: context.UserKnowledge = field(default_factory=context.UserKnowledge)
    run_status: str | None = None
    rules: Any = None
    limits: usage_limits.LimitState | None = None  # today's usage and the limits, read with the rest
    # The message it was read for (a preloaded read is used for that message only).
    bot_id: int | None = None
    conversation_key: str | None = None
    run_id: int | None = None

    def is_for(self, msg: IncomingMessage) -> bool:
        return (self.bot_id, self.conversation_key, self.run_id) == (msg.bot_id, msg.conversation_key, msg.run_id)


def _load_bot(msg: IncomingMessage, session: Session | None = None) -> tuple[BotConfig, dict[str, EffectiveLLM], Any]:
    """The bot's settings and LLM settings, read now (in ``session`` when given)."""
    if session is None:
        with session_scope(readonly=True) as own:
            return _load_bot(msg, own)
    bot = session.get(Bot, msg.bot_id)
    if bot is None:
        raise NotFoundError(f"no bot numbered {msg.bot_id}")
    config = BotConfig(id=bot.id or 0, name=bot.name, personality=bot.personality or "", agent_mode=bot.agent_mode,
                       max_tool_rounds=max(0, int(bot.max_tool_rounds)), reply_when_relevant=bot.reply_when_relevant)
    llms = effective_llms(session=session, bot_id=bot.id)
    return config, llms, _RulesView(bot)


def load_tool_settings() -> tuple[float, float]:
    """``(acknowledge_after_seconds, tool_timeout_seconds)``, read now (only runs that call tools need them)."""
    with session_scope(readonly=True) as session:
        values = app_settings.get_values(("acknowledge_after_seconds", "tool_timeout_seconds"), session=session)
    return float(values["acknowledge_after_seconds"]), float(values["tool_timeout_seconds"])


def _load_talk(
    msg: IncomingMessage, session: Session | None = None
) -> tuple[int | None, list[dict[str, Any]], context.UserKnowledge, str | None]:
    """The conversation so far and what the bot knows about the author, read now (in ``session`` when given)."""
    if session is None:
        with session_scope(readonly=True) as own:
            return _load_talk(msg, own)
    run_status = None
    if msg.run_id is not None:
        stored = session.get(Message, msg.run_id)
        if stored is None:
            raise NotFoundError(f"no stored message numbered {msg.run_id}")
        conversation_id: int | None = stored.conversation_id
        run_status = stored.status
        history = conversations.load_history(session=session, conversation_id=conversation_id, before_id=msg.run_id)
    else:
        conversation_id, history = conversations.load_history_by_key(session=session, bot_id=msg.bot_id,
                                                                     key=msg.conversation_key)
    knowledge = context.UserKnowledge()
    if msg.author_id:
        who = {"session": session, "bot_id": msg.bot_id, "discord_user_id": str(msg.author_id)}
        knowledge.directives = discord_users.get_directives(**who)
        knowledge.notes = user_notes.note_pairs(**who)
    return conversation_id, history, knowledge, run_status


def load_for_run(msg: IncomingMessage, *, session: Session) -> Loaded:
    """Everything a run of ``msg`` needs from the database, read in the caller's session.

    A caller that has just read the bot for this message (the bot process, for its reply
    rules) reads this in the same session and passes it to :func:`run_chain` as
    ``preloaded``: one session per message. Only use it for the message it was read for.
    """
    config, llms, rules = _load_bot(msg, session)
    conversation_id, history, knowledge, run_status = _load_talk(msg, session)
    limits = usage_limits.read_state(session=session, bot=session.get(Bot, msg.bot_id),  # type: ignore[arg-type]
                                     discord_user_id=_limited_user(msg))
    return Loaded(bot=config, llms=llms, conversation_id=conversation_id, history=history, knowledge=knowledge,
                  run_status=run_status, rules=rules, limits=limits, bot_id=msg.bot_id,
                  conversation_key=msg.conversation_key, run_id=msg.run_id)


def _limited_user(msg: IncomingMessage) -> str | None:
    """The Discord user whose daily messages count (Test Chat and CLI messages are not counted)."""
    return str(msg.author_id) if msg.platform == "discord" and msg.author_id else None


def _read_all(msg: IncomingMessage) -> Loaded:
    with session_scope(readonly=True) as session:
        return load_for_run(msg, session=session)


async def _load(msg: IncomingMessage) -> Loaded:
    """Everything the run needs from the database: one short read-only session.

    On SQLite (WAL: a read never waits for writers) it runs on the event loop, which saves
    the thread hop; a network database is read in a worker thread. (Reading the parts at
    once in two threads measured no faster: the time is Python, not I/O.)
    """
    if get_settings().is_sqlite:
        return _read_all(msg)
    return await asyncio.to_thread(_read_all, msg)


def _store_user_message(session: Session, msg: IncomingMessage, conversation_id: int | None) -> tuple[int, int]:
    """Store the user message (in the run's first write); ``(conversation id, message id)``."""
    if conversation_id is None:
        conversation_id = conversations.get_or_create_conversation(
            session=session, bot_id=msg.bot_id, key=msg.conversation_key,
            title=(f"#{msg.channel_name}" if msg.channel_name else msg.author_name) or msg.conversation_key,
            guild_id=msg.guild_id, channel_id=msg.channel_id).id
    attachments = [{"filename": a.filename, "content_type": a.content_type, "size": a.size, "url": a.url}
                   for a in msg.attachments] or None
    run_id = conversations.insert_user_message(
        session=session, conversation_id=conversation_id or 0, content=context.user_text(msg), author_id=msg.author_id,
        author_name=msg.author_name, discord_message_id=msg.discord_message_id, attachments=attachments)
    user = _limited_user(msg)
    if user is not None:
        usage_accounting.count_user_message(session=session, bot_id=msg.bot_id, discord_user_id=user)
    return conversation_id or 0, run_id


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, GroBotError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    line = " ".join(text.split())
    return line[:500] or "the run failed"


async def run_chain(
    msg: IncomingMessage,
    *,
    sink: EventSink | None = None,
    tools: ToolCatalog | None = None,
    memory: MemoryPort | None = None,
    skip_gatekeeper: bool = False,
    preloaded: Loaded | None = None,
    memories: Awaitable[list[str]] | None = None,
) -> ChainResult:
    """Answer one message: emit its events to ``sink``, store them and the answer, return the result.

    ``preloaded``: what :func:`load_for_run` read for this very message (else it is read now).
    ``memories``: the retrieval of this message's memories, started early by the caller
    (:func:`start_memory_lookup`), else it is done now.
    """
    recorder = RunRecorder(sink)
    started = time.perf_counter()
    run: Run | None = None
    try:
        loaded = preloaded if preloaded is not None and preloaded.is_for(msg) else await _load(msg)
        with_names = not msg.is_dm and msg.platform == "discord"
        output_llm = loaded.llms["output"]
        run = Run(msg=msg, bot=loaded.bot, llms=loaded.llms, recorder=recorder, settings_loader=load_tool_settings,
                  history=context.history_for_model(loaded.history, with_names=with_names),
                  user_msg=context.user_message(msg, with_name=with_names, images=False))
        if output_llm.supports_images and any(a.image_base64 for a in msg.attachments):
            run.output_user_msg = context.user_message(msg, with_name=with_names, images=True)
        run.started = started

        # -- Gatekeeper (rules), then the usage limits: no LLM call over a limit
        decision = None if skip_gatekeeper else gatekeeper.rules_decision(loaded.rules, msg)
        if decision is False:
            recorder.discard()
            return ChainResult(replied=False, timings={"total_ms": round((time.perf_counter() - started) * 1000, 2)})
        hit = usage_limits.check(loaded.limits) if loaded.limits is not None else None
        if hit is not None:
            usage_limits.warn_once(loaded.limits, hit, _limited_user(msg))  # type: ignore[arg-type]
            if msg.run_id is not None:  # a stored message (Test Chat): its error event is stored too
                recorder.attach(msg.run_id, conversation_id=loaded.conversation_id)
            return await _fail(recorder, run, hit.text, started)
        if decision is None and not skip_gatekeeper:
            reply, reason = await gatekeeper.llm_decision(run, run.history)
            await run.think("gatekeeper", f"{'answer' if reply else 'stay silent'}: {reason}".strip(), decision=reply)
            if not reply:
                recorder.discard()
                await _save_orphan_calls(run)
                return ChainResult(replied=False, llm_calls=len(run.records),
                                   timings={"total_ms": round((time.perf_counter() - started) * 1000, 2)})

        # -- the run id: the stored user message (stored with the run's first write, to save a transaction)
        if msg.run_id is None:
            recorder.attach(prepare=lambda session: _store_user_message(session, msg, loaded.conversation_id))
        else:
            recorder.attach(msg.run_id, conversation_id=loaded.conversation_id)

        # -- Context (tools and memories at once)
        catalog = tools
        memory = memory or process_memory()
        if catalog is None:
            catalog = await _catalog(run)
        lookup = memories if memories is not None else _memories(memory, msg)
        specs, found = await asyncio.gather(_list_tools(run, catalog), lookup)
        run.system_prompt = context.build_system_prompt(bot_name=loaded.bot.name, personality=loaded.bot.personality, msg=msg,
                                                       user=loaded.knowledge, memories=found,
                                                       unavailable=run.unavailable_tools)
        run.tool_context = ToolContext(bot_id=msg.bot_id, user_id=msg.author_id, user_name=msg.author_name,
                                       channel_id=msg.channel_id, guild_id=msg.guild_id, message_id=msg.discord_message_id,
                                       platform="discord" if msg.platform == "discord" else "test_chat",
                                       discord=getattr(catalog, "discord", None))

        if loaded.bot.agent_mode == AgentMode.NATIVE.value:
            await run.think("mode", f"native mode: the output model calls tools itself ({len(specs)} available)")
            answer = await run_native(run, specs if loaded.bot.max_tool_rounds > 0 else [], catalog)
        else:
            answer = await _chain_mode(run, specs, catalog)

        # -- done: store the answer, the events and the accounting in one transaction
        final_text = recorder.text or answer
        run.new_messages.append({"role": "assistant", "content": answer})
        total = time.perf_counter() - started
        timings = _timings(run, total)
        usage = run.usage()
        done_data = {"text": final_text, "usage": {**usage.as_dict(), "llm_calls": len(run.records)}, "timings": timings}
        if run.notices:
            done_data["fallbacks"] = run.notices
        event = await recorder.finish(EventKind.DONE, done_data, also=_final_writer(run, recorder, None))
        run_id = recorder.run_id
        if event.kind is EventKind.ERROR:
            return ChainResult(replied=True, run_id=run_id, error=event.data.get("message"), llm_calls=len(run.records), timings=timings)
        archivist.schedule(bot_id=msg.bot_id, bot_name=loaded.bot.name, run_id=run_id, author_id=str(msg.author_id or ""),
                           author_name=msg.author_name, conversation_key=msg.conversation_key, user_text=msg.content,
                           answer=final_text, decision_llm=loaded.llms["decision"],
                           known_notes=[n for n, _ in loaded.knowledge.notes], memory=memory,
                           channel_id=msg.channel_id, guild_id=msg.guild_id,
                           source_message_id=msg.discord_message_id)
        return ChainResult(replied=True, text=final_text, run_id=run_id, llm_calls=len(run.records), timings=timings)
    except asyncio.CancelledError:
        await asyncio.shield(_fail(recorder, run, "the run was cancelled", started))
        raise
    except Exception as exc:
        if not isinstance(exc, GroBotError):
            logger.exception("The chain failed for bot %s", msg.bot_id)
        else:
            logger.warning("The chain failed for bot %s: %s", msg.bot_id, _one_line(exc))
        return await _fail(recorder, run, _one_line(exc), started)


async def wait_for_background(timeout: float = 30.0) -> None:
    """Wait until the background work of finished runs (the Archivist) is done."""
    await archivist.drain(timeout)


# --------------------------------------------------------------------------- chain mode


async def _chain_mode(run: Run, specs: list[ToolSpec], catalog: ToolCatalog) -> str:
    if not specs or run.bot.max_tool_rounds <= 0:
        why = "the bot has no tools" if not specs else "tool rounds are set to 0"
        await run.think("tool_identifier", f"skipped: {why}; answering directly")
        return await synthesize(run, [])
    by_name = {s.name: s for s in specs}
    exchange: list[dict[str, Any]] = []
    done: list[tuple[str, dict[str, Any], str]] = []
    seen: set[str] = set()
    rounds = 0
    note = ""
    any_failed = False
    while True:
        if rounds >= run.bot.max_tool_rounds:
            note = prompts.ROUND_LIMIT
            await run.think("planner", f"the limit of {run.bot.max_tool_rounds} tool round(s) was reached; answering with what there is")
            break
        selection = await identify(run, specs, done, rounds + 1)
        if selection.repaired:
            await run.think("tool_identifier", "repaired broken JSON from the tools model")
        fresh = []
        for choice in selection.choices:
            key = choice.name + "\0" + _args_key(choice.arguments)
            if choice.arguments is not None and key in seen:
                continue
            fresh.append(choice)
        if not fresh:
            reason = f" ({selection.reason})" if selection.reason else ""
            await run.think("tool_identifier", ("no more tools needed" if done else "no tool needed") + reason)
            break
        await run.think("tool_identifier", f"chose {', '.join(c.name for c in fresh)}" + (f": {selection.reason}" if selection.reason else ""),
                        tools=[c.name for c in fresh])
        # Parameter Extractor for the choices whose arguments are missing or invalid (in parallel).
        needs = [c for c in fresh if c.arguments is None or check(c.arguments, by_name[c.name])]
        extractions: dict[int, Extraction] = {}
        if needs:
            results = await asyncio.gather(*(extract(run, by_name[c.name], c.arguments) for c in needs))
            extractions = {id(c): r for c, r in zip(needs, results)}
        calls: list[PlannedCall] = []
        for choice in fresh:
            extraction = extractions.get(id(choice))
            if extraction is None:
                calls.append(PlannedCall(id=new_call_id(), name=choice.name, arguments=choice.arguments or {}))
            elif extraction.arguments is not None:
                calls.append(PlannedCall(id=new_call_id(), name=choice.name, arguments=extraction.arguments))
            elif extraction.missing:
                # Clarifier: ask the user, and the run ends with the question.
                question = await clarify(run, by_name[choice.name], extraction.missing, extraction.question)
                run.new_messages.extend(exchange)
                return question
            else:
                calls.append(PlannedCall(id=new_call_id(), name=choice.name, arguments=choice.arguments or {},
                                         error=f"no valid arguments could be worked out ({extraction.error})"))
        repeated = [c for c in calls if not c.error and c.name + "\0" + _args_key(c.arguments) in seen]
        if repeated:
            await run.think("planner", f"skipped {len(repeated)} call(s) that already have a result")
            calls = [c for c in calls if c not in repeated]
            if not calls:
                break
        rounds += 1
        executed = await execute(run, calls, by_name, catalog)
        exchange.append(_assistant_calls(calls))
        for item in executed:
            exchange.append(item.tool_message())
            done.append((item.call.name, item.call.arguments, item.content))
            seen.add(item.call.name + "\0" + _args_key(item.call.arguments))
            any_failed = any_failed or item.is_error
    if any_failed:
        note = (note + "\n" + prompts.TOOLS_FAILED_NOTE).strip()
    answer = await synthesize(run, exchange, note=note)
    run.new_messages.extend(exchange)
    return answer


def _args_key(arguments: dict[str, Any] | None) -> str:
    return json.dumps(arguments, sort_keys=True, default=str) if arguments is not None else ""


def _assistant_calls(calls: list[PlannedCall]) -> dict[str, Any]:
    return {"role": "assistant", "content": "",
            "tool_calls": [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                           for c in calls]}


# --------------------------------------------------------------------------- helpers


class _RulesView:
    """The reply-rule fields of a bot, re-read from the database for this message."""

    def __init__(self, bot: Bot) -> None:
        for name in ("reply_in_dms", "allowed_channel_ids", "reply_to_mentions", "reply_to_replies", "always_on_channel_ids",
                     "keywords", "reply_when_relevant"):
            setattr(self, name, getattr(bot, name))


async def _catalog(run: Run) -> ToolCatalog:
    from grobot.core.tools.base import EmptyCatalog

    try:
        from grobot.core.tools.catalog import catalog_for_bot

        return await catalog_for_bot(run.msg.bot_id)
    except Exception as exc:
        logger.warning("The tool catalog of bot %s failed: %s", run.msg.bot_id, _one_line(exc))
        await run.think("tools", f"the tools could not be loaded ({_one_line(exc)}); answering without them")
        return EmptyCatalog()


async def _list_tools(run: Run, catalog: ToolCatalog) -> list[ToolSpec]:
    try:
        specs = list(await catalog.list_tools())
    except Exception as exc:
        logger.warning("Listing the tools of bot %s failed: %s", run.msg.bot_id, exc)
        await run.think("tools", f"the tools could not be listed ({_one_line(exc)}); answering without them")
        return []
    try:
        missing = catalog.unavailable() or {}
    except Exception:
        missing = {}
    if missing:
        run.unavailable_tools = {str(k): str(v)[:200] for k, v in missing.items()}
        await run.think("tools", "unavailable: " + "; ".join(f"{k}: {v}" for k, v in missing.items()), unavailable=missing)
    return specs


def start_memory_lookup(msg: IncomingMessage, memory: MemoryPort | None = None) -> asyncio.Task[list[str]] | None:
    """Start retrieving the memories of ``msg`` now (None: this process has no memory).

    A bot starts it as soon as a message addressed to it arrives, so that the retrieval
    (an embedding and a query in the supervisor's memory service) runs while the bot reads
    its configuration; pass the task to :func:`run_chain` (or cancel it when not answering).
    Like the lookup in the chain, it never raises and stays within the memory time limit.
    """
    memory = memory or process_memory()
    if isinstance(memory, NoopMemory) or not msg.content.strip():
        return None
    return asyncio.get_running_loop().create_task(_memories(memory, msg))


async def _memories(memory: MemoryPort, msg: IncomingMessage) -> list[str]:
    if isinstance(memory, NoopMemory) or not msg.content.strip():
        return []
    try:
        found = list(await asyncio.wait_for(memory.search(msg.bot_id, msg.content, k=MEMORIES_PER_MESSAGE),
                                            get_settings().memory_budget_seconds))
    except Exception as exc:
        memory_failed("retrieving memories", exc)
        return []
    memory_worked()
    return found


def _timings(run: Run, total: float) -> dict[str, float]:
    llm = run.llm_seconds()
    result = {
        "total_ms": round(total * 1000, 2),
        "llm_ms": round(llm * 1000, 2),
        "tools_ms": round(run.tools_seconds * 1000, 2),
        "platform_ms": round(max(0.0, total - llm - run.tools_seconds) * 1000, 2),
    }
    if run.recorder.first_token_at is not None:
        result["first_token_ms"] = round((run.recorder.first_token_at - run.started) * 1000, 2)
    return result


def _final_writer(run: Run | None, recorder: RunRecorder, error: str | None):  # type: ignore[no-untyped-def]
    """What the last transaction of a run writes besides the events (ids known only inside it)."""

    def write(session: Session) -> None:
        run_id, conversation_id = recorder.run_id, recorder.conversation_id
        if run is not None and conversation_id is not None and error is None and run.new_messages:
            conversations.append_run_messages(session=session, conversation_id=conversation_id,
                                              messages=run.new_messages, author_name=run.bot.name)
        if run is not None and run.records:
            llm_calls.insert_calls(session=session, bot_id=run.msg.bot_id, run_id=run_id, records=run.records)
        if run_id is not None and run is not None and run.msg.run_id is not None:
            stored = session.get(Message, run_id)
            if stored is not None and stored.status in (MessageStatus.PENDING.value, MessageStatus.RUNNING.value):
                stored.status = MessageStatus.ERROR.value if error else MessageStatus.DONE.value
                stored.error = (error or "")[:2000]
                session.add(stored)

    return write


async def _save_orphan_calls(run: Run) -> None:
    """Accounting of a run that ended before it had a stored message (the Gatekeeper said no)."""
    if not run.records:
        return

    def write() -> None:
        with session_scope() as session:
            llm_calls.insert_calls(session=session, bot_id=run.msg.bot_id, run_id=None, records=run.records)

    await asyncio.to_thread(write)


async def _fail(recorder: RunRecorder, run: Run | None, message: str, started: float) -> ChainResult:
    total = time.perf_counter() - started
    timings = _timings(run, total) if run is not None else {"total_ms": round(total * 1000, 2)}
    writer = None
    if recorder.storing:
        writer = _final_writer(run, recorder, message)
    elif run is not None and run.records:
        await _save_orphan_calls(run)
    try:
        await recorder.finish(EventKind.ERROR, {"message": message}, also=writer)
    except Exception:
        logger.exception("Could not end the run with an error")
    return ChainResult(replied=True, run_id=recorder.run_id, error=message, llm_calls=len(run.records) if run else 0,
                       timings=timings)
