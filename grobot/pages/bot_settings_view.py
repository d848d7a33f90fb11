"""What a bot's Settings tab shows, read from the services in one transaction: the bot's fields, its
LLM categories (what its override stores and, per value, what it inherits and from where), its MCP
servers and today's usage against its limits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from grobot.core.agents.types import ACCESS_FIELDS
from grobot.core.models import Bot, LLMCategory
from grobot.core.services import (
    access,
    app_settings,
    channel_personas,
    discord_roles,
    discord_users,
    llm_settings,
    llm_sources,
    mcp_servers,
    usage,
)
from grobot.core.services import bots as bots_service
from grobot.core.services.budgets import amount_text
from grobot.pages.bot_mcp_tools import McpToolRow, tool_rows
from grobot.state.llm_check import INHERIT

LINE_FIELDS = ("moderation_words", "moderation_patterns")  # one item per line in the form
TEXT_FIELDS = ("name", "personality", "agent_mode", "allowed_channel_ids", "always_on_channel_ids", "keywords",
               "max_tool_rounds", "user_cooldown_seconds", "max_concurrent_runs", "web_search_url") \
    + bots_service.LIMIT_FIELDS + bots_service.BUDGET_FIELDS + ACCESS_FIELDS + LINE_FIELDS + ("moderation_action",)
FLAG_FIELDS = ("reply_to_mentions", "reply_in_dms", "reply_to_replies", "reply_when_relevant",
               "message_content_intent", "members_intent", "web_search", "moderation_ask_model")
FIELD_LABELS = {
    "name": "Name", "personality": "Personality", "agent_mode": "Agent mode", "allowed_channel_ids": "Allowed channels",
    "always_on_channel_ids": "Always-on channels", "keywords": "Keywords", "max_tool_rounds": "Max tool rounds",
    "user_cooldown_seconds": "User cooldown", "max_concurrent_runs": "Concurrent runs",
    "daily_token_limit": "Tokens per day", "daily_call_limit": "LLM calls per day",
    "user_daily_message_limit": "Messages per user per day",
    "daily_cost_limit": "Cost per day", "monthly_token_limit": "Tokens per month",
    "monthly_call_limit": "LLM calls per month", "monthly_cost_limit": "Cost per month",
    "web_search_url": "SearXNG address",
    "allowed_user_ids": "Allowed users", "blocked_user_ids": "Blocked users", "allowed_role_ids": "Allowed roles",
    "blocked_role_ids": "Blocked roles", "moderation_words": "Blocked words", "moderation_patterns": "Blocked patterns",
    "moderation_action": "When something matches", "moderation_ask_model": "Ask the decision model",
}
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


@dataclass
class McpRow:
    """An MCP server and how this bot may use it."""

    server_id: int
    name: str
    transport: str
    server_enabled: bool
    linked: bool
    allowed_tools: str
    timeout: str
    known_tools: str
    last_error: str
    tools: list[McpToolRow] = field(default_factory=list)  # per tool: fallback and read/write


@dataclass
class TodayUsage:
    """The bot's usage today (UTC) against its effective limits, as the "Today" panel shows it."""

    day: str = ""
    tokens: str = "0"
    token_limit: str = "unlimited"
    token_percent: int = 0
    calls: str = "0"
    call_limit: str = "unlimited"
    call_percent: int = 0
    user_message_limit: str = "unlimited"
    users_at_limit: int = 0
    over_limit: bool = False


@dataclass
class AccessChoices:
    """Who the access lists may name, as the bot has seen them: its users (the Knowledge Base's) and
    the roles of its guilds, each ``[id, label]``; and the name of every id on its lists."""

    users: list[list[str]] = field(default_factory=list)
    roles: list[list[str]] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)


@dataclass
class ChannelChoices:
    """The bot's channel personas, each ``{"channel_id", "label", "personality", "models", "<category>_<field>"}``
    (the page's rows and its form's stored values), and the channels it has seen, each ``[id, "#name"]``."""

    personas: list[dict[str, str]] = field(default_factory=list)
    seen: list[list[str]] = field(default_factory=list)


@dataclass
class SettingsView:
    form: dict[str, str]
    flags: dict[str, bool]
    token_set: bool
    llms: list[LLMRow]
    mcp: list[McpRow]
    limit_defaults: dict[str, str]
    today: TodayUsage
    web_search_default: str = ""  # where the bot searches without an address of its own, in words
    access: AccessChoices = field(default_factory=AccessChoices)
    channels: ChannelChoices = field(default_factory=ChannelChoices)
    context_window: int = 0  # of the output model, which reads the personality
    context_model: str = ""  # "the output model (llama3.2)"


def _limit_text(value: float) -> str:
    """A limit as the page shows it: ``5,000``, ``12.50`` (a cost), or ``unlimited`` (0)."""
    return amount_text(value) if value else "unlimited"


def _percent(used: int, limit: int) -> int:
    return min(100, round(used * 100 / limit)) if limit else 0


def _today(session: Session, bot: Bot) -> tuple[TodayUsage, dict[str, str]]:
    """Today's usage of the bot and the global default of each limit field (as text)."""
    day = usage.bot_usage(bot.id or 0, session=session, days=1, top_users=0).today
    defaults = app_settings.get_values(app_settings.LIMIT_KEYS + app_settings.BUDGET_KEYS, session=session)
    today = TodayUsage(day=day.day, tokens=f"{day.tokens:,}", token_limit=_limit_text(day.token_limit),
                       token_percent=_percent(day.tokens, day.token_limit), calls=f"{day.calls:,}",
                       call_limit=_limit_text(day.call_limit), call_percent=_percent(day.calls, day.call_limit),
                       user_message_limit=_limit_text(day.user_message_limit), users_at_limit=day.users_at_limit,
                       over_limit=day.over_limit)
    return today, {name: _limit_text(float(defaults.get(name, 0) or 0))
                   for name in bots_service.LIMIT_FIELDS + bots_service.BUDGET_FIELDS}


def _as_text(value: Any, name: str = "") -> str:
    if isinstance(value, list):
        return ("\n" if name in LINE_FIELDS else ", ").join(str(item) for item in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


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


def _llm_rows(session: Session, bot: Bot, llms: dict[str, Any]) -> list[LLMRow]:
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


def settings_view(session: Session, bot: Bot) -> SettingsView:
    links = {link.mcp_server_id: link for link, _ in mcp_servers.bot_links(session=session, bot_id=bot.id or 0,
                                                                           enabled_only=False)}
    mcp = []
    for server in mcp_servers.list_servers(session=session):
        link = links.get(server.id)
        mcp.append(McpRow(
            server_id=server.id or 0, name=server.name, transport=server.transport, server_enabled=server.enabled,
            linked=bool(link and link.enabled), allowed_tools=", ".join(link.allowed_tools or []) if link else "",
            timeout=_as_text(link.timeout_seconds if link else 30.0),
            known_tools=", ".join(str(t.get("name")) for t in (server.tools_cache or []) if t.get("name")),
            last_error=server.last_error or "", tools=tool_rows(server, link),
        ))
    today, limit_defaults = _today(session, bot)
    llms = llm_settings.effective_llms(session=session, bot_id=bot.id)
    output = llms[LLMCategory.OUTPUT.value]
    return SettingsView(
        form={field: _as_text(getattr(bot, field), field) for field in TEXT_FIELDS},
        flags={field: bool(getattr(bot, field)) for field in FLAG_FIELDS},
        token_set=bot.discord_token_enc is not None,
        llms=_llm_rows(session, bot, llms),
        mcp=mcp,
        limit_defaults=limit_defaults,
        today=today,
        web_search_default=search_engine(str(app_settings.get_value("web_search_url", session=session))),
        access=access_choices(session, bot),
        channels=channel_choices(session, bot),
        context_window=int(output.context_window or 0),
        context_model=f"the output model ({output.model})" if output.model else "the output model",
    )


def search_engine(searxng_url: str) -> str:
    """Where web_search searches, in words."""
    return f"SearXNG at {searxng_url}" if searxng_url else "DuckDuckGo and other engines, no key needed"


def channel_choices(session: Session, bot: Bot) -> ChannelChoices:
    """The bot's channel personas (by channel name) and the channels it has seen."""
    rows = []
    for persona in channel_personas.personas(bot, session=session):
        row = {"channel_id": persona.channel_id, "label": f"#{persona.name}" if persona.name else persona.channel_id,
               "personality": persona.personality, "models": persona.models()}
        for category in channel_personas.CATEGORIES:
            fields = persona.llms.get(category) or {}
            row.update({f"{category}_{name}": str(fields.get(name, "")) for name in ("provider", "model", "temperature")})
        rows.append(row)
    seen = channel_personas.known_channels(session=session, bot_id=bot.id or 0)
    return ChannelChoices(personas=rows, seen=[[cid, f"#{name}" if name else cid] for cid, name in seen.items()])


USER_CHOICES = 200  # the users a list offers to add (the latest the bot has seen)


def access_choices(session: Session, bot: Bot) -> AccessChoices:
    """The users and roles the bot has seen, and the names of those on its lists."""
    users = discord_users.known_users(session=session, bot_id=bot.id or 0, limit=USER_CHOICES)
    roles = discord_roles.known_roles(session=session, bot_id=bot.id or 0)
    guilds = {r.guild_id for r in roles}
    names = {entry.id: entry.name for entries in access.access_lists(bot, session=session).values()
             for entry in entries if entry.name}
    return AccessChoices(
        users=[[u.discord_user_id, u.display_name or u.discord_user_id] for u in users],
        roles=[[r.role_id, r.name + (f" ({r.guild_name})" if len(guilds) > 1 else "")] for r in roles],
        names=names)
