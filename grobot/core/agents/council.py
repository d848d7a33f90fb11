"""The advisory council: one question, several advisors, then a synthesis.

Each advisor has its own role text and its own LLM (provider and model; the bot's
categories by default). Advisors on a service answer at once; advisors on an embedded
llama.cpp server take its slots in turn (more requests would wait silent in its queue, into
their timeout), each within a fair share of the time the council has on it (:class:`Pace`:
the demo model's council ends within a minute, what an advisor wrote by its deadline is
kept). Each answer is handed on as soon as it arrives (``on_advisor``, in finishing order),
so Discord and Test Chat show it while the others think, and ``on_progress`` sees the
deliberation at every step (the Council tab shows it advisor by advisor). An advisor that
fails is reported with its error and the synthesis goes on with the others: on Discord with
a plain reason (:func:`grobot.core.llm.public_errors.public_error`, never the provider's reply or
its address), in Test Chat, the Council page and the logs in full. The synthesis is one
structured call: the consensus, the disagreements, a recommendation and a confidence score
(0-100); one that says nothing (placeholders, the field names, the instructions echoed) is a
failed synthesis, not a deliberation.

Plain data only (it runs in bot processes, which import no database layer): what a
deliberation needs is a :class:`CouncilPlan`, what it gives is a :class:`Deliberation`;
reading the plan and storing the result is the caller's port (:class:`CouncilPort`).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import math
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from grobot.core.agents.endings import ended_cleanly
from grobot.core.agents.structured import BadJSON, parse_object
from grobot.core.limits import LimitState
from grobot.core.llm import errors
from grobot.core.llm.context_window import estimate_tokens, messages_tokens
from grobot.core.llm.effective import EffectiveLLM
from grobot.core.llm.embedded import DEMO_MODEL
from grobot.core.llm.embedded import PROVIDER as EMBEDDED
from grobot.core.llm.public_errors import GENERIC, public_error
from grobot.core.llm.service import CallRecord, LLMCallFailed, call_llm
from grobot.core.markdown_fences import fences_closed

logger = logging.getLogger(__name__)
SECTION_MAX_CHARS = 1900  # a section fits one Discord message with its heading
CLOSING_ROOM = 8  # what closing a code block cut open may add to a section
BREAK = "  \n"  # a line break in Markdown (Test Chat) that Discord shows as one too
MAX_QUESTION_CHARS = 4000


@dataclass(frozen=True)
class AdvisorRole:
    name: str
    role: str


DEFAULT_ROLES: tuple[AdvisorRole, ...] = (
    AdvisorRole("Analyst", "You are the Analyst. Look at the structure of the question and at the data: what is known, "
                "what is not, which figures and facts decide it. Answer precisely and soberly."),
    AdvisorRole("Strategist", "You are the Strategist. Look for the opportunities: what could be gained, which move "
                "gives the best position, what to do first. Answer with conviction."),
    AdvisorRole("Devil's Advocate", "You are the Devil's Advocate. Raise the objections and the risks others overlook: "
                "what can go wrong, which assumption is weak. Be blunt and sceptical."),
    AdvisorRole("Pragmatist", "You are the Pragmatist. Judge what is feasible with the means at hand and name the "
                "concrete next steps. Be short and practical."),
    AdvisorRole("Visionary", "You are the Visionary. Look at the trends and where things will be in a few years; "
                "say how that changes the answer. Be bold and forward-looking."),
)

CHANNEL_HEADER = "In this channel:"  # the channel persona's personality addition follows

ADVISOR_RULES = ("Answer the question from your role only, in your own voice and style, in at most {words} words. "
                 "No preamble; do not repeat the question.")

# Plain words a small model cannot copy as placeholders ("1-3 sentences" came back as a hundred bullets).
SYNTHESIS_SYSTEM = (
    "You chair an advisory council. Advisors with different roles answered the same question. Read their answers "
    "and reply in JSON with: consensus: what most advisors agree on, in your own words; disagreements: where they "
    "differ, one short item each, none when they agree; recommendation: what to do; confidence: from 0 to 100, how "
    "sure the council is, lower when advisors disagree or some are missing.")

SYNTHESIS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "consensus": {"type": "string"},
        "disagreements": {"type": "array", "items": {"type": "string"}},
        "recommendation": {"type": "string"},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
    },
    "required": ["consensus", "disagreements", "recommendation", "confidence"],
}


@dataclass(frozen=True)
class Pace:
    """How a council runs on one kind of model: the output caps, and the seconds the advisors (all of them)
    and the synthesis may take (None: each call's own timeout)."""

    advisor_words: int
    advisor_tokens: int
    synthesis_tokens: int
    advisors_seconds: float | None = None
    synthesis_seconds: float | None = None
    bounded: bool = False  # the synthesis's JSON has bounded lengths (a local model's grammar keeps to them)


SERVICE_PACE = Pace(advisor_words=120, advisor_tokens=400, synthesis_tokens=600)
LOCAL_PACE = Pace(advisor_words=120, advisor_tokens=400, synthesis_tokens=600, bounded=True)  # a GGUF file of the admin's
# The 135M demo model: short answers (longer ones are noise), the whole council within a minute on 2 cores.
DEMO_PACE = Pace(advisor_words=50, advisor_tokens=96, synthesis_tokens=192, advisors_seconds=24.0,
                 synthesis_seconds=16.0, bounded=True)


def pace_of(llm: EffectiveLLM) -> Pace:
    if llm.provider == EMBEDDED:
        return DEMO_PACE if llm.model == DEMO_MODEL else LOCAL_PACE
    return SERVICE_PACE


class CouncilError(Exception):
    """The council cannot deliberate (off for this bot, no advisor, over a limit): the message says why."""


@dataclass
class Advisor:
    """One advisor as a deliberation uses it."""

    name: str
    role: str
    llm: EffectiveLLM
    category: str = ""  # the LLM category it follows ("": it names its own provider or model)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "llm": self.llm.as_dict(), "category": self.category}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Advisor:
        return cls(name=str(data["name"]), role=str(data["role"]), llm=EffectiveLLM.from_dict(data["llm"]),
                   category=str(data.get("category") or ""))


@dataclass
class CouncilPlan:
    """What a deliberation of one bot needs (read when the question comes; secrets decrypted)."""

    bot_id: int
    bot_name: str
    enabled: bool
    advisors: list[Advisor]
    synthesizer: EffectiveLLM
    limits: LimitState | None = None
    synthesis_category: str = ""  # the LLM category the synthesis follows ("": its own provider or model)
    channel_personality: str = ""  # the personality addition of the channel asked in (its persona)

    def as_dict(self) -> dict[str, Any]:
        return {"bot_id": self.bot_id, "bot_name": self.bot_name, "enabled": self.enabled,
                "advisors": [a.as_dict() for a in self.advisors], "synthesizer": self.synthesizer.as_dict(),
                "limits": self.limits.as_dict() if self.limits is not None else None,
                "synthesis_category": self.synthesis_category, "channel_personality": self.channel_personality}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CouncilPlan:
        return cls(bot_id=int(data["bot_id"]), bot_name=str(data["bot_name"]), enabled=bool(data["enabled"]),
                   advisors=[Advisor.from_dict(a) for a in data["advisors"]],
                   synthesizer=EffectiveLLM.from_dict(data["synthesizer"]),
                   limits=LimitState(**data["limits"]) if data.get("limits") else None,
                   synthesis_category=str(data.get("synthesis_category") or ""),
                   channel_personality=str(data.get("channel_personality") or ""))

    def in_channel(self, llms: dict[str, EffectiveLLM], personality: str) -> CouncilPlan:
        """The plan as the council meets in a channel with a persona, as a plain answer there is made:
        ``llms``, the bot's LLMs per category with the channel's overrides, for the advisors (and the
        synthesis) that follow a category (one that names its own provider or model keeps it), and the
        channel's ``personality`` addition, given to every advisor and to the synthesis."""
        def on(category: str, llm: EffectiveLLM) -> EffectiveLLM:
            return llms.get(category, llm) if category else llm

        return replace(self, advisors=[replace(a, llm=on(a.category, a.llm)) for a in self.advisors],
                       synthesizer=on(self.synthesis_category, self.synthesizer),
                       channel_personality=personality.strip())


@dataclass
class AdvisorAnswer:
    """One advisor's part of a deliberation."""

    name: str
    role: str
    provider: str
    model: str
    answer: str = ""
    error: str = ""
    public_error: str = ""  # what a chat user is told of ``error``
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    state: str = ""  # while the council runs: "waiting" (for a slot of its server) or "answering"; "" once done

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))

    def section(self, *, public: bool = False) -> str:
        """The advisor's section as a chat shows it (Markdown, at most :data:`SECTION_MAX_CHARS`);
        ``public``: for a chat platform's users (a failure says its plain reason, not the error)."""
        head = f"**{self.name}** · {self.provider} {self.model} · {self.seconds:.1f} s"
        error = (self.public_error or GENERIC) if public else self.error
        body = f"_could not answer: {error}_" if self.error else self.answer.strip()
        text = f"{head}{BREAK}{body}"
        if len(text) > SECTION_MAX_CHARS:  # room for the "…" and a closing fence
            text = text[:SECTION_MAX_CHARS - 1 - CLOSING_ROOM].rstrip() + "…"
        return fences_closed(text)  # a code block left open would swallow what is shown after it


@dataclass
class Deliberation:
    """A deliberation: the advisors' answers in finishing order (and, while it runs, those still to come), the
    synthesis, the accounting."""

    question: str
    advisors: list[AdvisorAnswer] = field(default_factory=list)
    pending: list[AdvisorAnswer] = field(default_factory=list)  # not answered yet, in the plan's order
    finished: bool = True
    consensus: str = ""
    disagreements: list[str] = field(default_factory=list)
    recommendation: str = ""
    confidence: int | None = None
    error: str = ""  # the synthesis could not be made (the advisors' answers are kept)
    public_error: str = ""  # what a chat user is told of ``error`` (empty: ``error`` says it plainly)
    seconds: float = 0.0
    records: list[CallRecord] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``running``, ``done`` (a synthesis was made) or ``failed`` (none: see :attr:`error`)."""
        if not self.finished:
            return "running"
        return "done" if self.confidence is not None and not self.error else "failed"

    @property
    def tokens_in(self) -> int:
        return sum(r.tokens_in for r in self.records)

    @property
    def tokens_out(self) -> int:
        return sum(r.tokens_out for r in self.records)

    def synthesis(self, *, public: bool = False) -> str:
        """The synthesis as a chat shows it (Markdown); the error when there is none (``public``:
        its plain reason, for a chat platform's users)."""
        if self.confidence is None:
            error = (self.public_error if public else "") or self.error
            return f"**Synthesis** could not be made: {error or 'no answer'}"
        # Each part is the model's Markdown: a code block it left open is closed before the next part.
        lines = [f"**Synthesis** · confidence {self.confidence}/100"]
        if self.consensus.strip():
            lines.append(f"**Consensus:** {fences_closed(self.consensus.strip())}")
        if self.disagreements:
            lines.append("**Disagreements:**\n" + "\n".join(f"- {fences_closed(d.strip())}" for d in self.disagreements)
                         + "\n")
        else:
            lines.append("**Disagreements:** none")
        if self.recommendation.strip():
            lines.append(f"**Recommendation:** {fences_closed(self.recommendation.strip())}")
        return BREAK.join(lines)

    def as_dict(self) -> dict[str, Any]:
        """As stored (``records`` go to the LLM accounting)."""
        return {"question": self.question, "advisors": [a.as_dict() for a in self.advisors + self.pending],
                "status": self.status, "synthesis": self.synthesis() if self.finished else "",
                "consensus": self.consensus, "disagreements": list(self.disagreements),
                "recommendation": self.recommendation, "confidence": self.confidence, "error": self.error,
                "seconds": round(self.seconds, 3), "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "records": [dict(vars(r)) for r in self.records]}


class CouncilPort(Protocol):
    """Where a deliberation reads its plan and stores its result (the database, or a bot's supervisor)."""

    async def council_plan(self, bot_id: int, asker: str | None) -> CouncilPlan:
        """The bot's council; ``asker``: the Discord user whose daily messages count (None: not counted)."""

    async def save_deliberation(self, bot_id: int, deliberation: Deliberation, *, asked_by: str,
                                platform: str, deliberation_id: int | None = None) -> int:
        """Store ``deliberation`` (as the stored one ``deliberation_id``, when given: a running deliberation is
        saved at every step), with its LLM calls once it is finished; returns its id."""

    async def drop_deliberation(self, bot_id: int, deliberation_id: int) -> None:
        """Remove the stored deliberation ``deliberation_id`` (a stopped one: its calls are its run's)."""


AdvisorCallback = Callable[[AdvisorAnswer], Awaitable[None]]
ProgressCallback = Callable[["Deliberation"], Awaitable[None]]


class StoredProgress:
    """Keeps the stored deliberation in step with the running one (``on_progress`` of :func:`deliberate`): the
    first save creates it, the next ones update it; steps that come while a save is under way are saved together
    after it. A failed save is logged, never raised: the council goes on."""

    def __init__(self, port: CouncilPort, bot_id: int, *, asked_by: str, platform: str) -> None:
        self.port, self.bot_id, self.asked_by, self.platform = port, bot_id, asked_by, platform
        self.deliberation_id: int | None = None
        self.deliberation: Deliberation | None = None
        self._dirty = False
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, deliberation: Deliberation) -> None:
        self.deliberation, self._dirty = deliberation, True
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._flush())

    async def _flush(self) -> None:
        while self._dirty and self.deliberation is not None:
            self._dirty = False
            snapshot = copy.deepcopy(self.deliberation)  # as it is now: the council goes on meanwhile
            snapshot.records = []  # its calls are stored with the finished deliberation
            try:
                self.deliberation_id = await self.port.save_deliberation(
                    self.bot_id, snapshot, asked_by=self.asked_by, platform=self.platform,
                    deliberation_id=self.deliberation_id)
            except Exception as exc:
                logger.warning("Could not store the progress of a deliberation: %s", type(exc).__name__)
                return

    async def _settled(self) -> None:
        if self._task is not None:
            self._dirty = False
            await asyncio.gather(self._task, return_exceptions=True)

    async def finish(self, deliberation: Deliberation) -> int:
        """Store the finished ``deliberation`` with its LLM calls (raises when it cannot)."""
        await self._settled()
        self.deliberation_id = await self.port.save_deliberation(
            self.bot_id, deliberation, asked_by=self.asked_by, platform=self.platform,
            deliberation_id=self.deliberation_id)
        return self.deliberation_id

    async def drop(self) -> None:
        """The council was stopped: its stored progress goes (never raises)."""
        try:
            await self._settled()
            if self.deliberation_id is not None:
                await self.port.drop_deliberation(self.bot_id, self.deliberation_id)
        except Exception as exc:
            logger.warning("Could not remove a stopped deliberation: %s", type(exc).__name__)


def check_plan(plan: CouncilPlan) -> None:
    """Raise :class:`CouncilError` when ``plan`` cannot deliberate now."""
    from grobot.core.limits import check as limit_hit

    if not plan.enabled:
        raise CouncilError(f"the council of {plan.bot_name} is not enabled (an admin turns it on in the bot's Council tab)")
    if not plan.advisors:
        raise CouncilError(f"the council of {plan.bot_name} has no advisor")
    if plan.limits is not None:
        hit = limit_hit(plan.limits)
        if hit is not None:
            raise CouncilError(hit.text)


async def deliberate(plan: CouncilPlan, question: str, *, on_advisor: AdvisorCallback | None = None,
                     records: list[CallRecord] | None = None,
                     on_progress: ProgressCallback | None = None) -> Deliberation:
    """Put ``question`` to every advisor of ``plan`` (at once, or in turn on a server with few slots), then
    synthesise. Never raises for an LLM failure: an advisor's error is in its answer, the synthesis's in
    :attr:`Deliberation.error`. ``records``: the list the LLM calls are added to as they end (the caller's: a
    stopped council still accounts for what it used). ``on_progress``: called with the deliberation when it starts
    and at every advisor's start and answer (the same object, changing)."""
    check_plan(plan)
    question = question.strip()[:MAX_QUESTION_CHARS]
    started = time.perf_counter()
    result = Deliberation(question=question, records=records if records is not None else [], finished=False,
                          pending=[AdvisorAnswer(name=a.name, role=a.role, provider=a.llm.provider, model=a.llm.model,
                                                 state="waiting") for a in plan.advisors])

    async def progress() -> None:
        if on_progress is not None:
            try:
                await on_progress(result)
            except Exception:  # a broken display must not stop the council
                logger.exception("Showing the progress of a deliberation failed")

    await progress()
    lanes = await _lanes(plan.advisors)
    limits = [pace_of(a.llm).advisors_seconds for a in plan.advisors]
    seconds = min((s for s in limits if s is not None), default=None)
    end = asyncio.get_running_loop().time() + seconds if seconds is not None else None

    async def advise(index: int, advisor: Advisor) -> AdvisorAnswer:
        async with lanes[index].turn(end) as deadline:
            result.pending[_pending_index(result, advisor.name)].state = "answering"
            await progress()
            answer = await _ask(advisor, question, result.records, deadline=deadline,
                                channel=plan.channel_personality)
            result.pending.pop(_pending_index(result, advisor.name))  # answered before its slot is the next one's
            result.advisors.append(answer)
            return answer

    tasks = [asyncio.create_task(advise(i, advisor)) for i, advisor in enumerate(plan.advisors)]
    try:
        for next_done in asyncio.as_completed(tasks):
            answer = await next_done
            await progress()
            if on_advisor is not None:
                try:
                    await on_advisor(answer)
                except Exception:  # a broken display must not stop the council
                    logger.exception("Showing the answer of advisor %s failed", answer.name)
    finally:
        for task in tasks:
            task.cancel()
    answered = [a for a in result.advisors if not a.error]
    if not answered:
        result.error = "no advisor could answer"
    else:
        await _synthesise(plan.synthesizer, question, result, channel=plan.channel_personality)
    result.seconds = time.perf_counter() - started
    result.finished = True
    return result


def _pending_index(result: Deliberation, name: str) -> int:
    return next(i for i, a in enumerate(result.pending) if a.name == name)


class _Lane:
    """The advisors on one server: at most ``slots`` answer at once (None: all), in the plan's order, each by a
    deadline that leaves the ones after it the same share of the time left."""

    def __init__(self, slots: int | None, members: int) -> None:
        self.slots = slots
        self.waiting = members
        self._gate = asyncio.Semaphore(slots) if slots else None

    @contextlib.asynccontextmanager
    async def turn(self, end: float | None) -> AsyncIterator[float | None]:
        """A slot of the server; yields the answer's deadline (loop time; None: the call's own timeout)."""
        async with self._gate if self._gate is not None else contextlib.nullcontext():
            self.waiting -= 1
            yield self._deadline(end)

    def _deadline(self, end: float | None) -> float | None:
        if end is None or not self.slots:
            return end
        now = asyncio.get_running_loop().time()
        rounds = 1 + math.ceil(self.waiting / self.slots)  # this answer's round and those of the ones waiting
        return now + max(0.0, end - now) / rounds


async def _lanes(advisors: list[Advisor]) -> list[_Lane]:
    """Each advisor's lane: one per embedded server (its slots, as it says), one of its own for the others."""
    from grobot.core.llm.registry import get_provider

    keys = [(a.llm.provider, a.llm.base_url) if a.llm.provider == EMBEDDED and a.llm.base_url else None
            for a in advisors]
    shared: dict[tuple[str, str], _Lane] = {}
    for key in {k for k in keys if k is not None}:
        try:
            slots = await get_provider(key[0], key[1]).parallel_slots()
        except Exception as exc:  # the advisors' own calls will say what is wrong with the server
            logger.debug("Slots of %s unknown: %s", key[1], type(exc).__name__)
            slots = 1
        shared[key] = _Lane(slots, keys.count(key))
    return [shared[k] if k is not None else _Lane(None, 1) for k in keys]


def _with_channel(system: str, channel: str) -> str:
    """A council prompt with the channel persona's personality addition after it (as a plain answer's)."""
    return f"{system}\n\n{CHANNEL_HEADER}\n{channel.strip()}" if channel.strip() else system


async def _ask(advisor: Advisor, question: str, records: list[CallRecord], *,
               deadline: float | None = None, channel: str = "") -> AdvisorAnswer:
    answer = AdvisorAnswer(name=advisor.name, role=advisor.role, provider=advisor.llm.provider, model=advisor.llm.model)
    pace = pace_of(advisor.llm)
    system = _with_channel(f"{advisor.role.strip()}\n\n{ADVISOR_RULES.format(words=pace.advisor_words)}", channel)
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": question}]
    started = time.perf_counter()
    written: list[str] = []

    async def collect(text: str) -> None:
        written.append(text)

    try:
        async with asyncio.timeout_at(deadline):
            llm = await call_llm(advisor.llm, messages, role="council_advisor", max_tokens=pace.advisor_tokens,
                                 on_text=collect)
        calls = llm.records
        capped = bool(llm.records) and llm.records[-1].capped
        answer.answer, answer.model = (ended_cleanly(llm.text) if capped else llm.text).strip(), llm.model
    except TimeoutError:  # its deadline: what it wrote so far is its answer
        calls = [_cut_call(advisor.llm, messages, "".join(written), time.perf_counter() - started,
                           max_tokens=pace.advisor_tokens)]
        if calls[0].capped:
            answer.answer = ended_cleanly("".join(written)).strip()
        else:
            answer.error = calls[0].error
            answer.public_error = public_error(errors.LLMTimeout(answer.error))
        logger.warning("Council advisor %s was cut at its deadline (%.1f s)", advisor.name, time.perf_counter() - started)
    except LLMCallFailed as exc:
        calls = exc.records
        answer.error, answer.public_error = errors.one_line(str(exc.cause), 300), public_error(exc.cause)
        logger.warning("Council advisor %s could not answer: %s", advisor.name, answer.error)
    except Exception as exc:  # a bug in a provider must not take the council down
        logger.exception("Advisor %s failed", advisor.name)
        calls = []
        answer.error, answer.public_error = f"{type(exc).__name__}: {exc}"[:300], public_error(exc)
    answer.seconds = time.perf_counter() - started
    answer.tokens_in = sum(r.tokens_in for r in calls)
    answer.tokens_out = sum(r.tokens_out for r in calls)
    records.extend(calls)
    return answer


def _cut_call(llm: EffectiveLLM, messages: list[dict[str, Any]], written: str, seconds: float, *,
              max_tokens: int) -> CallRecord:
    """The record of a call stopped at its deadline (its usage never came: estimated, and never more than the
    ``max_tokens`` the call asked for: the estimate of a long text can exceed what the model wrote)."""
    record = CallRecord(role="council_advisor", provider=llm.provider, model=llm.model,
                        tokens_in=messages_tokens(messages), tokens_out=min(estimate_tokens(written), max_tokens),
                        estimated=True, latency_ms=seconds * 1000)
    if written.strip():
        record.capped = True
    else:
        record.error = f"no answer within {seconds:.0f} s, the time the council had for it"
    return record


def synthesis_messages(question: str, answers: list[AdvisorAnswer], channel: str = "") -> list[dict[str, Any]]:
    """The synthesis's prompt: the answers (an advisor that failed is named, its error is not the model's business)."""
    parts = [f"Question: {question}", ""]
    for a in answers:
        parts.append(f"## {a.name}" + (" (could not answer)" if a.error else ""))
        if not a.error:
            parts.append(a.answer)
        parts.append("")
    return [{"role": "system", "content": _with_channel(SYNTHESIS_SYSTEM, channel)},
            {"role": "user", "content": "\n".join(parts).strip()}]


def synthesis_schema(pace: Pace, answered: int) -> dict[str, Any]:
    """The synthesis's JSON schema; with ``pace.bounded``, lengths a grammar holds a small model to (a list of
    disagreements that never ends, a consensus that loops)."""
    if not pace.bounded:
        return SYNTHESIS_SCHEMA
    schema = copy.deepcopy(SYNTHESIS_SCHEMA)
    props = schema["properties"]
    text = min(400, pace.synthesis_tokens * 3 // 4)  # characters: the whole answer fits its output cap
    props["consensus"]["maxLength"] = text
    props["recommendation"]["maxLength"] = text
    props["disagreements"]["maxItems"] = max(1, min(3, answered - 1))
    props["disagreements"]["items"]["maxLength"] = max(80, text // 2)
    return schema


async def _synthesise(llm: EffectiveLLM, question: str, result: Deliberation, *, channel: str = "") -> None:
    pace = pace_of(llm)
    answered = [a for a in result.advisors if not a.error]
    try:
        async with asyncio.timeout(pace.synthesis_seconds):
            answer = await call_llm(llm, synthesis_messages(question, result.advisors, channel), role="council_synthesis",
                                    schema=synthesis_schema(pace, len(answered)), max_tokens=pace.synthesis_tokens,
                                    temperature=0.2)
    except TimeoutError:
        result.error = f"the synthesis did not finish within {pace.synthesis_seconds:.0f} s"
        result.public_error = public_error(errors.LLMTimeout(result.error))
        logger.warning("Council: %s", result.error)
        return
    except LLMCallFailed as exc:
        result.records.extend(exc.records)
        result.error = "the synthesis failed: " + errors.one_line(str(exc.cause), 300)
        result.public_error = public_error(exc.cause)
        logger.warning("Council: %s", result.error)
        return
    result.records.extend(answer.records)
    try:
        data, _ = parse_object(answer.text)
    except BadJSON as exc:
        result.error = f"the synthesis was not valid JSON ({exc})"
        return
    result.consensus = _said(data.get("consensus"))
    result.recommendation = _said(data.get("recommendation"))
    raw = data.get("disagreements") or []
    seen = {result.consensus.casefold(), result.recommendation.casefold(), ""}
    for item in raw if isinstance(raw, list) else [raw]:
        text = _said(item)
        if text.casefold() not in seen and len(result.disagreements) < max(1, len(answered) - 1):
            seen.add(text.casefold())
            result.disagreements.append(text)
    if not result.consensus and not result.recommendation:
        result.disagreements = []
        result.error = "the synthesis said nothing of the advisors' answers (its model wrote only placeholders)"
        result.public_error = "my model could not sum up the advisors' answers; please try again"
        logger.warning("Council: %s: %s", result.error, errors.one_line(answer.text, 200))
        return
    result.confidence = _confidence(data.get("confidence"))


_WORD = re.compile(r"[^\W\d_]{2,}")
# What a model that only echoes its instructions writes: their words, the fields' names.
_INSTRUCTION_WORDS = frozenset(_WORD.findall(SYNTHESIS_SYSTEM.casefold())) | frozenset(SYNTHESIS_SCHEMA["properties"]) \
    | {"none", "null", "item", "items", "sentence", "sentences", "string", "text", "placeholder", "json", "todo", "tbd"}


def _said(value: Any) -> str:
    """``value`` as text when it says something: a word of its own, not only the instructions' words, the
    fields' names, numbers or punctuation ("CONSENSUS: consensus", "1-3 sentences", "1.0.0.0")."""
    text = str(value or "").strip() if isinstance(value, (str, int, float)) else ""
    words = _WORD.findall(text.casefold())
    return text if any(w not in _INSTRUCTION_WORDS for w in words) else ""

def _confidence(value: Any) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    if 0 < number <= 1 and not float(number).is_integer():  # a model that answered a fraction
        number *= 100
    return max(0, min(100, round(number)))
