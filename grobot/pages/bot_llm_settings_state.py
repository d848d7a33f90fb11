"""The LLM cards of a bot's Settings tab: per category, what the bot's override stores and, per value, what it
inherits and from where (read through the services; the cards' events are the tab's, :mod:`grobot.pages.bot_settings_state`;
the view is in :mod:`grobot.pages.bot_llm_settings`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from grobot.core.models import Bot, LLMCategory
from grobot.core.services import llm_settings, llm_sources
from grobot.state.llm_check import INHERIT

CATEGORY_HELP = {
    "decision": "Small, fast calls: whether to answer, what to do next.",
    "tools": "Choosing tools and extracting their arguments (JSON).",
    "output": "The answer the user reads, streamed.",
}


SOURCE_LABELS = {"bot": "Set for this bot", "global": "Global default", "builtin": "Built-in default"}


@dataclass
class LLMRow:
    """One LLM category of the bot: the values its override stores ("" = not set, inherited) and, for each
    provider the card may choose, what each empty value inherits and from where (the API key only as set /
    not set)."""

    category: str
    help: str
    source: str  # bot | global | builtin
    provider: str  # the override's provider, else "inherit" (the parent's, shown as "Inherit (X)")
    provider_label: str  # "Inherit (ollama)"
    base_url: str
    model: str
    context_window: str
    temperature: str
    repeat_penalty: str
    fallback_model: str
    supports_images: bool
    api_key_set: bool  # the bot's own key
    hints: dict[str, str] = field(default_factory=dict)  # per value set for the bot: "Set for this bot."
    # Per provider ("inherit": the parent's), per value: what an empty field takes ("Inherit (X)", its
    # placeholder) and from where ("From the global setting.", under it).
    inherits: dict[str, dict[str, str]] = field(default_factory=dict)
    sources: dict[str, dict[str, str]] = field(default_factory=dict)


# Where an inherited value comes from, as the line under its field says it.
_FROM = {llm_sources.GLOBAL: "the global setting", llm_sources.ENVIRONMENT: "the environment variable OLLAMA_HOST",
         llm_sources.PROVIDER_DEFAULT: "the provider's default", llm_sources.DEFAULT: "the built-in default"}


def inherit_label(source: llm_sources.FieldSource) -> tuple[str, str]:
    """What an empty field shows: ``("Inherit (llama3.2)", "From the global setting.")``; a value with nothing
    to inherit says why."""
    if not source.inherited:
        return "None", ("The bot worker runs the model file." if source.source == "the bot worker" else "")
    return f"Inherit ({source.inherited})", f"From {_FROM.get(source.source, source.source)}."


def _inherits(category: str, parent_provider: str, global_row: Any) -> tuple[dict[str, dict[str, str]],
                                                                              dict[str, dict[str, str]]]:
    """Per provider the card may choose ("inherit": the parent's), per value, its "Inherit (X)" placeholder
    and where X comes from."""
    labels = {provider: {name: inherit_label(source)
                         for name, source in llm_sources.inherited(category, provider, global_row).items()}
              for provider in llm_settings.PROVIDERS}
    labels = {INHERIT: labels.get(parent_provider, {}), **labels}
    return ({p: {name: text for name, (text, _) in fields.items()} for p, fields in labels.items()},
            {p: {name: where for name, (_, where) in fields.items()} for p, fields in labels.items()})


def llm_rows(session: Session, bot: Bot, llms: dict[str, Any]) -> list[LLMRow]:
    views = llm_sources.override_views(session=session, bot_id=bot.id or 0)
    parents = llm_settings.global_rows(session=session)
    rows = []
    for c in LLMCategory:
        llm, view = llms[c.value], views[c.value]
        own_key = view.own_key
        hints = {name: "Set for this bot." if view.fields[name].own else "" for name in llm_sources.FIELDS}
        hints["provider"] = "Set for this bot." if view.overridden else ""
        if llm.api_key is not None and not own_key:
            hints["api_key"] = "Empty: the key of the global setting (same server)."
        provider = view.provider
        inherits, sources = _inherits(c.value, provider.inherited, parents.get(c.value))
        sources[INHERIT]["provider"] = f"From {_FROM[provider.source]}." if provider.source in _FROM else ""
        rows.append(LLMRow(
            category=c.value, help=CATEGORY_HELP[c.value], source=llm.source,
            provider=provider.own or INHERIT, provider_label=f"Inherit ({provider.inherited})",
            base_url=view.fields["base_url"].own, model=view.fields["model"].own,
            context_window=view.fields["context_window"].own, temperature=view.fields["temperature"].own,
            repeat_penalty=view.fields["repeat_penalty"].own,
            fallback_model=(llm.fallback_model or "") if view.overridden else "",
            supports_images=llm.supports_images if view.overridden else False,
            api_key_set=own_key, hints=hints, inherits=inherits, sources=sources))
    return rows
