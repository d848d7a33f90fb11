"""A bot's advisory council: on or off, its advisors (role text, LLM), and its past deliberations.

An advisor's LLM is one of the bot's categories (decision, tools, output: the effective
settings, override or global), optionally with another provider and/or model. Another
provider borrows the base URL and API key of a setting that already uses it (the bot's
first, then the global ones), else the provider's own default URL.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import case, delete, func
from sqlmodel import Session, col, select

from grobot.core.agents.council import DEFAULT_ROLES, Advisor, CouncilPlan
from grobot.core.agents.council import Deliberation as DeliberationResult
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.llm import providers
from grobot.core.llm.effective import EffectiveLLM
from grobot.core.models import Bot, Council, CouncilAdvisor, Deliberation, LLMCategory, LLMSetting, utcnow
from grobot.core.services import costs, llm_calls, llm_settings, usage_limits
from grobot.core.services.validation import validate
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

MAX_ADVISORS = 8
CATEGORIES = tuple(c.value for c in LLMCategory)


def _not_empty(value: str, why: str) -> str:
    if not value:
        raise ValueError(why)
    return value


def _check_category(value: str) -> str:
    if value not in CATEGORIES:
        raise ValueError(f"unknown category {value!r}; one of: {', '.join(CATEGORIES)}")
    return value


def _check_provider(value: str) -> str:
    value = value.lower()
    if value and value not in providers.NAMES:
        raise ValueError(f"unknown provider {value!r}; one of: {', '.join(providers.NAMES)}")
    return value


class AdvisorFields(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str = Field(max_length=64)
    role: str = Field(max_length=4000)
    category: str = LLMCategory.OUTPUT.value
    provider: str = Field(default="", max_length=32)
    model: str = Field(default="", max_length=200)
    enabled: bool = True

    _name = field_validator("name")(lambda cls, v: _not_empty(v, "required: an advisor needs a name"))
    _role = field_validator("role")(lambda cls, v: _not_empty(v, "required: what the advisor looks at and how it answers"))
    _category = field_validator("category")(lambda cls, v: _check_category(v))
    _provider = field_validator("provider")(lambda cls, v: _check_provider(v))


class SynthesisFields(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    synthesis_category: str = LLMCategory.OUTPUT.value
    synthesis_provider: str = Field(default="", max_length=32)
    synthesis_model: str = Field(default="", max_length=200)

    _category = field_validator("synthesis_category")(lambda cls, v: _check_category(v))
    _provider = field_validator("synthesis_provider")(lambda cls, v: _check_provider(v))


def _bot(bot_id: int, session: Session) -> Bot:
    bot = session.get(Bot, bot_id)
    if bot is None:
        raise NotFoundError(f"no bot numbered {bot_id}")
    return bot


def get_council(bot_id: int, *, session: Session) -> Council:
    """The bot's council row (a default, unsaved one when it has none)."""
    _bot(bot_id, session)
    return session.get(Council, bot_id) or Council(bot_id=bot_id)


def advisors(bot_id: int, *, session: Session) -> list[CouncilAdvisor]:
    """The bot's advisors in order; the five default roles (unsaved) when none was ever set."""
    rows = list(session.exec(select(CouncilAdvisor).where(CouncilAdvisor.bot_id == bot_id)
                             .order_by(col(CouncilAdvisor.position), col(CouncilAdvisor.id))).all())
    if rows or session.get(Council, bot_id) is not None:
        return rows
    return [CouncilAdvisor(bot_id=bot_id, position=i, name=r.name, role=r.role) for i, r in enumerate(DEFAULT_ROLES)]


def _saved_council(bot_id: int, session: Session) -> Council:
    """The council row, created with the default advisors on first change."""
    _bot(bot_id, session)
    row = session.get(Council, bot_id)
    if row is None:
        defaults = advisors(bot_id, session=session)
        row = Council(bot_id=bot_id)
        session.add(row)
        session.add_all(defaults)
        session.flush()
    return row


def set_council(bot_id: int, *, session: Session, enabled: bool | None = None, **synthesis: Any) -> Council:
    """Turn the council on or off and/or set the synthesis LLM (``synthesis_category/provider/model``)."""
    row = _saved_council(bot_id, session)
    if synthesis:
        current = {k: getattr(row, k) for k in SynthesisFields.model_fields}
        data = validate(SynthesisFields, {**current, **synthesis})
        for key, value in data.model_dump().items():
            setattr(row, key, value)
    if enabled is not None:
        row.enabled = bool(enabled)
    row.updated_at = utcnow()
    session.add(row)
    session.flush()
    return row


def set_advisor(bot_id: int, name: str, *, session: Session, **fields: Any) -> CouncilAdvisor:
    """Create or change the advisor ``name`` of the bot (``role``, ``category``, ``provider``, ``model``, ``enabled``;
    ``new_name`` renames it)."""
    _saved_council(bot_id, session)
    row = session.exec(select(CouncilAdvisor).where(CouncilAdvisor.bot_id == bot_id,
                                                    CouncilAdvisor.name == name.strip())).first()
    new_name = fields.pop("new_name", None)
    if row is None:
        count = session.exec(select(func.count()).select_from(CouncilAdvisor)
                             .where(CouncilAdvisor.bot_id == bot_id)).one()
        if count >= MAX_ADVISORS:
            raise ValidationError(f"a council has at most {MAX_ADVISORS} advisors")
        if not str(fields.get("role") or "").strip():
            raise ValidationError(f"role: required for a new advisor (what {name.strip()} looks at, and how)")
        row = CouncilAdvisor(bot_id=bot_id, position=int(count), name=name.strip(), role="")
    current = {"name": new_name if new_name is not None else row.name, "role": row.role, "category": row.category,
               "provider": row.provider, "model": row.model, "enabled": row.enabled}
    data = validate(AdvisorFields, {**current, **{k: v for k, v in fields.items() if v is not None}})
    if data.name != row.name and session.exec(select(CouncilAdvisor.id).where(
            CouncilAdvisor.bot_id == bot_id, CouncilAdvisor.name == data.name)).first() is not None:
        raise ValidationError(f"name: the council already has an advisor named {data.name!r}")
    for key, value in data.model_dump().items():
        setattr(row, key, value)
    session.add(row)
    session.flush()
    return row


def delete_advisor(bot_id: int, name: str, *, session: Session) -> None:
    _saved_council(bot_id, session)
    result = session.execute(delete(CouncilAdvisor).where(col(CouncilAdvisor.bot_id) == bot_id,
                                                          col(CouncilAdvisor.name) == name.strip()))
    if not result.rowcount:  # type: ignore[attr-defined]
        raise NotFoundError(f"the council has no advisor named {name.strip()!r}")


def reset_advisors(bot_id: int, *, session: Session) -> list[CouncilAdvisor]:
    """Replace the bot's advisors with the five default roles (on the output category)."""
    _saved_council(bot_id, session)
    session.execute(delete(CouncilAdvisor).where(col(CouncilAdvisor.bot_id) == bot_id))
    rows = [CouncilAdvisor(bot_id=bot_id, position=i, name=r.name, role=r.role) for i, r in enumerate(DEFAULT_ROLES)]
    session.add_all(rows)
    session.flush()
    return rows


# --------------------------------------------------------------------------- the plan of a deliberation


def _with_provider(base: EffectiveLLM, provider: str, model: str, bot_id: int, session: Session) -> EffectiveLLM:
    """``base`` on ``provider`` and/or ``model`` (empty: as in ``base``)."""
    llm = base
    if provider and provider != base.provider:
        rows = session.exec(select(LLMSetting).where(
            LLMSetting.provider == provider,
            (LLMSetting.bot_id == bot_id) | (LLMSetting.bot_id.is_(None)))).all()  # type: ignore[union-attr]
        row = min(rows, key=lambda r: (r.bot_id is None, r.id), default=None)
        entry = providers.entry(provider)
        default_url = get_settings().ollama_host if provider == "ollama" else (entry.base_url if entry else "")
        if row is not None:
            from grobot.core import security

            url, key, window = row.base_url or default_url, security.decrypt_optional(row.api_key_enc), row.context_window
        else:
            url, key, window = default_url, None, base.context_window
        llm = replace(base, provider=provider, base_url=url, api_key=key, context_window=window,
                      model=model or (entry.default_model if entry else base.model), fallback_model=None,
                      source="council", unavailable=None)  # why base's model cannot run says nothing of this one
    elif model and model != base.model:
        llm = replace(base, model=model, fallback_model=None, source="council")
    if llm.provider == "llamacpp" and llm is not base:
        llm = llm_settings._resolved({"x": replace(llm, unavailable=None)}, session)["x"]  # the worker's server
    return llm


def advisor_llm(row: Any, llms: dict[str, EffectiveLLM], bot_id: int, *, session: Session) -> EffectiveLLM:
    """The LLM an advisor (or the synthesis: ``synthesis_*`` fields) uses."""
    prefix = "synthesis_" if hasattr(row, "synthesis_category") else ""
    category = getattr(row, prefix + "category") or LLMCategory.OUTPUT.value
    return _with_provider(llms[category], getattr(row, prefix + "provider") or "", getattr(row, prefix + "model") or "",
                          bot_id, session)


def council_plan(bot_id: int, *, session: Session, discord_user_id: str | None = None) -> CouncilPlan:
    """Everything a deliberation of the bot needs, read in one session (secrets decrypted)."""
    bot = _bot(bot_id, session)
    council = get_council(bot_id, session=session)
    llms = llm_settings.effective_llms(session=session, bot_id=bot_id)
    members = [Advisor(name=a.name, role=a.role, llm=advisor_llm(a, llms, bot_id, session=session),
                       category=followed_category(a)) for a in advisors(bot_id, session=session) if a.enabled]
    return CouncilPlan(bot_id=bot_id, bot_name=bot.name, enabled=bool(council.enabled), advisors=members,
                       synthesizer=advisor_llm(council, llms, bot_id, session=session),
                       limits=usage_limits.read_state(session=session, bot=bot, discord_user_id=discord_user_id),
                       synthesis_category=followed_category(council))


def followed_category(row: Any) -> str:
    """The LLM category an advisor (or the synthesis) follows as it is, "" when it names its own provider or
    model (a channel's persona then leaves it alone: :meth:`CouncilPlan.in_channel`)."""
    prefix = "synthesis_" if hasattr(row, "synthesis_category") else ""
    if getattr(row, prefix + "provider") or getattr(row, prefix + "model"):
        return ""
    return str(getattr(row, prefix + "category") or LLMCategory.OUTPUT.value)


def describe_llm(llm: EffectiveLLM) -> str:
    """``provider model`` as an admin reads it, with what keeps it from answering."""
    entry = providers.entry(llm.provider)
    text = f"{llm.provider} {llm.model}"
    if entry is not None and entry.key_needed and not llm.api_key and providers.uses_default_url(llm.provider,
                                                                                                 llm.base_url):
        return f"{text} (no API key: set one with llm set)"
    return f"{text} ({llm.unavailable})" if llm.unavailable else text


def describe_llms(bot_id: int, *, session: Session) -> dict[str, str]:
    """``advisor name -> "provider model"`` as the deliberation would use them (and ``""`` for the synthesis);
    the LLMs of :func:`council_plan`, without reading the limits it also reads."""
    council = get_council(bot_id, session=session)
    llms = llm_settings.effective_llms(session=session, bot_id=bot_id)
    out = {a.name: describe_llm(advisor_llm(a, llms, bot_id, session=session))
           for a in advisors(bot_id, session=session) if a.enabled}
    out[""] = describe_llm(advisor_llm(council, llms, bot_id, session=session))
    return out


# --------------------------------------------------------------------------- deliberations


STATUSES = ("running", "done", "failed")
# A deliberation still running this long after it began will not finish: the process that ran it stopped.
UNFINISHED_AFTER_SECONDS = 30 * 60


def save_deliberation(bot_id: int, result: DeliberationResult | dict[str, Any], *, session: Session, asked_by: str = "",
                      platform: str = "discord", cost: float | None = None,
                      deliberation_id: int | None = None) -> Deliberation:
    """Store a deliberation: a new one, or the running one ``deliberation_id`` as it is now. A finished one
    (done, or failed: no synthesis) is stored once with its LLM calls (daily usage included); a running one
    without them."""
    from grobot.core.agents.run_store import records_from

    _bot(bot_id, session)
    data = result.as_dict() if isinstance(result, DeliberationResult) else dict(result)
    status = str(data.get("status") or ("done" if data.get("confidence") is not None and not data.get("error")
                                        else "failed"))
    if status not in STATUSES:
        raise ValidationError(f"status: one of {', '.join(STATUSES)}")
    if deliberation_id is not None:
        row = get_deliberation(deliberation_id, session=session, bot_id=bot_id)
        if row.status != "running":  # finished: stored for good, its calls accounted once
            return row
    else:
        row = Deliberation(bot_id=bot_id)
    records = records_from(data.get("records")) if status != "running" else []
    if cost is None and records:
        cost = estimated_cost(records, session=session)
    row.question = str(data.get("question") or "")[:20_000]
    row.asked_by, row.platform = asked_by[:100], platform[:16]
    row.advisors = [dict(a) for a in data.get("advisors") or []]
    row.synthesis = str(data.get("synthesis") or "")
    row.consensus = str(data.get("consensus") or "")
    row.disagreements = [str(d) for d in data.get("disagreements") or []]
    row.recommendation = str(data.get("recommendation") or "")
    row.confidence = data.get("confidence") if status == "done" else None
    row.tokens_in = sum(r.tokens_in for r in records)
    row.tokens_out = sum(r.tokens_out for r in records)
    row.cost, row.seconds = cost, float(data.get("seconds") or 0.0)
    row.error = str(data.get("error") or "")[:2000]
    row.status = status
    session.add(row)
    session.flush()
    if records:
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None, records=records)
    return row


def drop_deliberation(bot_id: int, deliberation_id: int, *, session: Session) -> None:
    """Remove a deliberation that was stopped while it ran (its LLM calls are accounted with its run)."""
    row = get_deliberation(deliberation_id, session=session, bot_id=bot_id)
    if row.status == "running":
        session.delete(row)
        session.flush()


def deliberation_status(row: Deliberation, *, now: datetime | None = None) -> str:
    """``running``, ``done``, ``failed``, or ``unfinished`` (still running long after it began: its process stopped)."""
    if row.status == "running" and (now or utcnow()) - row.created_at > timedelta(seconds=UNFINISHED_AFTER_SECONDS):
        return "unfinished"
    return row.status


def estimated_cost(records: list[Any], *, session: Session) -> float | None:
    """The estimated cost of some LLM calls (None: no price is known for any of their models)."""
    rows = [{"provider": r.provider, "model": r.model, "tokens_in": r.tokens_in, "tokens_out": r.tokens_out}
            for r in records]
    costs.estimate(rows, session=session)
    known = [row["cost"] for row in rows if row["cost"] is not None]
    return round(sum(known), 8) if known else None


def list_deliberations(bot_id: int, *, session: Session, limit: int = 50, offset: int = 0) -> list[Deliberation]:
    """The bot's deliberations, newest first."""
    return list(session.exec(select(Deliberation).where(Deliberation.bot_id == bot_id)
                             .order_by(col(Deliberation.created_at).desc(), col(Deliberation.id).desc())
                             .offset(offset).limit(limit)).all())


def count_deliberations(bot_id: int, *, session: Session) -> int:
    return int(session.exec(select(func.count()).select_from(Deliberation).where(Deliberation.bot_id == bot_id)).one())


def deliberation_counts(bot_id: int, *, session: Session, now: datetime | None = None) -> dict[str, int]:
    """The bot's deliberations by status: ``done``, ``running`` and ``failed`` (an unfinished one counts as failed)."""
    stale = (now or utcnow()) - timedelta(seconds=UNFINISHED_AFTER_SECONDS)
    status = case(((col(Deliberation.status) == "running") & (col(Deliberation.created_at) < stale), "failed"),
                  else_=col(Deliberation.status)).label("status")
    rows = session.exec(select(status, func.count()).where(Deliberation.bot_id == bot_id).group_by(status)).all()
    counts = {name: 0 for name in STATUSES}
    for name, count in rows:
        counts[str(name)] = counts.get(str(name), 0) + int(count)
    return counts


def get_deliberation(deliberation_id: int, *, session: Session, bot_id: int | None = None) -> Deliberation:
    row = session.get(Deliberation, deliberation_id)
    if row is None or (bot_id is not None and row.bot_id != bot_id):
        raise NotFoundError(f"no deliberation numbered {deliberation_id}" + (f" for bot {bot_id}" if bot_id else ""))
    return row
