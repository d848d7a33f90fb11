"""LLM settings per category (decision / tools / output): global defaults and per-bot overrides."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from sqlalchemy import bindparam
from sqlmodel import Session, select

from grobot.core import security
from grobot.core.errors import ValidationError
from grobot.core.llm import embedded, providers
from grobot.core.llm.effective import EffectiveLLM
from grobot.core.models import AgentMode, Bot, ChannelPersona, LLMCategory, LLMSetting, utcnow
from grobot.core.services import embedded_models
from grobot.core.services.validation import validate
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

PROVIDERS = providers.NAMES  # ollama, openai, anthropic, gemini, mistral, xai, deepseek, groq, openrouter, llamacpp
DEFAULT_MODEL = "llama3.2"


class LLMFields(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    provider: str
    base_url: str = Field(default="", max_length=500)
    model: str = Field(min_length=1, max_length=200)
    context_window: int = Field(default=8192, ge=256, le=10_000_000)
    temperature: float = Field(default=0.7, ge=0, le=2)
    # The prose roles' repetition penalty (None: the provider's default; 1 turns it off), see grobot.core.llm.sampling.
    repeat_penalty: float | None = Field(default=None, ge=1, le=2)
    fallback_model: str | None = Field(default=None, max_length=200)
    supports_images: bool = False

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str) -> str:
        value = value.lower()
        if value not in PROVIDERS:
            raise ValueError(f"unknown provider {value!r}; one of: {', '.join(PROVIDERS)}")
        return value

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str, info: ValidationInfo) -> str:
        if value and info.data.get("provider") == embedded.PROVIDER:
            raise ValueError("must be empty for the llamacpp provider: the bot worker runs the model file itself")
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("model")
    @classmethod
    def _gguf(cls, value: str, info: ValidationInfo) -> str:
        """An embedded model names a GGUF file the worker can load."""
        if value and info.data.get("provider") == embedded.PROVIDER:
            try:
                embedded.model_file(value)
            except embedded.EmbeddedModelError as exc:
                raise ValueError(str(exc)) from None
        return value


class OverrideFields(LLMFields):
    """A bot's override: only the provider is required; what is left out is inherited."""

    model: str | None = Field(default=None, min_length=1, max_length=200, validate_default=True)  # type: ignore[assignment]
    context_window: int | None = Field(default=None, ge=256, le=10_000_000)  # type: ignore[assignment]
    temperature: float | None = Field(default=None, ge=0, le=2)  # type: ignore[assignment]

    @field_validator("model", "context_window", "temperature", "fallback_model", "repeat_penalty", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


class MissingAPIKey(ValidationError):
    """A provider's own service without an API key; ``title`` and ``url`` let the CLI name its own option."""

    def __init__(self, title: str, url: str) -> None:
        super().__init__(f"api_key: required for {title} at {url}")
        self.title, self.url = title, url


def _category(category: str) -> str:
    try:
        return LLMCategory(category).value
    except ValueError:
        raise ValidationError(f"unknown category {category!r}; one of: decision, tools, output") from None


def _find(bot_id: int | None, category: str, *, session: Session) -> LLMSetting | None:
    stmt = select(LLMSetting).where(LLMSetting.category == category)
    stmt = stmt.where(LLMSetting.bot_id.is_(None) if bot_id is None else LLMSetting.bot_id == bot_id)  # type: ignore[union-attr]
    return session.exec(stmt).first()


@dataclass(frozen=True)
class Validated:
    """LLM settings as :func:`set_llm` stores them, checked (nothing written), and what they talk to:
    what "Check connection" tries and Save stores are the same thing."""

    category: str
    bot_id: int | None
    data: LLMFields  # the values to store (a bot's override: only what the admin set)
    provider_inherited: bool  # a bot's override that did not choose a provider: its parent's
    base_url: str  # the server: its own, else the inherited one or the provider's default
    model: str  # its own, else the inherited one
    keeps_key: bool  # the stored API key stays (same provider and server)
    row: LLMSetting  # the stored row, or a new one (not added to the session)


def validate_llm(
    *,
    session: Session,
    category: str,
    bot_id: int | None = None,
    api_key: str | None = None,
    clear_api_key: bool = False,
    **fields: Any,
) -> Validated:
    """Check settings of ``category`` (global when ``bot_id`` is None) as Save stores them: the one validation
    of Save and of "Check connection". Raises :class:`ValidationError` (``field: problem``).

    Without a model, the provider's default model (a bot's override: the inherited one). A bot's override
    without a provider takes its parent's. A provider's own service needs an API key (given now, stored
    before, or inherited). An output model known not to call tools is refused while a bot it would answer
    for uses ``native`` mode.
    """
    category = _category(category)
    provider_inherited = False
    parent: EffectiveLLM | None = None
    if bot_id is None:
        data: LLMFields = validate(LLMFields, with_default_model(fields))
    else:  # only what the admin set: the rest is inherited (see _effective)
        global_row = _find(None, category, session=session)
        parent = parent_of(global_row, category)
        if not str(fields.get("provider") or "").strip():
            provider_inherited = True
            fields = {**fields, "provider": parent.provider}
            if parent.provider == embedded.PROVIDER and str(fields.get("base_url") or "").strip():
                raise ValidationError(
                    "base_url: cannot be used with llamacpp, the provider inherited from "
                    f"{'the global setting' if global_row is not None else 'the built-in default'}: it runs a GGUF "
                    "file on this machine. Choose the provider of the server at this URL (ollama, openai, ...)")
        data = validate(OverrideFields, fields)
        if data.provider == embedded.PROVIDER and not data.model and parent.provider != embedded.PROVIDER:
            raise ValidationError("model: required for the llamacpp provider (the GGUF file to run)")
    entry = providers.entry(data.provider)
    row = _find(bot_id, category, session=session) or LLMSetting(bot_id=bot_id, category=category, provider="")
    # A stored key goes only to the server it was given for: another provider or server drops it.
    keeps_key = row.api_key_enc is not None and not clear_api_key and _same_server(
        session, category, bot_id, (row.provider, row.base_url or ""), (data.provider, data.base_url or ""))
    has_key = bool(api_key) or keeps_key
    base_url = data.base_url or provider_default(data.provider, "base_url")
    if parent is not None:  # the server and key an override inherits count as its own
        base_url = data.base_url or _merged_value(parent, data.provider, "base_url")
        has_key = has_key or _inherited_key(parent, data.provider, base_url) is not None
    if entry is not None and entry.key_needed and not has_key and providers.uses_default_url(data.provider, base_url):
        raise MissingAPIKey(entry.title, entry.base_url)
    model = data.model or (_merged_value(parent, data.provider, "model") if parent is not None else "")
    if category == LLMCategory.OUTPUT.value and providers.supports_tools(data.provider, model) is False:
        native = _native_bots_answered_by(bot_id, session=session)
        if native:
            raise ValidationError(
                f"model: cannot be {data.provider} {model}, which cannot call tools, and {_names(native)} "
                f"use{'s' if len(native) == 1 else ''} native mode (the output model calls the tools): "
                "switch to chain mode first, or choose a model that can call tools")
    return Validated(category=category, bot_id=bot_id, data=data, provider_inherited=provider_inherited,
                     base_url=base_url.rstrip("/") if data.provider != embedded.PROVIDER else "", model=model,
                     keeps_key=keeps_key, row=row)


def set_llm(
    *,
    session: Session,
    category: str,
    bot_id: int | None = None,
    api_key: str | None = None,
    clear_api_key: bool = False,
    **fields: Any,
) -> LLMSetting:
    """Create or replace the settings of ``category`` (global when ``bot_id`` is None), checked by
    :func:`validate_llm`; a bot's override without a provider stores its parent's."""
    checked = validate_llm(session=session, category=category, bot_id=bot_id, api_key=api_key,
                           clear_api_key=clear_api_key, **fields)
    row = checked.row
    for key, value in checked.data.model_dump().items():
        setattr(row, key, value)
    if api_key:
        row.api_key_enc = security.encrypt(api_key.strip())
    elif not checked.keeps_key:
        if row.api_key_enc is not None and not clear_api_key:
            logger.info("The %s LLM of %s moved to another server: its API key was not kept", checked.category,
                        f"bot {bot_id}" if bot_id is not None else "the global default")
        row.api_key_enc = None
    row.updated_at = utcnow()
    session.add(row)
    session.flush()
    return row


def _same_server(session: Session, category: str, bot_id: int | None, before: tuple[str, str],
                 after: tuple[str, str]) -> bool:
    """Whether two ``(provider, base_url)`` settings talk to the same server with the same provider."""
    (old_provider, old_url), (new_provider, new_url) = before, after
    if old_provider.strip().lower() != new_provider.strip().lower():
        return False
    return (server_url(session=session, category=category, provider=old_provider, base_url=old_url, bot_id=bot_id)
            == server_url(session=session, category=category, provider=new_provider, base_url=new_url, bot_id=bot_id))


def server_url(*, session: Session, category: str, provider: str, base_url: str = "", bot_id: int | None = None) -> str:
    """The URL settings of ``provider`` with ``base_url`` talk to: their own, else (a bot's override)
    the global default's when it is the same provider, else the provider's default."""
    if base_url.strip():
        return base_url.strip().rstrip("/")
    if bot_id is not None:
        return _merged_value(parent_of(_find(None, category, session=session), category), provider.strip().lower(),
                             "base_url")
    return provider_default(provider.strip().lower(), "base_url")


def with_default_model(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with the provider's default model when they name none."""
    entry = providers.entry(str(fields.get("provider") or ""))
    if entry is not None and entry.default_model and not str(fields.get("model") or "").strip():
        return {**fields, "model": entry.default_model}
    return fields


def _native_bots_answered_by(bot_id: int | None, *, session: Session) -> list[str]:
    """The native-mode bots whose output model the output setting of ``bot_id`` (None: global) is."""
    native = select(Bot.name).where(Bot.agent_mode == AgentMode.NATIVE.value)
    if bot_id is not None:
        return list(session.exec(native.where(Bot.id == bot_id)).all())
    overridden = select(LLMSetting.bot_id).where(LLMSetting.category == LLMCategory.OUTPUT.value,
                                                 LLMSetting.bot_id.is_not(None))  # type: ignore[union-attr]
    return list(session.exec(native.where(Bot.id.not_in(overridden))).all())  # type: ignore[union-attr]


def _names(bots: list[str]) -> str:
    shown = ", ".join(repr(n) for n in bots[:5]) + (f" and {len(bots) - 5} more" if len(bots) > 5 else "")
    return f"bot{'s' if len(bots) > 1 else ''} {shown}"


def native_mode_refusal(*, session: Session, bot_id: int | None) -> str | None:
    """Why a bot (None: a new bot, on the global default) cannot use native mode, or None when it can.

    Native mode needs an output model that can call tools; a model whose support is known only at
    run time (Ollama, OpenRouter, an embedded model) is allowed, and its server says so if not.
    """
    llm = effective_llm(session=session, category=LLMCategory.OUTPUT.value, bot_id=bot_id)
    if providers.supports_tools(llm.provider, llm.model) is False:
        return (f"native mode needs an output model that can call tools, and {llm.provider} {llm.model} cannot: "
                "keep chain mode, or set an output model that can call tools first")
    return None


def clear_override(*, session: Session, bot_id: int, category: str) -> bool:
    """Remove a bot's override of ``category``; the global default applies again."""
    row = _find(bot_id, _category(category), session=session)
    if row is None:
        return False
    session.delete(row)
    session.flush()
    return True


def builtin_is_embedded() -> bool:
    """With no LLM configured: the embedded demo model (True) or Ollama at ``OLLAMA_HOST`` (False)."""
    settings = get_settings()
    return not settings.ollama_host_set and settings.embedded_model and embedded.demo_available()


def _builtin(category: str) -> EffectiveLLM:
    temperature = 0.2 if category != LLMCategory.OUTPUT.value else 0.7
    if builtin_is_embedded():
        return EffectiveLLM(
            category=category, provider=embedded.PROVIDER, base_url="", model=embedded.DEMO_MODEL,
            context_window=embedded.DEMO_CONTEXT, temperature=temperature, api_key=None, fallback_model=None,
            supports_images=False, source="builtin")
    return EffectiveLLM(
        category=category,
        provider="ollama",
        base_url=get_settings().ollama_host,
        model=DEFAULT_MODEL,
        context_window=8192,
        temperature=temperature,
        api_key=None,
        fallback_model=None,
        supports_images=False,
        source="builtin",
    )


def _resolved(llms: dict[str, EffectiveLLM], session: Session) -> dict[str, EffectiveLLM]:
    """Embedded models' settings with the URL of the server that runs each (or why none does)."""
    wanted = {llm.model: llm.context_window for llm in llms.values() if llm.provider == embedded.PROVIDER}
    if not wanted:
        return llms
    servers = embedded_models.lookup(wanted, session=session)
    result = {}
    for category, llm in llms.items():
        if llm.provider == embedded.PROVIDER:
            reason = embedded.unavailable_reason(servers[llm.model])
            llm = replace(llm, base_url="" if reason else servers[llm.model].url, unavailable=reason)
        result[category] = llm
    return result


def provider_default(provider: str, name: str) -> Any:
    """A provider's own default of ``name`` (base_url or model)."""
    entry = providers.entry(provider)
    if name == "base_url":
        return get_settings().ollama_host if provider == "ollama" else (entry.base_url if entry else "")
    return (entry.default_model if entry else "") or DEFAULT_MODEL


def parent_of(global_row: Any, category: str) -> EffectiveLLM:
    """What a bot's override of ``category`` inherits from: the global default, else the built-in one."""
    return _effective(global_row, "global") if global_row is not None else _builtin(category)


def _merged_value(parent: EffectiveLLM, provider: str, name: str) -> Any:
    """What a bot's override of ``provider`` inherits for ``name`` from ``parent`` (the global default or
    the built-in one): the server and model only from a parent of the same provider."""
    if name in ("base_url", "model") and parent.provider != provider:
        return provider_default(provider, name)
    return getattr(parent, name)


def _inherited_key(parent: EffectiveLLM, provider: str, base_url: str) -> str | None:
    """The parent's API key, for an override that talks to the same server."""
    if parent.provider == provider and base_url.rstrip("/") == parent.base_url.rstrip("/"):
        return parent.api_key
    return None


def _effective(row: Any, source: str, parent: EffectiveLLM | None = None) -> EffectiveLLM:
    """From an :class:`LLMSetting` or a row of its columns; a bot's row inherits what it leaves out
    from ``parent``."""
    def value(name: str, fallback: Any) -> Any:
        own = getattr(row, name)
        if own is not None and own != "":
            return own
        return _merged_value(parent, row.provider, name) if parent is not None else fallback

    base_url = value("base_url", provider_default(row.provider, "base_url"))
    api_key = security.decrypt_optional(row.api_key_enc)
    if api_key is None and parent is not None:
        api_key = _inherited_key(parent, row.provider, base_url)
    return EffectiveLLM(
        category=row.category,
        provider=row.provider,
        base_url=base_url,
        model=value("model", provider_default(row.provider, "model")),
        context_window=value("context_window", 8192),
        temperature=value("temperature", 0.7),
        repeat_penalty=value("repeat_penalty", None),
        api_key=api_key,
        fallback_model=row.fallback_model,
        supports_images=row.supports_images,
        source=source,
    )


def wanted_embedded_models(*, session: Session) -> dict[str, int]:
    """Every embedded model the settings use, with the largest context window asked of it (for the worker)."""
    rows = session.exec(select(LLMSetting).where(LLMSetting.provider == embedded.PROVIDER)).all()
    parents = global_rows(session=session)
    wanted: dict[str, int] = {}
    for row in rows:  # a bot's override may inherit its model or context window (from a llamacpp parent)
        llm = _effective(row, "bot", parent_of(parents.get(row.category), row.category)) if row.bot_id is not None \
            else _effective(row, "global")
        wanted[str(llm.model)] = max(wanted.get(str(llm.model), 0), int(llm.context_window))
    for persona in session.exec(select(ChannelPersona)).all():  # a channel's override of an embedded model
        bot_llms = _unresolved_llms(session, persona.bot_id)
        for category, fields in (persona.llms or {}).items():
            if category in bot_llms and fields:
                llm = _effective(_channel_row(category, fields, bot_llms[category]), "channel", bot_llms[category])
                if llm.provider == embedded.PROVIDER:
                    wanted[str(llm.model)] = max(wanted.get(str(llm.model), 0), int(llm.context_window))
    if builtin_is_embedded():
        configured = set(session.exec(select(LLMSetting.category).where(LLMSetting.bot_id.is_(None))).all())  # type: ignore[union-attr]
        if any(c.value not in configured for c in LLMCategory):
            wanted[embedded.DEMO_MODEL] = max(wanted.get(embedded.DEMO_MODEL, 0), embedded.DEMO_CONTEXT)
    return wanted


def effective_llm(*, session: Session, category: str, bot_id: int | None = None) -> EffectiveLLM:
    """The bot's override of ``category``, else the global default, else Ollama at ``OLLAMA_HOST``."""
    category = _category(category)
    row = _find(bot_id, category, session=session) if bot_id is not None else None
    global_row = _find(None, category, session=session)
    parent = parent_of(global_row, category)
    llm = _effective(row, "bot", parent) if row is not None else parent
    return _resolved({category: llm}, session)[category]


def global_rows(*, session: Session) -> dict[str, LLMSetting]:
    """The stored global defaults by category, as saved (an empty base URL stays empty)."""
    rows = session.exec(select(LLMSetting).where(LLMSetting.bot_id.is_(None))).all()  # type: ignore[union-attr]
    return {row.category: row for row in rows}


# Read for every message a bot answers: built once, and rows rather than ORM objects.
_GLOBAL_AND_BOT_ROWS = select(*LLMSetting.__table__.columns).where(  # type: ignore[attr-defined]
    (LLMSetting.bot_id.is_(None)) | (LLMSetting.bot_id == bindparam("bot_id"))  # type: ignore[union-attr]
)


def effective_llms(*, session: Session, bot_id: int | None = None, channel: dict[str, dict[str, Any]] | None = None,
                   own: dict[str, EffectiveLLM] | None = None) -> dict[str, EffectiveLLM]:
    """The effective settings of every category, in one query; ``channel``: a channel's overrides by
    category (:func:`validate_channel_llm`), each inheriting what it leaves out from the bot's;
    ``own``: the bot's, as :func:`bot_llms` read them (then no query but an embedded model's server)."""
    result = dict(own) if own is not None else _unresolved_llms(session, bot_id)
    for category, fields in (channel or {}).items():
        if category in result and fields:
            result[category] = _effective(_channel_row(category, fields, result[category]), "channel", result[category])
    return _resolved(result, session)


def bot_llms(*, session: Session, bot_id: int | None) -> dict[str, EffectiveLLM]:
    """The bot's own settings of every category (its overrides over the global defaults), before an
    embedded model's server is looked up (what :func:`effective_llms` starts from, in one query)."""
    return _unresolved_llms(session, bot_id)


def _unresolved_llms(session: Session, bot_id: int | None) -> dict[str, EffectiveLLM]:
    rows = session.connection().execute(_GLOBAL_AND_BOT_ROWS, {"bot_id": bot_id}).all()
    result: dict[str, EffectiveLLM] = {}
    for category in LLMCategory:
        bot_row = next((r for r in rows if r.category == category.value and r.bot_id == bot_id and bot_id), None)
        global_row = next((r for r in rows if r.category == category.value and r.bot_id is None), None)
        parent = parent_of(global_row, category.value)
        result[category.value] = _effective(bot_row, "bot", parent) if bot_row is not None else parent
    return result


CHANNEL_FIELDS = ("provider", "base_url", "model", "context_window", "temperature")


def _channel_row(category: str, fields: dict[str, Any], parent: EffectiveLLM) -> Any:
    """A channel's override as a row :func:`_effective` reads: no API key of its own (the bot's, for the
    same server), the bot's provider when it names none."""
    from types import SimpleNamespace

    provider = fields.get("provider") or parent.provider
    same = provider == parent.provider and not fields.get("model")
    return SimpleNamespace(category=category, provider=provider, base_url=fields.get("base_url") or "",
                           model=fields.get("model"), context_window=fields.get("context_window"),
                           temperature=fields.get("temperature"), repeat_penalty=None, api_key_enc=None,
                           fallback_model=parent.fallback_model if same else None,
                           supports_images=parent.supports_images if same else False)


def validate_channel_llm(*, session: Session, bot_id: int, category: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A channel's override of ``category`` checked as the bot's own LLM form checks it, with the bot's
    settings as its parent; returns what to store (only what was set; {}: nothing, the bot's own).
    Raises :class:`ValidationError` (``field: problem``)."""
    category = _category(category)
    unknown = set(fields) - set(CHANNEL_FIELDS)
    if unknown:
        raise ValidationError(f"{sorted(unknown)[0]}: not a channel setting; one of: {', '.join(CHANNEL_FIELDS)}")
    given = {k: v for k, v in fields.items() if v is not None and not (isinstance(v, str) and not v.strip())}
    if not given:
        return {}
    parent = _unresolved_llms(session, bot_id)[category]
    full = {**given, "provider": str(given.get("provider") or parent.provider)}
    if full["provider"].strip().lower() == embedded.PROVIDER and str(full.get("base_url") or "").strip():
        raise ValidationError("base_url: cannot be used with llamacpp: it runs a GGUF file on this machine")
    data = validate(OverrideFields, full)
    if data.provider == embedded.PROVIDER and not data.model and parent.provider != embedded.PROVIDER:
        raise ValidationError("model: required for the llamacpp provider (the GGUF file to run)")
    entry = providers.entry(data.provider)
    base_url = data.base_url or _merged_value(parent, data.provider, "base_url")
    if (entry is not None and entry.key_needed and _inherited_key(parent, data.provider, base_url) is None
            and providers.uses_default_url(data.provider, base_url)):
        raise ValidationError(f"provider: {entry.title} needs an API key, and a channel uses the bot's: set "
                              f"{data.provider} as the bot's own {category} LLM first")
    model = data.model or _merged_value(parent, data.provider, "model")
    if category == LLMCategory.OUTPUT.value and providers.supports_tools(data.provider, model) is False \
            and _native_bots_answered_by(bot_id, session=session):
        raise ValidationError(f"model: cannot be {data.provider} {model}, which cannot call tools, and the bot uses "
                              "native mode (the output model calls the tools): choose a model that can call tools")
    stored = data.model_dump(include=set(CHANNEL_FIELDS))
    if not str(given.get("provider") or "").strip():
        stored["provider"] = ""
    return {k: v for k, v in stored.items() if v is not None and v != ""}


async def list_server_models(provider: str, base_url: str = "", api_key: str | None = None) -> list[str]:
    """The models an LLM server offers (for the web app's model picker); raises a one-line LLMError."""
    from grobot.core.llm.registry import get_provider

    if provider.strip().lower() == embedded.PROVIDER:
        return embedded.available_models()
    provider = validate(LLMFields, {"provider": provider, "model": "x"}).provider
    if not base_url and provider == "ollama":
        base_url = get_settings().ollama_host
    return await get_provider(provider, base_url.rstrip("/"), api_key).list_models()


async def list_models_for(*, category: str, bot_id: int | None = None) -> list[str]:
    """The models offered by the server a category uses (the bot's override or the global default)."""
    from grobot.core.db import session_scope

    with session_scope(readonly=True) as session:
        llm = effective_llm(session=session, category=category, bot_id=bot_id)
    return await list_server_models(llm.provider, llm.base_url, llm.api_key)
