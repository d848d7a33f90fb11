"""The advisory council: one question, several advisors in parallel, then a synthesis.

Each advisor has its own role text and its own LLM (provider and model; the bot's
categories by default). They all answer at once; each answer is handed on as soon as it
arrives (``on_advisor``, in finishing order), so Discord and Test Chat show it while the
others think. An advisor that fails is reported with its error and the synthesis goes on
with the others: on Discord with a plain reason (:func:`grobot.core.public_errors.public_error`,
never the provider's reply or its address), in Test Chat, the Council page and the logs in
full. The synthesis is one structured call: the consensus, the disagreements, a
recommendation and a confidence score (0-100).

Plain data only (it runs in bot processes, which import no database layer): what a
deliberation needs is a :class:`CouncilPlan`, what it gives is a :class:`Deliberation`;
reading the plan and storing the result is the caller's port (:class:`CouncilPort`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from grobot.core.agents.endings import ended_cleanly
from grobot.core.agents.structured import BadJSON, parse_object
from grobot.core.limits import LimitState
from grobot.core.llm import errors
from grobot.core.llm.effective import EffectiveLLM
from grobot.core.llm.service import CallRecord, LLMCallFailed, call_llm
from grobot.core.markdown_fences import fences_closed
from grobot.core.public_errors import GENERIC, public_error

logger = logging.getLogger(__name__)

ADVISOR_MAX_TOKENS = 400  # one short section each
SYNTHESIS_MAX_TOKENS = 600
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

ADVISOR_RULES = ("Answer the question from your role only, in your own voice and style, in at most 120 words. "
                 "No preamble; do not repeat the question.")

SYNTHESIS_SYSTEM = (
    "You chair an advisory council. Advisors with different roles answered the same question. Weigh their answers "
    "and reply in JSON: 'consensus' (what most of them agree on, 1-3 sentences), 'disagreements' (one short item per "
    "real disagreement; empty when there is none), 'recommendation' (what to do, 1-2 sentences) and 'confidence' "
    "(0-100: how sure the council is, lower when the advisors disagree or some are missing).")

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


class CouncilError(Exception):
    """The council cannot deliberate (off for this bot, no advisor, over a limit): the message says why."""


@dataclass
class Advisor:
    """One advisor as a deliberation uses it."""

    name: str
    role: str
    llm: EffectiveLLM

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "llm": self.llm.as_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Advisor:
        return cls(name=str(data["name"]), role=str(data["role"]), llm=EffectiveLLM.from_dict(data["llm"]))


@dataclass
class CouncilPlan:
    """What a deliberation of one bot needs (read when the question comes; secrets decrypted)."""

    bot_id: int
    bot_name: str
    enabled: bool
    advisors: list[Advisor]
    synthesizer: EffectiveLLM
    limits: LimitState | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"bot_id": self.bot_id, "bot_name": self.bot_name, "enabled": self.enabled,
                "advisors": [a.as_dict() for a in self.advisors], "synthesizer": self.synthesizer.as_dict(),
                "limits": self.limits.as_dict() if self.limits is not None else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CouncilPlan:
        return cls(bot_id=int(data["bot_id"]), bot_name=str(data["bot_name"]), enabled=bool(data["enabled"]),
                   advisors=[Advisor.from_dict(a) for a in data["advisors"]],
                   synthesizer=EffectiveLLM.from_dict(data["synthesizer"]),
                   limits=LimitState(**data["limits"]) if data.get("limits") else None)


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
    """A finished deliberation: the advisors' answers in finishing order, the synthesis, the accounting."""

    question: str
    advisors: list[AdvisorAnswer] = field(default_factory=list)
    consensus: str = ""
    disagreements: list[str] = field(default_factory=list)
    recommendation: str = ""
    confidence: int | None = None
    error: str = ""  # the synthesis could not be made (the advisors' answers are kept)
    public_error: str = ""  # what a chat user is told of ``error`` (empty: ``error`` says it plainly)
    seconds: float = 0.0
    records: list[CallRecord] = field(default_factory=list)

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
        lines = [f"**Synthesis** · confidence {self.confidence}/100",
                 f"**Consensus:** {fences_closed(self.consensus.strip())}"]
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
        return {"question": self.question, "advisors": [a.as_dict() for a in self.advisors],
                "synthesis": self.synthesis(), "consensus": self.consensus, "disagreements": list(self.disagreements),
                "recommendation": self.recommendation, "confidence": self.confidence, "error": self.error,
                "seconds": round(self.seconds, 3), "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "records": [dict(vars(r)) for r in self.records]}


class CouncilPort(Protocol):
    """Where a deliberation reads its plan and stores its result (the database, or a bot's supervisor)."""

    async def council_plan(self, bot_id: int, asker: str | None) -> CouncilPlan:
        """The bot's council; ``asker``: the Discord user whose daily messages count (None: not counted)."""

    async def save_deliberation(self, bot_id: int, deliberation: Deliberation, *, asked_by: str,
                                platform: str) -> int:
        """Store ``deliberation`` with its LLM calls; returns its id."""


AdvisorCallback = Callable[[AdvisorAnswer], Awaitable[None]]


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
                     records: list[CallRecord] | None = None) -> Deliberation:
    """Put ``question`` to every advisor of ``plan`` at once, then synthesise. Never raises for an LLM failure:
    an advisor's error is in its answer, the synthesis's in :attr:`Deliberation.error`. ``records``: the list the
    LLM calls are added to as they end (the caller's: a stopped council still accounts for what it used)."""
    check_plan(plan)
    question = question.strip()[:MAX_QUESTION_CHARS]
    started = time.perf_counter()
    result = Deliberation(question=question, records=records if records is not None else [])
    tasks = [asyncio.create_task(_ask(advisor, question, result.records)) for advisor in plan.advisors]
    try:
        for next_done in asyncio.as_completed(tasks):
            answer = await next_done
            result.advisors.append(answer)
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
        await _synthesise(plan.synthesizer, question, result)
    result.seconds = time.perf_counter() - started
    return result


async def _ask(advisor: Advisor, question: str, records: list[CallRecord]) -> AdvisorAnswer:
    answer = AdvisorAnswer(name=advisor.name, role=advisor.role, provider=advisor.llm.provider, model=advisor.llm.model)
    messages = [{"role": "system", "content": f"{advisor.role.strip()}\n\n{ADVISOR_RULES}"},
                {"role": "user", "content": question}]
    started = time.perf_counter()
    try:
        llm = await call_llm(advisor.llm, messages, role="council_advisor", max_tokens=ADVISOR_MAX_TOKENS)
        calls = llm.records
        capped = bool(llm.records) and llm.records[-1].capped
        answer.answer, answer.model = (ended_cleanly(llm.text) if capped else llm.text).strip(), llm.model
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


def synthesis_messages(question: str, answers: list[AdvisorAnswer]) -> list[dict[str, Any]]:
    parts = [f"Question: {question}", ""]
    for a in answers:
        parts.append(f"## {a.name}" + (f" (could not answer: {a.error})" if a.error else ""))
        if not a.error:
            parts.append(a.answer)
        parts.append("")
    return [{"role": "system", "content": SYNTHESIS_SYSTEM}, {"role": "user", "content": "\n".join(parts).strip()}]


async def _synthesise(llm: EffectiveLLM, question: str, result: Deliberation) -> None:
    try:
        answer = await call_llm(llm, synthesis_messages(question, result.advisors), role="council_synthesis",
                                schema=SYNTHESIS_SCHEMA, max_tokens=SYNTHESIS_MAX_TOKENS, temperature=0.2)
    except LLMCallFailed as exc:
        result.records.extend(exc.records)
        result.error = "the synthesis failed: " + errors.one_line(str(exc.cause), 300)
        result.public_error = public_error(exc.cause)
        logger.warning("The council's %s", result.error)
        return
    result.records.extend(answer.records)
    try:
        data, _ = parse_object(answer.text)
    except BadJSON as exc:
        result.error = f"the synthesis was not valid JSON ({exc})"
        return
    result.consensus = str(data.get("consensus") or "").strip()
    raw = data.get("disagreements") or []
    result.disagreements = [str(d).strip() for d in (raw if isinstance(raw, list) else [raw]) if str(d).strip()]
    result.recommendation = str(data.get("recommendation") or "").strip()
    result.confidence = _confidence(data.get("confidence"))


def _confidence(value: Any) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    if 0 < number <= 1 and not float(number).is_integer():  # a model that answered a fraction
        number *= 100
    return max(0, min(100, round(number)))
