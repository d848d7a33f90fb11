"""What happens to a message: the one entry point of Discord, Test Chat, the council and the CLI.

    prepare -> admit (reply rules with who may use the bot, moderation, usage limits, cooldown,
                      runs at once) -> answer | refuse
                                         (-> Archivist)

Every host takes the same three steps. :func:`prepare` reads the message through the host's
store (:class:`~grobot.core.agents.run_store.Prepared`: the settings, the reply rules' word, the
MCP servers, the run's start, the memories and the Tool Router's scores, these two as
awaitables): in process on the database for Test Chat and the CLI, one request to the
supervisor for a bot process. :func:`admit` makes each check once; :func:`answer` runs the agent
chain (:func:`grobot.core.agents.chain.run_chain`, which schedules the Archivist) and frees the
run's slot; :func:`refuse` ends a refused stored run with its reason. :func:`answer_message` does
all three for a host that needs nothing in between. A host passes its dependencies in
(:class:`~grobot.core.agents.deps.ChainDeps`) and keeps one :class:`FloodGate` per bot; it adds
only its glue: the bot process maps a Discord message, streams the answer and shows notices;
the Test Chat runner streams the events to the page; the CLI prints them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.reply_rules import silence_reason
from grobot.core.agents.run_store import Prepared, RunEnd
from grobot.core.agents.types import ChainResult, EventKind, EventSink, IncomingMessage, ReplyRules, limited_user
from grobot.core.flood import BUSY_NOTICE, COOLDOWN_NOTICE, Cooldowns, NoticeGate, RunLimiter
from grobot.core.limits import check as limit_hit
from grobot.core.limits import warn_once
from grobot.core.moderation import REFUSAL, log_event, moderation_note
from grobot.core.tools.base import ToolCatalog

logger = logging.getLogger(__name__)

__all__ = ["Admission", "FloodGate", "Prepared", "admit", "answer", "answer_message", "prepare", "refuse"]


@dataclass
class FloodGate:
    """The flood state of one bot in one host: cooldowns per user, runs at once, notices sent."""

    cooldowns: Cooldowns = field(default_factory=Cooldowns)
    runs: RunLimiter = field(default_factory=RunLimiter)
    notices: NoticeGate = field(default_factory=NoticeGate)


@dataclass
class Admission:
    """What the checks decided about one message.

    ``decision``: the reply rules' word (True: answer; None: the Gatekeeper model decides;
    False: stay silent). ``refusal``: why an answerable message is not answered now ("" when
    it is). ``notify``: a Discord user is told ``refusal`` now (at most once per window, and
    only when the message was meant for the bot). An admitted message holds a run slot until
    :meth:`release` (which :func:`answer` calls).
    """

    decision: bool | None
    refusal: str = ""
    notify: bool = False
    moderated: str = ""  # the moderation rule the message broke (ignored or refused for it)
    _gate: FloodGate | None = field(default=None, repr=False)
    _cooldown: tuple[str, float] | None = field(default=None, repr=False)  # (author, when it started)

    @property
    def admitted(self) -> bool:
        return self.decision is not False and not self.refusal

    def release(self) -> None:
        """Free the run slot (once; a no-op for a refused message)."""
        gate, self._gate = self._gate, None
        if gate is not None:
            gate.runs.release()

    def give_back_cooldown(self, gate: FloodGate) -> None:
        """The answer failed or was stopped: the user's cooldown window it started is forgotten (so that
        the message can be sent again at once)."""
        started, self._cooldown = self._cooldown, None
        if started is not None:
            gate.cooldowns.release(*started)


async def prepare(msg: IncomingMessage, deps: ChainDeps) -> Prepared:
    """Read ``msg`` through the host's store (:meth:`~grobot.core.agents.run_store.RunStore.prepare`):
    one session on the database, or one request to a bot's supervisor."""
    return await deps.store.prepare(msg, memory=deps.memory)


def admit(prepared: Prepared, gate: FloodGate) -> Admission:
    """Reply rules, usage limits, cooldown, then runs at once, in that order, each once.

    The reply rules' word is the one :func:`prepare` read (they include who may use the bot); the
    bot's moderation (words and patterns the message must not contain) comes right after them. A
    message that could not be read is refused with why (said to a Discord user only when it asked
    the bot directly). A refused message's lookups (memories, scores) are stopped.
    """
    admission = _checks(prepared, gate)
    if not admission.admitted:
        prepared.discard()
    return admission


def _checks(prepared: Prepared, gate: FloodGate) -> Admission:
    msg, decision, loaded = prepared.msg, prepared.decision, prepared.loaded
    if decision is False:
        return Admission(decision=False)
    meant = decision is True  # addressed to the bot (or by a rule): a refusal is said, not kept silent
    if prepared.unreadable or loaded is None:
        return Admission(decision, prepared.unreadable or "the message could not be read", meant)
    author = str(msg.author_id or "")
    moderation = loaded.moderation
    rule = moderation.find(msg.content) if moderation is not None else None
    if rule is not None and moderation is not None:
        log_event(msg.bot_id, "a message", rule, moderation.action, platform=msg.platform, channel_id=msg.channel_id,
                  author_id=msg.author_id, is_dm=msg.is_dm)
        if moderation.action == "ignore":  # a Discord user hears nothing; Test Chat and the CLI say why
            if msg.platform == "discord":
                return Admission(decision=False, moderated=rule)
            return Admission(decision, moderation_note(rule), moderated=rule)
        if moderation.action == "refuse":
            text = REFUSAL if msg.platform == "discord" else f"{REFUSAL} (the message matched {rule} of the bot's moderation)"
            return Admission(decision, text, meant and gate.notices.allow(author, "moderation"), moderated=rule)
    hit = limit_hit(loaded.limits) if loaded.limits is not None else None
    if hit is not None:  # over a limit: no LLM call, and at most one notice an hour
        warn_once(loaded.limits, hit, limited_user(msg))  # type: ignore[arg-type]
        return Admission(decision, hit.text, meant and gate.notices.allow(author, hit.reason))
    cooldown = float(loaded.bot.user_cooldown_seconds or 0)
    wait = gate.cooldowns.remaining(author, cooldown, start=False)
    if wait > 0:
        return Admission(decision, COOLDOWN_NOTICE.format(seconds=max(1.0, wait)),
                         meant and gate.cooldowns.should_notice(author, cooldown))
    if not gate.runs.try_acquire(int(loaded.bot.max_concurrent_runs or 1)):
        return Admission(decision, BUSY_NOTICE, meant)  # not answered: the user's cooldown does not start
    started = gate.cooldowns.start(author, cooldown)
    return Admission(decision, _gate=gate, _cooldown=(author, started) if started is not None else None)


async def answer(prepared: Prepared, admission: Admission, deps: ChainDeps, *, sink: EventSink | None = None,
                 tools: ToolCatalog | None = None) -> ChainResult:
    """Run the chain for an admitted message, then free its slot."""
    from grobot.core.agents.chain import run_chain  # an idle bot process does not load the chain

    try:
        return await run_chain(prepared, deps, sink=sink, tools=tools)
    finally:
        admission.release()


async def refuse(prepared: Prepared, reason: str, deps: ChainDeps, *, sink: EventSink | None = None) -> ChainResult:
    """End a refused message with one ``error`` event saying why; a stored run (Test Chat) stores
    it and its status becomes ``error``."""
    from grobot.core.agents.events import RunRecorder

    msg, loaded = prepared.msg, prepared.loaded
    recorder = RunRecorder(sink, deps.store)
    end = None
    if msg.run_id is not None:
        recorder.attach(msg.run_id, conversation_id=loaded.conversation_id if loaded is not None else None)
        end = RunEnd(bot_id=msg.bot_id, author_name=loaded.bot.name if loaded is not None else "",
                     stored_run=True, error=reason)
    event = await recorder.finish(EventKind.ERROR, {"message": reason}, end=end)
    result = ChainResult(replied=True, run_id=recorder.run_id, error=str(event.data.get("message") or reason))
    result.refusal = reason
    return result


async def answer_message(msg: IncomingMessage, deps: ChainDeps, gate: FloodGate, *, sink: EventSink | None = None,
                         tools: ToolCatalog | None = None) -> ChainResult:
    """:func:`prepare`, :func:`admit`, then :func:`answer` or :func:`refuse` one message.

    A message the reply rules leave unanswered is not replied (``replied`` false); its
    ``refusal`` says why, for a host whose user asked the bot directly (``/ask``)."""
    prepared = await prepare(msg, deps)
    admission = admit(prepared, gate)
    if admission.decision is False:  # (moderation ignoring it: no word, as for a message the bot lets pass)
        return ChainResult(replied=False, refusal="" if admission.moderated
                           else silence_reason(prepared.rules or ReplyRules(), msg))
    if admission.refusal:
        return await refuse(prepared, admission.refusal, deps, sink=sink)
    return await answer(prepared, admission, deps, sink=sink, tools=tools)
