"""Where each value of a bot's LLM settings comes from: set for the bot, or inherited (and from where).

A bot's override stores only what the admin set; the rest is inherited from the global default
(``global setting``), the ``OLLAMA_HOST`` environment variable, the provider's own default or
GroBot's built-in default. The web app shows it per value, next to the field.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlmodel import Session, select

from grobot.core.llm import embedded, sampling
from grobot.core.models import LLMCategory, LLMSetting
from grobot.core.services import llm_settings
from grobot.core.settings import get_settings

GLOBAL = "global setting"
ENVIRONMENT = "environment variable OLLAMA_HOST"
PROVIDER_DEFAULT = "provider default"
DEFAULT = "default"
FIELDS = ("base_url", "model", "context_window", "temperature", "repeat_penalty")


@dataclass(frozen=True)
class FieldSource:
    """One value: as the bot's override stores it ("" = not set) and what applies when it is not set."""

    own: str
    inherited: str
    source: str


@dataclass(frozen=True)
class OverrideView:
    """One category of a bot: whether it has an override, its provider and its values with their sources."""

    category: str
    overridden: bool
    provider: FieldSource
    fields: dict[str, FieldSource]
    own_key: bool = False  # the override stores an API key of its own


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def url_source(provider: str) -> str:
    """Where the URL of a setting without a base URL of its own comes from."""
    if provider == "ollama":
        return ENVIRONMENT if get_settings().ollama_host_set else DEFAULT
    if provider == embedded.PROVIDER:
        return "the bot worker"
    return PROVIDER_DEFAULT


def inherited(category: str, provider: str, global_row: LLMSetting | None) -> dict[str, FieldSource]:
    """What an override of ``provider`` without values of its own inherits, per value, and from where
    (``own`` empty): the server and model only from a parent of the same provider."""
    parent = llm_settings.parent_of(global_row, category)
    parent_source = GLOBAL if global_row is not None else DEFAULT
    same = parent.provider == provider
    fields: dict[str, FieldSource] = {}
    for name in FIELDS:
        if name == "base_url":
            set_globally = same and global_row is not None and bool(global_row.base_url)
            value = parent.base_url if same else llm_settings.provider_default(provider, name)
            source = GLOBAL if set_globally else url_source(provider)
        elif name == "model" and not same:
            value, source = llm_settings.provider_default(provider, name), PROVIDER_DEFAULT
        else:
            value, source = _text(getattr(parent, name)), parent_source
        if name == "repeat_penalty" and not value:  # unset all the way: the provider's default
            value, source = sampling.default_text(provider), DEFAULT if provider == embedded.PROVIDER else PROVIDER_DEFAULT
        fields[name] = FieldSource(own="", inherited=_text(value), source=source)
    return fields


def _view(category: str, row: LLMSetting | None, global_row: LLMSetting | None) -> OverrideView:
    parent = llm_settings.parent_of(global_row, category)
    provider = row.provider if row is not None else parent.provider
    fields = {name: replace(source, own=_text(getattr(row, name)) if row is not None else "")
              for name, source in inherited(category, provider, global_row).items()}
    return OverrideView(category=category, overridden=row is not None,
                        provider=FieldSource(own=row.provider if row is not None else "", inherited=parent.provider,
                                             source=GLOBAL if global_row is not None else DEFAULT),
                        fields=fields, own_key=row is not None and row.api_key_enc is not None)


def override_views(*, session: Session, bot_id: int) -> dict[str, OverrideView]:
    """Every category of the bot, with the source of each value (one query)."""
    rows = session.exec(select(LLMSetting).where(
        (LLMSetting.bot_id.is_(None)) | (LLMSetting.bot_id == bot_id))).all()  # type: ignore[union-attr]
    own = {r.category: r for r in rows if r.bot_id == bot_id}
    globals_ = {r.category: r for r in rows if r.bot_id is None}
    return {c.value: _view(c.value, own.get(c.value), globals_.get(c.value)) for c in LLMCategory}
