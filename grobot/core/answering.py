"""What happens to a message: the one entry point of Discord, Test Chat and the CLI.

    read what the run needs -> reply rules -> usage limits -> cooldown -> runs at once -> chain
                                                                                 (-> Archivist)

Each check is made once, here: :func:`admit` decides, :func:`answer` runs the agent chain
(:func:`grobot.core.agents.chain.run_chain`, which schedules the Archivist) and frees the run's
slot, :func:`refuse` ends a refused stored run with its reason. :func:`answer_message` does all
three for a host that has read nothing yet. A host passes its dependencies in
(:class:`~grobot.core.agents.deps.ChainDeps`) and keeps one :class:`FloodGate` per bot; it adds
only its glue: the bot process maps a Discord message, streams the answer and shows notices;
the Test Chat runner streams the events to the page; the CLI prints them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.reply_rules import rules_decision, silence_reason
from grobot.core.agents.run_store import Loaded, RunEnd
from grobot.core.agents.tool_router import KnownScores
from grobot.core.agents.types import ChainResult, EventKind, EventSink, IncomingMessage, ReplyRules, limited_user
from grobot.core.errors import GroBotError, error_line
from grobot.core.flood import BUSY_NOTICE, COOLDOWN_NOTICE, Cooldowns, NoticeGate, RunLimiter
from grobot.core.limits import check as limit_hit
from grobot.core.limits import warn_once
from grobot.core.tools.base import ToolCatalog

logger = logging.getLogger(__name__)


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


def admit(msg: IncomingMessage, loaded: Loaded, gate: FloodGate, *,
          decision: bool | None | Literal["rules"] = "rules") -> Admission:
    """Reply rules, usage limits, cooldown, then runs at once, in that order, each once.

    ``decision``: the reply rules' word when the host's read already gave it (the bot link
    evaluates them with the settings it reads), else they are evaluated here.
    """
    if decision == "rules":
        decision = rules_decision(loaded.rules or ReplyRules(), msg)
    if decision is False:
        return Admission(decision=False)
    meant = decision is True  # addressed to the bot (or by a rule): a refusal is said, not kept silent
    author = str(msg.author_id or "")
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


async def answer(msg: IncomingMessage, admission: Admission, loaded: Loaded, deps: ChainDeps, *,
                 sink: EventSink | None = None, tools: ToolCatalog | None = None,
                 memories: list[str] | None = None, similarities: KnownScores = None) -> ChainResult:
    """Run the chain for an admitted message, then free its slot.

    ``memories`` / ``similarities``: what the host's read found already (the bot link looks the
    memories up and scores the message against the tools while it reads the settings).
    """
    from grobot.core.agents.chain import run_chain  # an idle bot process does not load the chain

    try:
        return await run_chain(msg, deps, sink=sink, tools=tools, decision=admission.decision, preloaded=loaded,
                               memories=memories, similarities=similarities)
    finally:
        admission.release()


async def refuse(msg: IncomingMessage, reason: str, deps: ChainDeps, *, sink: EventSink | None = None,
                 loaded: Loaded | None = None) -> ChainResult:
    """End a refused message with one ``error`` event saying why; a stored run (Test Chat) stores
    it and its status becomes ``error``."""
    from grobot.core.agents.events import RunRecorder

    recorder = RunRecorder(sink, deps.store)
    end = None
    if msg.run_id is not None:
        recorder.attach(msg.run_id, conversation_id=loaded.conversation_id if loaded is not None else None)
        end = RunEnd(bot_id=msg.bot_id, author_name=loaded.bot.name if loaded is not None else "",
                     stored_run=True, error=reason)
    event = await recorder.finish(EventKind.ERROR, {"message": reason}, end=end)
    return ChainResult(replied=True, run_id=recorder.run_id, error=str(event.data.get("message") or reason))


async def answer_message(msg: IncomingMessage, deps: ChainDeps, gate: FloodGate, *, sink: EventSink | None = None,
                         tools: ToolCatalog | None = None,
                         decision: bool | None | Literal["rules"] = "rules",
                         failure_keeps_cooldown: bool = True) -> ChainResult:
    """Read what the run needs, check, and answer (or refuse) one message (``decision``: see :func:`admit`).

    A message the reply rules leave unanswered is not replied (``replied`` false); its
    ``refusal`` says why, for a host whose user asked the bot directly (``/ask``). Without
    ``failure_keeps_cooldown`` (Test Chat, whose tester may retry a failed answer), an answer that
    fails or is stopped gives the user's cooldown window back."""
    try:
        loaded = await deps.store.load(msg)
    except Exception as exc:
        if not isinstance(exc, (GroBotError, ConnectionError)):
            logger.exception("Reading the run of bot %s failed", msg.bot_id, extra={"bot_id": msg.bot_id})
        return await refuse(msg, error_line(exc), deps, sink=sink)
    admission = admit(msg, loaded, gate, decision=decision)
    if admission.decision is False:
        return ChainResult(replied=False, refusal=silence_reason(loaded.rules or ReplyRules(), msg))
    if admission.refusal:
        result = await refuse(msg, admission.refusal, deps, sink=sink, loaded=loaded)
        result.refusal = admission.refusal
        return result
    answered = False
    try:
        result = await answer(msg, admission, loaded, deps, sink=sink, tools=tools)
        answered = not result.error
        return result
    finally:
        if not answered and not failure_keeps_cooldown:
            admission.give_back_cooldown(gate)
