"""The state of a bot's Settings tab (admins): everything the CLI's ``bot set``, ``llm set`` and
``bot mcp`` can change, the Discord token ("set" / "not set" and a replace field) and deleting the bot.

The rules live in the services (``bots``, ``llm_settings``, ``mcp_servers``): this page sends
what the admin typed and shows the service's error next to the form, keeping what was typed.
Secrets (the token, API keys) are read from the submitted form and never kept in a state var.
What saves what: the bar at the bottom of the bot's own fields (General to Discord connection),
and each card after it on its own (token, each LLM category, each MCP server); a card's inputs
start over from the stored values only after its own save.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import AppUser, Bot, LLMCategory
from grobot.core.services import bots as bots_service
from grobot.core.services import app_settings, llm_settings, llm_sources, mcp_servers, usage
from grobot.core.services.users import NotSignedIn
from grobot.pages.bot_mcp_tools import McpToolRow, settings_from_form, tool_rows
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message
from grobot.state.llm_check import Typed, check_typed, key_refusal

logger = logging.getLogger(__name__)

TEXT_FIELDS = ("name", "personality", "agent_mode", "allowed_channel_ids", "always_on_channel_ids", "keywords",
               "max_tool_rounds", "user_cooldown_seconds", "max_concurrent_runs") + bots_service.LIMIT_FIELDS
FLAG_FIELDS = ("reply_to_mentions", "reply_in_dms", "reply_to_replies", "reply_when_relevant",
               "message_content_intent", "members_intent")
FIELD_LABELS = {
    "name": "Name", "personality": "Personality", "agent_mode": "Agent mode", "allowed_channel_ids": "Allowed channels",
    "always_on_channel_ids": "Always-on channels", "keywords": "Keywords", "max_tool_rounds": "Max tool rounds",
    "user_cooldown_seconds": "User cooldown", "max_concurrent_runs": "Concurrent runs",
    "daily_token_limit": "Tokens per day", "daily_call_limit": "LLM calls per day",
    "user_daily_message_limit": "Messages per user per day",
}
CATEGORY_HELP = {
    "decision": "Small, fast calls: whether to answer, what to do next.",
    "tools": "Choosing tools and extracting their arguments (JSON).",
    "output": "The answer the user reads, streamed.",
}
SOURCE_LABELS = {"bot": "Set for this bot", "global": "Global default", "builtin": "Built-in default"}


@dataclass
class LLMRow:
    """One LLM category of the bot: the values its override stores ("" = not set, inherited) and, per
    value, what it inherits and from where (the API key only as set / not set)."""

    category: str
    help: str
    source: str  # bot | global | builtin
    provider: str  # the override's provider, else the inherited one (preselected)
    base_url: str
    model: str
    context_window: str
    temperature: str
    fallback_model: str
    supports_images: bool
    api_key_set: bool  # the bot's own key
    hints: dict[str, str] = field(default_factory=dict)  # per value: "Inherited: X (from where)"


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
class SettingsView:
    form: dict[str, str]
    flags: dict[str, bool]
    token_set: bool
    llms: list[LLMRow]
    mcp: list[McpRow]
    limit_defaults: dict[str, str]
    today: TodayUsage


def _limit_text(value: int) -> str:
    return f"{value:,}" if value else "unlimited"


def _percent(used: int, limit: int) -> int:
    return min(100, round(used * 100 / limit)) if limit else 0


def _today(session: Session, bot: Bot) -> tuple[TodayUsage, dict[str, str]]:
    """Today's usage of the bot and the global default of each limit field (as text)."""
    day = usage.bot_usage(bot.id or 0, session=session, days=1, top_users=0).today
    defaults = app_settings.get_values(app_settings.LIMIT_KEYS, session=session)
    today = TodayUsage(day=day.day, tokens=f"{day.tokens:,}", token_limit=_limit_text(day.token_limit),
                       token_percent=_percent(day.tokens, day.token_limit), calls=f"{day.calls:,}",
                       call_limit=_limit_text(day.call_limit), call_percent=_percent(day.calls, day.call_limit),
                       user_message_limit=_limit_text(day.user_message_limit), users_at_limit=day.users_at_limit,
                       over_limit=day.over_limit)
    return today, {name: _limit_text(int(defaults.get(name, 0))) for name in bots_service.LIMIT_FIELDS}


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def _hint(source: llm_sources.FieldSource, *, overridden: bool) -> str:
    if overridden and source.own:
        return "Set for this bot."
    return f"Empty: {source.inherited or 'none'} ({source.source})."


def _llm_rows(session: Session, bot: Bot) -> list[LLMRow]:
    llms = llm_settings.effective_llms(session=session, bot_id=bot.id)
    views = llm_sources.override_views(session=session, bot_id=bot.id or 0)
    rows = []
    for c in LLMCategory:
        llm, view = llms[c.value], views[c.value]
        own_key = view.own_key
        hints = {name: _hint(view.fields[name], overridden=view.overridden) for name in llm_sources.FIELDS}
        hints["provider"] = ("Set for this bot." if view.overridden
                             else f"Inherited: {view.provider.inherited} ({view.provider.source}).")
        if llm.api_key is not None and not own_key:
            hints["api_key"] = "Empty: the key of the global setting (same server)."
        rows.append(LLMRow(
            category=c.value, help=CATEGORY_HELP[c.value], source=llm.source,
            provider=view.provider.own or view.provider.inherited,
            base_url=view.fields["base_url"].own, model=view.fields["model"].own,
            context_window=view.fields["context_window"].own, temperature=view.fields["temperature"].own,
            fallback_model=(llm.fallback_model or "") if view.overridden else "",
            supports_images=llm.supports_images if view.overridden else False,
            api_key_set=own_key, hints=hints))
    return rows


def _view(session: Session, bot: Bot) -> SettingsView:
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
    return SettingsView(
        form={field: _as_text(getattr(bot, field)) for field in TEXT_FIELDS},
        flags={field: bool(getattr(bot, field)) for field in FLAG_FIELDS},
        token_set=bot.discord_token_enc is not None,
        llms=_llm_rows(session, bot),
        mcp=mcp,
        limit_defaults=limit_defaults,
        today=today,
    )


def load_settings(token: str, bot_id: int) -> SettingsView:
    return run_for_bot(token, bot_id, lambda session, _user, bot: _view(session, bot), admin=True)


def _write(token: str, bot_id: int, change: Any) -> SettingsView:
    """Run ``change(session, user, bot)`` as an admin in one transaction, then read the settings back."""

    def work(session: Session, user: AppUser, bot: Bot) -> SettingsView:
        change(session, user, bot)
        return _view(session, bot)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


def field_errors(message: str) -> dict[str, str]:
    """``{"field": "problem"}`` from a service's ``field: problem; other: problem`` message."""
    errors: dict[str, str] = {}
    for part in message.split("; "):
        name, sep, problem = part.partition(": ")
        if sep and name in TEXT_FIELDS + FLAG_FIELDS:
            errors[name] = problem
    return errors


class BotSettingsState(BotPageState):
    """The settings form of the open bot."""

    form: dict[str, str] = {}
    flags: dict[str, bool] = {}
    saved_form: dict[str, str] = {}
    saved_flags: dict[str, bool] = {}
    errors: dict[str, str] = {}
    form_error: str = ""
    token_set: bool = False
    token_error: str = ""
    llms: list[LLMRow] = []
    llm_errors: dict[str, str] = {}
    mcp: list[McpRow] = []
    mcp_errors: dict[str, str] = {}
    settings_loaded: bool = False
    loaded_bot_id: int = 0  # the bot the tab shows (0: none, or the tab was left)
    load_error: str = ""
    # Bumped on load: every form that is not bound to state vars starts from the stored values.
    revision: int = 0
    # Per card ("token", "llm-<category>", "mcp-<server id>"): bumped after its own save only, so a
    # save never resets what is typed in another card.
    versions: dict[str, int] = {}
    saving: bool = False
    delete_confirm: str = ""
    # Per category: the models its server offers (from "Check connection", for the Model field).
    models: dict[str, list[str]] = {c.value: [] for c in LLMCategory}
    # Per category: what "Check connection" found (of what is typed), whether it failed, a typed key
    # that could not be checked ("Save anyway"), and what the next submit of its card does.
    check_result: dict[str, str] = {}
    check_failed: dict[str, bool] = {}
    unverified: dict[str, str] = {}
    intent: dict[str, str] = {}
    checking: str = ""
    limit_defaults: dict[str, str] = {}
    today: TodayUsage = TodayUsage()

    @rx.var
    def dirty(self) -> bool:
        return self.form != self.saved_form or self.flags != self.saved_flags

    @rx.var
    def delete_allowed(self) -> bool:
        return self.delete_confirm.strip() == self.bot_name and self.bot_name != ""

    def _show(self, view: SettingsView, *, keep_form: bool = False, saved: str = "") -> None:
        """Show ``view``; ``saved``: the card just saved (its inputs start over), "" on load (all)."""
        if not keep_form:
            self.form, self.flags = dict(view.form), dict(view.flags)
        self.saved_form, self.saved_flags = dict(view.form), dict(view.flags)
        self.token_set = view.token_set
        self.llms = view.llms
        self.mcp = view.mcp
        self.limit_defaults = view.limit_defaults
        self.today = view.today
        if saved:
            self.versions = {**self.versions, saved: self.versions.get(saved, 0) + 1}

    async def _call(self, fn: Any, *args: Any) -> Any:
        return await asyncio.to_thread(fn, self.session_token, self.current_bot_id, *args)

    async def _change(self, change: Any, card: str) -> str:
        """Apply ``change(session, user, bot)`` as an admin and show the settings again; returns
        the error to show ("" when it worked). Only ``card`` starts over from the stored values:
        the bot's fields and the other cards keep what is typed in them."""
        try:
            view = await self._call(_write, change)
        except Exception as exc:
            return user_message(exc)
        self._show(view, keep_form=True, saved=card)
        return ""

    async def _read(self, fn: Any) -> Any:
        """``fn(session)`` with the page's access check (for the LLM checks)."""
        return await self._call(lambda token, bot_id: run_for_bot(token, bot_id, lambda session, _u, _b: fn(session),
                                                                   admin=True))

    @rx.event
    async def load(self):
        """On load: the bot's settings. Loaded again for the same bot while the tab is shown (the
        browser reconnecting, e.g. after the admin chose to stay rather than reload), what is typed
        stays: the bot's fields and the cards (they are not rendered afresh)."""
        again = self.settings_loaded and self.loaded_bot_id == self.current_bot_id
        if not again:
            self.settings_loaded = False
            self.errors, self.form_error, self.token_error, self.llm_errors, self.mcp_errors = {}, "", "", {}, {}
            self.delete_confirm = ""
        self.checking, self.intent = "", {}
        self.models = {c.value: [] for c in LLMCategory}
        self.check_result, self.check_failed, self.unverified = {}, {}, {}
        if not self.bot_ready:
            return None
        try:
            self._show(await self._call(load_settings), keep_form=again and self.dirty)
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.load_error = user_message(exc)
            return None
        if not again:
            self.revision += 1
        self.loaded_bot_id = self.current_bot_id
        self.load_error = ""
        self.settings_loaded = True
        return None

    @rx.event
    def left(self) -> None:
        """The tab is gone (the admin went elsewhere, having discarded any edit): start afresh next time."""
        self.loaded_bot_id = 0
        self.form, self.flags = dict(self.saved_form), dict(self.saved_flags)

    @rx.event
    def set_field(self, name: str, value: str) -> None:
        if name in TEXT_FIELDS:
            self.form[name] = value
            self.errors.pop(name, None)

    @rx.event
    def set_flag(self, name: str, value: bool) -> None:
        if name in FLAG_FIELDS:
            self.flags[name] = bool(value)

    @rx.event
    def discard(self) -> None:
        self.form, self.flags = dict(self.saved_form), dict(self.saved_flags)
        self.errors, self.form_error = {}, ""

    @rx.event
    async def save(self):
        """Save the bot's fields (validated by the bots service); on error keep what was typed."""
        changes: dict[str, Any] = {k: v for k, v in self.form.items() if k in TEXT_FIELDS}
        changes.update({k: v for k, v in self.flags.items() if k in FLAG_FIELDS})

        def change(session: Session, user: AppUser, bot: Bot) -> None:
            bots_service.update_bot(bot, changes, session=session)
            logger.info("User %s changed the settings of bot %s in the web app", user.username, bot.id)

        self.saving = True
        yield
        try:
            view = await self._call(_write, change)
        except Exception as exc:
            self.saving = False
            self.errors = field_errors(str(exc)) if isinstance(exc, ValidationError) else {}
            if self.errors:
                self.form_error = "Nothing was saved. Please correct: " + "; ".join(
                    f"{FIELD_LABELS.get(name, name)}: {problem}" for name, problem in self.errors.items())
            else:
                self.form_error = user_message(exc)
            return
        self.saving = False
        self.errors, self.form_error = {}, ""
        self._show(view)
        self.bot_name = view.form["name"]
        yield rx.toast.success("Settings saved. They apply to the next message.")

    @rx.event
    async def replace_token(self, form_data: dict[str, Any]):
        """Store a new Discord token (read from the form, never kept in the state)."""
        token = str(form_data.get("token") or "").strip()
        if not token:
            self.token_error = "Paste the new token first."
            return None

        def change(session: Session, user: AppUser, bot: Bot) -> None:
            bots_service.set_token(bot, token, session=session)

        self.token_error = await self._change(change, "token")
        if self.token_error:
            return None
        self.bot_has_token = True
        return [rx.set_value("new-token", ""),
                rx.toast.success("Token replaced. The bot reconnects to Discord with it.")]

    @rx.event
    async def clear_token(self):
        def change(session: Session, user: AppUser, bot: Bot) -> None:
            bots_service.set_token(bot, None, session=session)

        self.token_error = await self._change(change, "token")
        if self.token_error:
            return None
        self.bot_has_token = False
        return rx.toast.success("Token removed. The bot stops until a new one is set.")

    @rx.event
    def set_intent(self, category: str, intent: str) -> None:
        """What the next submit of ``category``'s card does (set by the button that submits it)."""
        self.intent = {**self.intent, category: intent}

    @rx.event
    def edited(self, category: str) -> None:
        """A field of ``category``'s card changed: a check result about other values is gone."""
        if category in self.check_result or category in self.unverified:
            self._forget_check(category)

    def _forget_check(self, category: str) -> None:
        self.check_result = {k: v for k, v in self.check_result.items() if k != category}
        self.check_failed = {k: v for k, v in self.check_failed.items() if k != category}
        self.unverified = {k: v for k, v in self.unverified.items() if k != category}

    @rx.event
    async def submit_llm(self, form_data: dict[str, Any]):
        """A category's card: "Check connection", "Save anyway" or Save, by the intent of its button."""
        category = str(form_data.get("category") or "")
        if category not in self.models:
            return
        intent = self.intent.get(category, "save")
        self.intent = {k: v for k, v in self.intent.items() if k != category}
        if intent == "check":
            async for event in self._check(category, form_data):
                yield event
            return
        yield await self._save_llm(category, form_data, check_key=intent != "force")

    async def _check(self, category: str, form_data: dict[str, Any]):
        """Ask the server typed in the card (not the saved one) for its models."""
        self._forget_check(category)
        self.checking = category
        yield
        try:
            result = await check_typed(self._read, Typed.from_form(form_data, bot_id=self.current_bot_id))
        except Exception as exc:
            self.checking = ""
            self.llm_errors = {category: user_message(exc)}
            return
        self.checking = ""
        self.models = {**self.models, category: list(result.models)[:500]}
        self.check_result = {**self.check_result, category: result.message}
        self.check_failed = {**self.check_failed, category: not result.ok}

    async def _save_llm(self, category: str, form_data: dict[str, Any], *, check_key: bool):
        """Save the bot's override of one category: only the values the admin set (the rest is
        inherited); a typed API key is checked with the provider first."""
        fields: dict[str, Any] = {key: str(form_data.get(key) or "").strip() for key in
                                  ("provider", "base_url", "model", "context_window", "temperature")}
        fields["fallback_model"] = str(form_data.get("fallback_model") or "").strip() or None
        fields["supports_images"] = bool(form_data.get("supports_images"))
        typed = Typed.from_form(form_data, bot_id=self.current_bot_id)
        self._forget_check(category)
        self.llm_errors = {}
        try:
            refusal = await key_refusal(self._read, typed) if check_key else None
        except Exception as exc:
            self.llm_errors = {category: user_message(exc)}
            return None
        if refusal is not None and refusal.status == "rejected":
            self.llm_errors = {category: refusal.message}
            return None
        if refusal is not None:
            self.unverified = {**self.unverified, category: refusal.message}
            return None

        def change(session: Session, user: AppUser, bot: Bot) -> None:
            llm_settings.set_llm(session=session, category=category, bot_id=bot.id, api_key=typed.api_key,
                                 clear_api_key=typed.clear_key, **fields)
            logger.info("User %s set the %s LLM of bot %s%s", user.username, category, bot.id,
                        " (the key was not checked)" if typed.api_key and not check_key else "")

        error = await self._change(change, f"llm-{category}")
        if error:
            self.llm_errors = {category: error}
            return None
        return rx.toast.success(f"The {category} model of this bot is saved.")

    @rx.event
    async def reset_llm(self, category: str):
        """Drop the bot's override of a category: the global default applies again."""

        def change(session: Session, user: AppUser, bot: Bot) -> None:
            llm_settings.clear_override(session=session, bot_id=bot.id or 0, category=category)

        self._forget_check(category)
        error = await self._change(change, f"llm-{category}")
        self.llm_errors = {category: error} if error else {}
        if error:
            return None
        return rx.toast.success(f"The {category} model now follows the global default.")

    @rx.event
    async def save_mcp(self, form_data: dict[str, Any]):
        """Enable (with allowed tools, timeout, and per tool its fallback and read/write) or disable
        an MCP server for this bot."""
        server_id = int(str(form_data.get("server_id") or "0") or 0)
        fallbacks, access = settings_from_form(form_data)
        enabled = bool(form_data.get("enabled"))
        tools = str(form_data.get("allowed_tools") or "").strip()
        timeout_text = str(form_data.get("timeout") or "").strip()

        def change(session: Session, user: AppUser, bot: Bot) -> None:
            server = mcp_servers.get_server(server_id, session=session)
            if enabled:
                try:
                    timeout = float(timeout_text) if timeout_text else None
                except ValueError:
                    raise ValidationError("the timeout must be a number of seconds") from None
                mcp_servers.enable_for_bot(session=session, bot_id=bot.id or 0, server=server,
                                           allowed_tools=tools or [], timeout_seconds=timeout,
                                           fallbacks=fallbacks, access=access)
            else:
                try:
                    mcp_servers.disable_for_bot(session=session, bot_id=bot.id or 0, server=server)
                except NotFoundError:
                    pass  # already not in use: nothing to do
            logger.info("User %s %s MCP server %s for bot %s", user.username, "enabled" if enabled else "disabled",
                        server.name, bot.id)

        error = await self._change(change, f"mcp-{server_id}")
        self.mcp_errors = {str(server_id): error} if error else {}
        if error:
            return None
        return rx.toast.success("MCP server settings saved.")

    @rx.event
    def set_delete_confirm(self, value: str) -> None:
        self.delete_confirm = value

    @rx.event
    async def delete_bot(self):
        """Delete the bot with everything of it (admins; the name must be typed to confirm)."""
        if self.delete_confirm.strip() != self.bot_name:
            return rx.toast.error("Type the bot's name to confirm.")

        def work(session: Session, user: AppUser, bot: Bot) -> str:
            name = bot.name
            bots_service.delete_bot(bot, session=session)
            logger.info("User %s deleted bot %s in the web app", user.username, name)
            return name

        try:
            name = await asyncio.to_thread(run_for_bot, self.session_token, self.current_bot_id, work, admin=True,
                                           readonly=False)
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        self.delete_confirm = ""
        return [rx.toast.success(f"Bot {name} deleted."), rx.redirect("/")]


