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

from grobot.components.long_text import context_use
from grobot.core.agents.types import ACCESS_FIELDS
from grobot.core.errors import ConflictError, NotFoundError, ValidationError
from grobot.core.llm.context_window import text_tokens
from grobot.core.models import AppUser, Bot, LLMCategory
from grobot.core.services import (
    access,
    app_settings,
    discord_roles,
    discord_users,
    llm_settings,
    mcp_servers,
    usage,
)
from grobot.core.services import bots as bots_service
from grobot.core.services.budgets import amount_text
from grobot.core.services.users import NotSignedIn
from grobot.core.services.validation import capitalised, field_sentence
from grobot.pages.bot_channel_personas_state import ChannelChoices, ChannelPersonaMixin, channel_choices
from grobot.pages.bot_llm_settings_state import LLMRow, llm_rows
from grobot.pages.bot_mcp_tools_state import McpRow, McpTestMixin, mcp_rows, settings_from_form
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message
from grobot.state.llm_check import INHERIT, LLMFormChecks, Typed, check_typed, key_refusal, validated

logger = logging.getLogger(__name__)

LINE_FIELDS = ("moderation_words", "moderation_patterns")  # one item per line in the form
TEXT_FIELDS = ("name", "personality", "agent_mode", "allowed_channel_ids", "always_on_channel_ids", "keywords",
               "max_tool_rounds", "user_cooldown_seconds", "max_concurrent_runs", "web_search_url") \
    + bots_service.DAILY_LIMIT_FIELDS + bots_service.BUDGET_FIELDS + ACCESS_FIELDS + LINE_FIELDS + ("moderation_action",)
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
    defaults = app_settings.get_values(app_settings.DAILY_LIMIT_KEYS + app_settings.BUDGET_KEYS, session=session)
    today = TodayUsage(day=day.day, tokens=f"{day.tokens:,}", token_limit=_limit_text(day.token_limit),
                       token_percent=_percent(day.tokens, day.token_limit), calls=f"{day.calls:,}",
                       call_limit=_limit_text(day.call_limit), call_percent=_percent(day.calls, day.call_limit),
                       user_message_limit=_limit_text(day.user_message_limit), users_at_limit=day.users_at_limit,
                       over_limit=day.over_limit)
    return today, {name: _limit_text(float(defaults.get(name, 0) or 0))
                   for name in bots_service.DAILY_LIMIT_FIELDS + bots_service.BUDGET_FIELDS}


def _as_text(value: Any, name: str = "") -> str:
    if isinstance(value, list):
        return ("\n" if name in LINE_FIELDS else ", ").join(str(item) for item in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def settings_view(session: Session, bot: Bot) -> SettingsView:
    today, limit_defaults = _today(session, bot)
    llms = llm_settings.effective_llms(session=session, bot_id=bot.id)
    output = llms[LLMCategory.OUTPUT.value]
    return SettingsView(
        form={field: _as_text(getattr(bot, field), field) for field in TEXT_FIELDS},
        flags={field: bool(getattr(bot, field)) for field in FLAG_FIELDS},
        token_set=bot.discord_token_enc is not None,
        llms=llm_rows(session, bot, llms),
        mcp=mcp_rows(session, bot),
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


def load_settings(token: str, bot_id: int) -> SettingsView:
    return run_for_bot(token, bot_id, lambda session, _user, bot: settings_view(session, bot), admin=True)


def _write(token: str, bot_id: int, change: Any) -> SettingsView:
    """Run ``change(session, user, bot)`` as an admin in one transaction, then read the settings back."""

    def work(session: Session, user: AppUser, bot: Bot) -> SettingsView:
        change(session, user, bot)
        return settings_view(session, bot)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


def _ids(text: str) -> list[str]:
    """The ids typed in an access list's field (comma- or space-separated)."""
    return [part for part in text.replace(",", " ").split() if part]


def field_errors(message: str) -> dict[str, str]:
    """``{"field": "Its label must ..."}`` from a service's ``field: problem; other: problem`` message."""
    errors: dict[str, str] = {}
    for part in message.split("; "):
        name, sep, problem = part.partition(": ")
        if sep and name in TEXT_FIELDS + FLAG_FIELDS:
            errors[name] = field_sentence(name, problem, FIELD_LABELS.get(name))
    return errors


# After a refused save: the first field with an error gets the focus, scrolled to the middle of the
# screen (above the sticky bar, which grows with the message). Its error renders with this update.
FOCUS_FIRST_ERROR = """(() => {
  let tries = 0;
  const focus = () => {
    const error = document.querySelector("[data-field-error]");
    const control = error && error.parentElement.querySelector("input, textarea, select, [role=combobox]");
    if (!control) { if (++tries < 20) requestAnimationFrame(focus); return; }
    control.focus({preventScroll: true});
    control.scrollIntoView({block: "center"});
  };
  focus();
})()"""


class BotSettingsState(ChannelPersonaMixin, McpTestMixin, LLMFormChecks, BotPageState):
    """The settings form of the open bot."""

    form: dict[str, str] = {}
    flags: dict[str, bool] = {}
    _saved_form: dict[str, str] = {}  # as stored (backend only: the page needs just "dirty")
    _saved_flags: dict[str, bool] = {}
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
    # Per category: the provider chosen in its card ("inherit": the parent's), which its empty fields follow.
    chosen: dict[str, str] = {c.value: INHERIT for c in LLMCategory}
    limit_defaults: dict[str, str] = {}
    web_search_default: str = ""
    today: TodayUsage = TodayUsage()
    # Who the access lists may name: [id, label] of the users and roles the bot has seen; names by id.
    user_choices: list[list[str]] = []
    role_choices: list[list[str]] = []
    access_names: dict[str, str] = {}
    context_window: int = 0
    context_model: str = ""
    personality_meter: str = ""  # its tokens against the output model's context (long_text.context_use)
    personality_level: str = ""

    @rx.var
    def dirty(self) -> bool:
        return self.form != self._saved_form or self.flags != self._saved_flags

    @rx.var
    def access_chips(self) -> dict[str, list[list[str]]]:
        """Per access list, its ids as typed, each ``[id, name or id]``."""
        return {name: [[i, self.access_names.get(i, i)] for i in _ids(self.form.get(name, ""))]
                for name in ACCESS_FIELDS}

    @rx.var
    def delete_allowed(self) -> bool:
        return self.delete_confirm.strip() == self.bot_name and self.bot_name != ""

    def _show(self, view: SettingsView, *, keep_form: bool = False, saved: str = "") -> None:
        """Show ``view``; ``saved``: the card just saved (its inputs start over), "" on load (all)."""
        if not keep_form:
            self.form, self.flags = dict(view.form), dict(view.flags)
        self._saved_form, self._saved_flags = dict(view.form), dict(view.flags)
        self.token_set = view.token_set
        self.llms = view.llms
        # A card that starts over from the stored values (all of them after a load: see ``load``) has its
        # stored provider chosen again.
        self.chosen = {**self.chosen, **{row.category: row.provider for row in view.llms
                                         if saved == f"llm-{row.category}"}}
        self.mcp = view.mcp
        self.limit_defaults = view.limit_defaults
        self.web_search_default = view.web_search_default
        self.today = view.today
        self.user_choices, self.role_choices = view.access.users, view.access.roles
        self._show_channels(view.channels)
        self.access_names = {**view.access.names, **{i: label for i, label in view.access.users + view.access.roles}}
        self.context_window, self.context_model = view.context_window, view.context_model
        self._measure_personality()
        if saved:
            self.versions = {**self.versions, saved: self.versions.get(saved, 0) + 1}

    async def _reload_mcp(self) -> None:
        """Only the MCP cards (after a test): what is typed in the forms stays."""
        self.mcp = (await self._call(load_settings)).mcp

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
        self._forget_checks()
        self.models = {c.value: [] for c in LLMCategory}
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
            self.chosen = {row.category: row.provider for row in self.llms}
        self.loaded_bot_id = self.current_bot_id
        self.load_error = ""
        self.settings_loaded = True
        return None

    @rx.event
    def left(self) -> None:
        """The tab is gone (the admin went elsewhere, having discarded any edit): start afresh next time."""
        self.loaded_bot_id = 0
        self.form, self.flags = dict(self._saved_form), dict(self._saved_flags)

    def _measure_personality(self) -> None:
        tokens = text_tokens(self.form.get("personality", ""))
        self.personality_meter, self.personality_level = context_use(tokens, self.context_window, self.context_model)

    @rx.event
    def set_field(self, name: str, value: str) -> None:
        if name in TEXT_FIELDS:
            self.form[name] = value
            self.errors.pop(name, None)
            if name == "personality":
                self._measure_personality()

    @rx.event
    def add_access(self, name: str, value: str) -> None:
        """Add a user or role the bot has seen (its id) to an access list (saved with the bar)."""
        if name in ACCESS_FIELDS and str(value).strip().isdigit():
            ids = _ids(self.form.get(name, ""))
            if value.strip() not in ids:
                self.form[name] = ", ".join([*ids, value.strip()])
                self.errors.pop(name, None)

    @rx.event
    def remove_access(self, name: str, value: str) -> None:
        """Take an id off an access list (saved with the bar)."""
        if name in ACCESS_FIELDS:
            self.form[name] = ", ".join(i for i in _ids(self.form.get(name, "")) if i != str(value))
            self.errors.pop(name, None)

    @rx.event
    def set_flag(self, name: str, value: bool) -> None:
        if name in FLAG_FIELDS:
            self.flags[name] = bool(value)

    @rx.event
    def discard(self) -> None:
        self.form, self.flags = dict(self._saved_form), dict(self._saved_flags)
        self.errors, self.form_error = {}, ""
        self._measure_personality()

    @rx.event
    async def save(self):
        """Save the bot's fields (the Save changes button)."""
        async for event in self._save():
            yield event

    @rx.event
    async def submit_bar(self, _form_data: dict[str, Any]):
        """Enter in one of the bot's fields: the same as Save changes (the fields are bound to the state)."""
        if not self.dirty or self.saving:
            return
        async for event in self._save():
            yield event

    async def _save(self):
        """Save the bot's fields (validated by the bots service); on error keep what was typed, each
        problem next to its field (a name another bot has: under Name)."""
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
            problems: list[str] = []
            if isinstance(exc, ConflictError) and "name" in changes:
                self.errors = {"name": capitalised(str(exc))}
                problems = [field_sentence("name", str(exc), FIELD_LABELS["name"])]
            else:
                self.errors = field_errors(str(exc)) if isinstance(exc, ValidationError) else {}
                problems = list(self.errors.values())
            if self.errors:
                self.form_error = "Nothing was saved. Please correct: " + " ".join(problems)
                yield rx.call_script(FOCUS_FIRST_ERROR)  # on a phone the bar with its message covers much of the page
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
    def choose_provider(self, category: str, provider: str) -> None:
        """The provider chosen in a card: its empty fields say what they inherit for it."""
        if category in self.chosen and (provider == INHERIT or provider in llm_settings.PROVIDERS):
            self.chosen = {**self.chosen, category: provider}
        if category in self.check_result or category in self.unverified:
            self._forget_check(category)  # as ``edited``

    @rx.event
    async def submit_llm(self, form_data: dict[str, Any]):
        """A category's card: "Check connection", "Save anyway" or Save, by the intent of its button.

        The provider is the one chosen here, not the form's: the select shows (and submits) a new choice only
        after its change event's round trip, and a Save clicked within it would send the old one. Events
        reach the state in order, so the choice is already here."""
        category = str(form_data.get("category") or "")
        if category not in self.models:
            return
        form_data = {**form_data, "provider": self.chosen.get(category, INHERIT)}
        async for event in self._submit(category, form_data):
            yield event

    async def _check(self, category: str, form_data: dict[str, Any]):
        """Check what the card says (not what is saved), as Save would store it: refused as Save refuses it,
        else its server is asked for its models."""
        self._forget_check(category)
        self.llm_errors = {}
        self.checking = category
        yield
        try:
            await self._read(lambda _session: None)  # an admin who may see the bot, before any request
            result = await check_typed(self._read, Typed.from_form(form_data, bot_id=self.current_bot_id))
        except Exception as exc:
            self.checking = ""
            self.llm_errors = {category: user_message(exc)}
            return
        self.models = {**self.models, category: list(result.models)[:500]}
        self._checked(category, result)

    async def _save_llm(self, category: str, form_data: dict[str, Any], *, check_key: bool):
        """Save the bot's override of one category: only the values the admin set (the rest is
        inherited), checked as "Check connection" checks them; a typed API key is tried with the provider
        first."""
        typed = Typed.from_form(form_data, bot_id=self.current_bot_id)
        self._forget_check(category)
        self.llm_errors = {}
        if not typed.api_key and not typed.clear_key and not self._has_override(category) and not any(
                typed.fields.values()):
            return rx.toast.info(f"Nothing to save: every value of the {category} model is inherited.")
        try:
            await self._read(lambda _session: None)  # an admin who may see the bot, before any request
            target = await validated(self._read, typed)
            refusal = await key_refusal(self._read, typed, target) if check_key else None
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
                                 clear_api_key=typed.clear_key, **typed.fields)
            logger.info("User %s set the %s LLM of bot %s%s", user.username, category, bot.id,
                        " (the key was not checked)" if typed.api_key and not check_key else "")

        error = await self._change(change, f"llm-{category}")
        if error:
            self.llm_errors = {category: error}
            return None
        if target.provider_inherited:
            return rx.toast.success(f"The {category} model of this bot is saved, with the provider it inherited "
                                    f"({target.data.provider}).")
        return rx.toast.success(f"The {category} model of this bot is saved.")

    def _has_override(self, category: str) -> bool:
        return any(row.category == category and row.source == "bot" for row in self.llms)

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


