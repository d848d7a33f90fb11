"""The agent chain: one message in, events out, the answer stored.

Gatekeeper -> Context -> (Tool Identifier -> Parameter Extractor / Clarifier -> Executor)*
-> Synthesizer -> Archivist (background). ``native`` bots run one tool-calling loop on the
output model instead. Everything about the bot is read per message from the host's
:class:`~grobot.core.agents.run_store.RunStore` (the database, or a bot's supervisor), passed in
with its memory and MCP sessions (:class:`~grobot.core.agents.deps.ChainDeps`); nothing is
kept between messages except the shared HTTP clients. The checks before a run (reply rules,
limits, flood control) are :mod:`grobot.core.answering`'s.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable
from typing import Any

from grobot.core.agents import archivist, context, gatekeeper, moderator, prompts, recovery, tool_router, write_requests
from grobot.core.agents.clarifier import clarify
from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.events import AnswerWithheld, RunRecorder
from grobot.core.agents.executor import PlannedCall, execute
from grobot.core.agents.native import run_native
from grobot.core.agents.parameter_extractor import Extraction, check, extract, needs_arguments
from grobot.core.agents.run import Run
from grobot.core.agents.run_store import Prepared, RunEnd, UserMessageIn
from grobot.core.agents.synthesizer import grounded_results, settle, synthesize
from grobot.core.agents.tool_identifier import Choice, choose_one, results_said, results_text
from grobot.core.agents.types import NATIVE_MODE, ChainResult, EventKind, EventSink, IncomingMessage, limited_user
from grobot.core.documents import message as doc_message
from grobot.core.documents.message import Found
from grobot.core.errors import GroBotError, error_line
from grobot.core.llm.base import new_call_id
from grobot.core.llm.public_errors import public_error
from grobot.core.memory import MemoryPort
from grobot.core.memory.lookup import message_memories
from grobot.core.moderation import REFUSAL, AnswerGuard, Moderation, log_event, moderation_note
from grobot.core.settings import get_settings
from grobot.core.tools.base import ToolCatalog, ToolContext, ToolSpec

logger = logging.getLogger(__name__)



def _user_message(msg: IncomingMessage) -> UserMessageIn:
    """The user message a Discord run stores with its first write."""
    attachments = [{"filename": a.filename, "content_type": a.content_type, "size": a.size, "url": a.url}
                   for a in msg.attachments] or None
    return UserMessageIn(
        bot_id=msg.bot_id, conversation_key=msg.conversation_key,
        title=(f"#{msg.channel_name}" if msg.channel_name else msg.author_name) or msg.conversation_key,
        content=context.user_text(msg), author_id=msg.author_id, author_name=msg.author_name,
        guild_id=msg.guild_id, channel_id=msg.channel_id, discord_message_id=msg.discord_message_id,
        attachments=attachments, counted_user=limited_user(msg))


async def run_chain(
    message: Prepared | IncomingMessage,
    deps: ChainDeps,
    *,
    sink: EventSink | None = None,
    tools: ToolCatalog | None = None,
) -> ChainResult:
    """Answer one message the checks admitted (:mod:`grobot.core.answering`): emit its events to
    ``sink``, store them and the answer, return the result.

    ``message``: as :func:`grobot.core.answering.prepare` read it (its reply rules' word, its run's
    start, memories and the Tool Router's scores), or a bare message, answered as one addressed to
    the bot and read now. ``deps``: the host's store, memory and MCP sessions
    (:func:`grobot.core.store.local.run_chain` answers on this process's database).
    """
    prepared = message if isinstance(message, Prepared) else Prepared(message, decision=True)
    msg, decision = prepared.msg, prepared.decision
    store = deps.store
    recorder = RunRecorder(sink, store)
    started = time.perf_counter()
    run: Run | None = None
    try:
        loaded = prepared.loaded if prepared.loaded is not None else await store.load(msg)
        with_names = not msg.is_dm and msg.platform == "discord"
        output_llm = loaded.llms["output"]
        run = Run(msg=msg, bot=loaded.bot, llms=loaded.llms, recorder=recorder, settings_loader=store.tool_settings,
                  history=context.history_for_model(loaded.history, with_names=with_names),
                  user_msg=context.user_message(msg, with_name=with_names, images=False))
        if output_llm.supports_images and any(a.image_base64 for a in msg.attachments):
            run.output_user_msg = context.user_message(msg, with_name=with_names, images=True)
        run.started = started
        run.known_scores = prepared.found_scores

        # -- Gatekeeper: the decision model, when the reply rules left it open
        if decision is None:
            reply, reason = await gatekeeper.llm_decision(run, run.history)
            await run.think("gatekeeper", f"{'answer' if reply else 'stay silent'}: {reason}".strip(), decision=reply)
            if not reply:
                recorder.discard()
                await _save_orphan_calls(run)
                return ChainResult(replied=False, llm_calls=len(run.records),
                                   timings={"total_ms": round((time.perf_counter() - started) * 1000, 2)})

        # -- Moderator: the decision model, when the admin asked for it
        moderation = loaded.moderation
        judged = await _judge(run, moderation) if moderation is not None and moderation.ask_model else "log"
        if judged == "ignore" and msg.run_id is None:
            recorder.discard()
            await _save_orphan_calls(run)
            return ChainResult(replied=False, llm_calls=len(run.records),
                               timings={"total_ms": round((time.perf_counter() - started) * 1000, 2)})

        # -- the run id: the stored user message (stored with the run's first write, to save a transaction)
        if msg.run_id is None:
            recorder.attach(user_message=_user_message(msg), conversation_id=loaded.conversation_id)
        else:
            recorder.attach(msg.run_id, conversation_id=loaded.conversation_id)
        if judged == "ignore":  # a stored run (Test Chat) ends with why
            return await _fail(recorder, run, moderation_note(moderator.RULE), started)
        if judged == "refuse":
            answer = REFUSAL
            await recorder.token(answer)
        else:
            if moderation is not None and moderation.checks_text and moderation.action != "log":
                recorder.guard = AnswerGuard(moderation)  # answers are checked before they go out
            try:
                answer = await _answer(run, loaded, prepared, deps, tools)
            except AnswerWithheld:  # it broke a rule as it streamed: replaced below
                answer = ""

        # -- done: store the answer, the events and the accounting in one transaction
        final_text = answer  # what settle() decided: the Discord reply, Test Chat and the history all read it
        moderated = await _moderate_answer(run, moderation, final_text) \
            if moderation is not None and judged != "refuse" else None
        if moderated is not None:
            answer = final_text = recorder.text = "" if moderated == "withheld" else REFUSAL
        if answer:
            run.new_messages.append({"role": "assistant", "content": answer})
        total = time.perf_counter() - started
        timings = _timings(run, total)
        usage = run.usage()
        done_data = {"text": final_text, "usage": {**usage.as_dict(), "llm_calls": len(run.records),
                                                   "capped_calls": sum(r.capped for r in run.records)},
                     "timings": timings}
        if run.notices:
            done_data["fallbacks"] = run.notices
        if moderated is not None:
            done_data["moderated"] = moderated  # a host replaces what it showed of the answer
        end = _run_end(run, None)
        if end is not None:
            end.answered = _answered(msg, total, len(run.records), usage)
        event = await recorder.finish(EventKind.DONE, done_data, end=end)
        run_id = recorder.run_id
        if event.kind is EventKind.ERROR:
            return ChainResult(replied=True, run_id=run_id, error=event.data.get("message"), llm_calls=len(run.records), timings=timings)
        archivist.schedule(store=store, bot_id=msg.bot_id, bot_name=loaded.bot.name, run_id=run_id, author_id=str(msg.author_id or ""),
                           author_name=msg.author_name, conversation_key=msg.conversation_key, user_text=msg.content,
                           decision_llm=loaded.llms["decision"],
                           known_notes=[n for n, _ in loaded.knowledge.notes], memory=deps.memory,
                           channel_id=msg.channel_id, guild_id=msg.guild_id,
                           source_message_id=msg.discord_message_id)
        return ChainResult(replied=True, text=final_text, run_id=run_id, llm_calls=len(run.records), timings=timings,
                           images=list(run.images))
    except asyncio.CancelledError as exc:
        # Stopped (a user's Stop, /stop, a 🛑 reaction) or shut down: one terminal event says so.
        await asyncio.shield(_fail(recorder, run, cancel_reason(exc), started, cancelled=True))
        raise
    except Exception as exc:
        if not isinstance(exc, GroBotError):
            logger.exception("The chain failed for bot %s", msg.bot_id, extra={"bot_id": msg.bot_id})
        else:
            logger.warning("The chain failed for bot %s: %s", msg.bot_id, error_line(exc), extra={"bot_id": msg.bot_id})
        return await _fail(recorder, run, error_line(exc), started, public=public_error(exc))


async def _answer(run: Run, loaded: Any, prepared: Prepared, deps: ChainDeps, tools: ToolCatalog | None) -> str:
    """Context (tools, memories and the document passages at once), then the answer in the bot's agent mode."""
    msg = run.msg
    catalog = tools
    memory = deps.memory
    if catalog is None:
        catalog = await _catalog(run, deps, prepared.links)
    lookup = prepared.found_memories() if prepared.memories is not None else message_memories(memory, msg)
    passages = prepared.documents if prepared.documents is not None else doc_message.lookup(memory, msg, loaded.bot)
    specs, found, in_documents = await asyncio.gather(_list_tools(run, catalog), lookup, _in_documents(passages))
    specs = doc_message.offered(specs, in_documents)
    run.system_prompt = context.build_system_prompt(bot_name=loaded.bot.name, personality=loaded.bot.personality, msg=msg,
                                                   user=loaded.knowledge, memories=found,
                                                   unavailable=run.unavailable_tools) + doc_message.prompt_part(in_documents)
    if doc_message.described(in_documents):
        await run.think("documents", doc_message.described(in_documents),
                        sources=[p.source() for p in in_documents.passages])
    run.tool_context = ToolContext(bot_id=msg.bot_id, user_id=msg.author_id, user_name=msg.author_name,
                                   channel_id=msg.channel_id, guild_id=msg.guild_id, message_id=msg.discord_message_id,
                                   platform="discord" if msg.platform == "discord" else "test_chat",
                                   discord=getattr(catalog, "discord", None), said=msg.content)
    if loaded.bot.agent_mode == NATIVE_MODE:
        await run.think("mode", f"native mode: the output model calls tools itself ({len(specs)} available)")
        answer = await run_native(run, specs if loaded.bot.max_tool_rounds > 0 else [], catalog)
    else:
        answer = await _chain_mode(run, specs, catalog, memory)
    return await doc_message.cite(run, answer, in_documents)


def _moderation_event(run: Run, what: str, rule: str, action: str) -> None:
    msg = run.msg
    log_event(msg.bot_id, what, rule, action, platform=msg.platform, channel_id=msg.channel_id,
              author_id=msg.author_id, is_dm=msg.is_dm)


async def _judge(run: Run, moderation: Moderation) -> str:
    """The Moderator's word on the message: the admin's action when it is abusive, else ``log``
    (answered as usual)."""
    abusive = await moderator.judged_abusive(run)
    await run.think("moderation", "the decision model judged the message abusive" if abusive
                    else "the decision model could not check the message" if abusive is None
                    else "the decision model judged the message acceptable", abusive=abusive)
    if not abusive:
        return "log"
    _moderation_event(run, "a message", moderator.RULE, moderation.action)
    return moderation.action


async def _moderate_answer(run: Run, moderation: Moderation, final_text: str) -> str | None:
    """The whole answer checked (while it streamed, the recorder's guard checked it as it went out):
    ``withheld`` or ``refused`` when it broke a rule and the admin's action replaces it, else None
    (an action ``log`` only logs it)."""
    if not moderation.checks_text:
        return None
    rule = run.recorder.moderate_end(final_text) if run.recorder.guard is not None else moderation.find(final_text)
    if rule is None:
        return None
    action = moderation.action
    replaced = {"ignore": "withheld", "refuse": "refused"}.get(action)
    _moderation_event(run, "an answer", rule, {"withheld": "withheld", "refused": "replaced"}.get(replaced or "", "log"))
    await run.think("moderation", f"the answer matched {rule}: " + (
        "it was withheld (nothing is sent)" if replaced == "withheld" else
        "it was replaced by the refusal" if replaced == "refused" else "logged only"), rule=rule)
    return replaced


def _answered(msg: IncomingMessage, seconds: float, calls: int, usage: Any) -> dict[str, Any]:
    """What the bot's log says of an answered message (:func:`~grobot.core.agents.run_store.answered_line`;
    stored with the run's end, in its transaction)."""
    where = "Test Chat" if msg.platform == "test_chat" else (
        "CLI" if msg.platform == "cli" else "DM" if msg.is_dm else f"channel {msg.channel_id}")
    return {"where": where, "user": msg.author_id or "?", "name": msg.author_name, "ms": round(seconds * 1000), "calls": calls,
            "tokens_in": usage.tokens_in, "tokens_out": usage.tokens_out}


def cancel_reason(exc: asyncio.CancelledError) -> str:
    """What the terminal event of a cancelled run says: the reason given to ``Task.cancel(msg)``, if any."""
    reason = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
    return f"the run was cancelled ({reason})" if reason else "the run was cancelled"


async def wait_for_background(timeout: float = 30.0) -> None:
    """Wait until the background work of finished runs (the Archivist) is done."""
    await archivist.drain(timeout)


# --------------------------------------------------------------------------- chain mode


async def _chain_mode(run: Run, specs: list[ToolSpec], catalog: ToolCatalog, memory: MemoryPort) -> str:
    if not specs or run.bot.max_tool_rounds <= 0:
        why = "the bot has no tools" if not specs else "tool rounds are set to 0"
        await run.think("tool_identifier", f"skipped: {why}; answering directly")
        return await synthesize(run, [])
    by_name = {s.name: s for s in specs}
    known = await run.known_scores() if run.known_scores is not None else None
    routing = await tool_router.route(run.msg.content, specs, memory, budget=get_settings().memory_budget_seconds,
                                      known=known)
    await run.think("tool_router", routing.describe(), detail=routing.scores_text(), candidates=routing.candidates)
    candidates = [by_name[name] for name in routing.candidates]
    first_round = await _first_round(run, routing, by_name)
    exchange: list[dict[str, Any]] = []
    done: list[tuple[str, dict[str, Any], str]] = []
    seen: set[str] = set()
    rounds = 0
    note = ""
    any_failed = False
    while candidates:
        if rounds >= run.bot.max_tool_rounds:
            note = prompts.ROUND_LIMIT
            await run.think("planner", f"the limit of {run.bot.max_tool_rounds} tool round(s) was reached; answering with what there is")
            break
        round_no = rounds + 1
        chosen = first_round if rounds == 0 else await recovery.retry_once(
            run, "tool_identifier",
            lambda failed: choose_one(run, candidates, done=done, round_no=round_no, failed=failed),
            keep_going=bool(exchange))
        if chosen is None:  # the tools model failed twice: answer with the results so far
            note = prompts.TOOLS_MODEL_FAILED_NOTE
            break
        fresh = list({c.name: c for c in chosen}.values())
        # A tool that changes things only when the message asks for it (before its arguments are worked out).
        fresh = [c for c in fresh if await write_requests.asks_for(run, by_name[c.name])]
        if not fresh:
            await run.think("tool_identifier", "no more tools needed" if done else "no tool needed")
            break
        await run.think("tool_identifier", f"chose {', '.join(c.name for c in fresh)}", tools=[c.name for c in fresh])
        # Parameter Extractor for the tools that take arguments (in parallel); none for the others.
        needs = [c for c in fresh if needs_arguments(by_name[c.name])
                 and (c.arguments is None or check(c.arguments, by_name[c.name]))]
        shown, said = results_text(done), results_said(done)  # "" in the first round
        results = await asyncio.gather(*(_extract(run, by_name[c.name], c.arguments, shown, said, keep_going=bool(exchange))
                                         for c in needs))
        if any(r is None for r in results):  # the tools model failed twice: answer with the results so far
            note = prompts.TOOLS_MODEL_FAILED_NOTE
            break
        extractions: dict[str, Extraction] = {c.name: r for c, r in zip(needs, results) if r is not None}
        calls: list[PlannedCall] = []
        for choice in fresh:
            extraction = extractions.get(choice.name)
            if extraction is None:  # no arguments, or valid ones from the Identifier (a model free of the schema)
                arguments = choice.arguments or {}
                if by_name[choice.name].takes_message and check(arguments, by_name[choice.name]):
                    arguments = {}  # it reads what the user asked from their message itself
                calls.append(PlannedCall(id=new_call_id(), name=choice.name, arguments=arguments))
            elif extraction.arguments is not None:
                calls.append(PlannedCall(id=new_call_id(), name=choice.name, arguments=extraction.arguments))
            elif extraction.missing:
                # Clarifier: ask the user, and the run ends with the question.
                question = await clarify(run, by_name[choice.name], extraction.missing, extraction.question)
                run.new_messages.extend(exchange)
                return await settle(run, question, grounded_results(run), keep=True)
            else:
                calls.append(PlannedCall(id=new_call_id(), name=choice.name, arguments={},
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
        # A next round offers only the candidates not called yet, one at a time or none: a call
        # already made is never asked for again (the Router planned every request in the first round).
        called = {c.name for c in calls}
        candidates = [c for c in candidates if c.name not in called]
    if any_failed:
        note = (note + "\n" + prompts.TOOLS_FAILED_NOTE).strip()
    answer = await synthesize(run, exchange, note=note)
    run.new_messages.extend(exchange)
    return answer


async def _extract(run: Run, spec: ToolSpec, partial: dict[str, Any] | None, results: str, said: str, *,
                   keep_going: bool) -> Extraction | None:
    """The Parameter Extractor (``results``, ``said``: the earlier rounds' results as shown to the model and
    unquoted), asked once more with the error when its call fails (None: failed twice)."""
    return await recovery.retry_once(run, "parameter_extractor",
                                     lambda failed: extract(run, spec, partial, failed=failed, results=results,
                                                            results_said=said),
                                     keep_going=keep_going)


async def _first_round(run: Run, routing: tool_router.Routing, by_name: dict[str, ToolSpec]) -> list[Choice]:
    """The Router's sure choices, and the Tool Identifier's choice within each group of close tools (in parallel)."""
    choices = [Choice(name=name, arguments=None) for name in routing.picks]
    def asker(group: tool_router.Group) -> Any:
        return lambda failed: choose_one(run, [by_name[n] for n in group.names], failed=failed, allow_none=not group.sure)

    chosen = await asyncio.gather(*(recovery.retry_once(run, "tool_identifier", asker(group), keep_going=False)
                                    for group in routing.groups))
    return choices + [c for group_choices in chosen for c in group_choices or [] if c.name not in routing.picks]


def _args_key(arguments: dict[str, Any] | None) -> str:
    return json.dumps(arguments, sort_keys=True, default=str) if arguments is not None else ""


def _assistant_calls(calls: list[PlannedCall]) -> dict[str, Any]:
    return {"role": "assistant", "content": "",
            "tool_calls": [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                           for c in calls]}


# --------------------------------------------------------------------------- helpers


async def _catalog(run: Run, deps: ChainDeps, links: list[Any] | None) -> ToolCatalog:
    from grobot.core.tools.base import EmptyCatalog

    try:
        return await deps.catalog(run.msg.bot_id, links, bot=run.bot)
    except Exception as exc:
        logger.warning("The tool catalog of bot %s failed: %s", run.msg.bot_id, error_line(exc))
        await run.think("tools", f"the tools could not be loaded ({error_line(exc)}); answering without them")
        return EmptyCatalog()


async def _list_tools(run: Run, catalog: ToolCatalog) -> list[ToolSpec]:
    try:
        specs = list(await catalog.list_tools())
    except Exception as exc:
        logger.warning("Listing the tools of bot %s failed: %s", run.msg.bot_id, exc)
        await run.think("tools", f"the tools could not be listed ({error_line(exc)}); answering without them")
        return []
    try:
        missing = catalog.unavailable() or {}
    except Exception:
        missing = {}
    if missing:
        run.unavailable_tools = {str(k): str(v)[:200] for k, v in missing.items()}
        await run.think("tools", "unavailable: " + "; ".join(f"{k}: {v}" for k, v in missing.items()), unavailable=missing)
    return specs


async def _in_documents(found: Awaitable[Found | None]) -> Found:
    """The message's passages, found by the host already or coming (none when their lookup failed)."""
    try:
        return await found or doc_message.NOTHING
    except Exception as exc:
        logger.info("No document passages for the message (%s)", type(exc).__name__)
        return doc_message.NOTHING


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


def _run_end(run: Run | None, error: str | None) -> RunEnd | None:
    """What the last write of a run stores besides the events."""
    if run is None:
        return None
    return RunEnd(bot_id=run.msg.bot_id, author_name=run.bot.name, new_messages=run.new_messages, records=run.records,
                  stored_run=run.msg.run_id is not None, error=error)


async def _save_orphan_calls(run: Run) -> None:
    """Accounting of a run that ended before it had a stored message (the Gatekeeper said no)."""
    if run.records:
        await run.recorder.store.save_calls(run.msg.bot_id, None, run.records)


async def _fail(recorder: RunRecorder, run: Run | None, message: str, started: float, *,
                cancelled: bool = False, public: str | None = None) -> ChainResult:
    """End the run with one error event: ``message`` for Test Chat and the logs, ``public`` (if
    given) for a chat platform's user (:func:`grobot.core.llm.public_errors.public_error`)."""
    total = time.perf_counter() - started
    timings = _timings(run, total) if run is not None else {"total_ms": round(total * 1000, 2)}
    end = None
    if recorder.storing:
        if cancelled and run is not None and recorder.shown_text:  # what the user saw before the stop stays
            run.new_messages.append({"role": "assistant", "content": recorder.shown_text})
        end = _run_end(run, message)
        if end is not None:
            end.cancelled = cancelled
    elif run is not None and run.records:
        try:
            await _save_orphan_calls(run)
        except Exception:
            logger.exception("Could not store the LLM calls of a failed run")
    try:
        await recorder.finish(EventKind.ERROR, {"message": message, **({"cancelled": True} if cancelled else {}),
                                                **({"public": public} if public else {})}, end=end)
    except Exception:
        logger.exception("Could not end the run with an error")
    return ChainResult(replied=True, run_id=recorder.run_id, error=message, public_error=public, llm_calls=len(run.records) if run else 0,
                       timings=timings)
