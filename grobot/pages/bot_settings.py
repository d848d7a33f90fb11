"""The Settings tab (admins): everything the CLI's ``bot set``, ``llm set`` and ``bot mcp`` can
change, the Discord token ("set" / "not set" and a replace field) and deleting the bot.

The rules live in the services (``bots``, ``llm_settings``, ``mcp_servers``): this page sends
what the admin typed and shows the service's error next to the form, keeping what was typed.
Secrets (the token, API keys) are read from the submitted form and never kept in a state var.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import SETTINGS
from grobot.components.empty_state import command_line
from grobot.components.forms import error_text, switch_label
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import AppUser, Bot, LLMCategory
from grobot.core.services import bots as bots_service
from grobot.core.services import app_settings, llm_settings, mcp_servers, usage
from grobot.core.services.users import NotSignedIn
from grobot.pages.bot_mcp_tools import McpTestMixin, McpToolRow, mcp_check, settings_from_form, tool_rows, tool_settings
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

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
MODELS_TIMEOUT = 15.0
TWO_COLUMNS = rx.breakpoints(initial="1", md="2")  # one column on narrow screens
ADD_MCP_COMMAND = "python -m grobot mcp add --preset time"


@dataclass
class LLMRow:
    """The LLM settings of one category for the bot (the API key only as set / not set)."""

    category: str
    help: str
    source: str  # bot | global | builtin
    provider: str
    base_url: str
    model: str
    context_window: str
    temperature: str
    fallback_model: str
    supports_images: bool
    api_key_set: bool


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


def _view(session: Session, bot: Bot) -> SettingsView:
    llms = llm_settings.effective_llms(session=session, bot_id=bot.id)
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
        llms=[
            LLMRow(category=c.value, help=CATEGORY_HELP[c.value], source=llms[c.value].source,
                   provider=llms[c.value].provider, base_url=llms[c.value].base_url, model=llms[c.value].model,
                   context_window=str(llms[c.value].context_window), temperature=_as_text(llms[c.value].temperature),
                   fallback_model=llms[c.value].fallback_model or "", supports_images=llms[c.value].supports_images,
                   api_key_set=llms[c.value].api_key is not None)
            for c in LLMCategory
        ],
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


class BotSettingsState(McpTestMixin, BotPageState):
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
    load_error: str = ""
    # Bumped after a save, so the forms that are not bound to state vars start from the saved values.
    revision: int = 0
    saving: bool = False
    delete_confirm: str = ""
    # Per category: the models its server offers (fetched on request) and a line about them.
    models: dict[str, list[str]] = {c.value: [] for c in LLMCategory}
    models_note: dict[str, str] = {}
    limit_defaults: dict[str, str] = {}
    today: TodayUsage = TodayUsage()

    @rx.var
    def dirty(self) -> bool:
        return self.form != self.saved_form or self.flags != self.saved_flags

    @rx.var
    def delete_allowed(self) -> bool:
        return self.delete_confirm.strip() == self.bot_name and self.bot_name != ""

    def _show(self, view: SettingsView, *, keep_form: bool = False) -> None:
        if not keep_form:
            self.form, self.flags = dict(view.form), dict(view.flags)
        self.saved_form, self.saved_flags = dict(view.form), dict(view.flags)
        self.token_set = view.token_set
        self.llms = view.llms
        self.mcp = view.mcp
        self.limit_defaults = view.limit_defaults
        self.today = view.today
        self.revision += 1

    async def _reload_mcp(self) -> None:
        """Only the MCP cards (after a test): what is typed in the forms stays."""
        self.mcp = (await self._call(load_settings)).mcp

    async def _call(self, fn: Any, *args: Any) -> Any:
        return await asyncio.to_thread(fn, self.session_token, self.current_bot_id, *args)

    async def _change(self, change: Any) -> str:
        """Apply ``change(session, user, bot)`` as an admin and show the settings again; returns
        the error to show ("" when it worked). The bot's fields being edited stay as typed."""
        try:
            view = await self._call(_write, change)
        except Exception as exc:
            return user_message(exc)
        self._show(view, keep_form=True)
        return ""

    @rx.event
    async def load(self):
        """On load: the bot's settings."""
        self.settings_loaded = False
        self.errors, self.form_error, self.token_error, self.llm_errors, self.mcp_errors = {}, "", "", {}, {}
        self.delete_confirm = ""
        if not self.bot_ready:
            return None
        try:
            self._show(await self._call(load_settings))
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.load_error = user_message(exc)
            return None
        self.load_error = ""
        self.settings_loaded = True
        return None

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
                self.form_error = "Nothing was saved. Please correct: " + " ".join(
                    f"{FIELD_LABELS.get(name, name)} {problem.rstrip('.')}." for name, problem in self.errors.items())
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

        self.token_error = await self._change(change)
        if self.token_error:
            return None
        self.bot_has_token = True
        return [rx.set_value("new-token", ""),
                rx.toast.success("Token replaced. The bot reconnects to Discord with it.")]

    @rx.event
    async def clear_token(self):
        def change(session: Session, user: AppUser, bot: Bot) -> None:
            bots_service.set_token(bot, None, session=session)

        self.token_error = await self._change(change)
        if self.token_error:
            return None
        self.bot_has_token = False
        return rx.toast.success("Token removed. The bot stops until a new one is set.")

    @rx.event
    async def save_llm(self, form_data: dict[str, Any]):
        """Save the bot's override of one LLM category (the API key is taken from the form only)."""
        category = str(form_data.get("category") or "")
        fields = {key: str(form_data.get(key) or "").strip() for key in
                  ("provider", "base_url", "model", "context_window", "temperature")}
        fields["fallback_model"] = str(form_data.get("fallback_model") or "").strip() or None
        fields["supports_images"] = bool(form_data.get("supports_images"))
        api_key = str(form_data.get("api_key") or "").strip() or None
        clear_key = bool(form_data.get("clear_api_key"))

        def change(session: Session, user: AppUser, bot: Bot) -> None:
            llm_settings.set_llm(session=session, category=category, bot_id=bot.id, api_key=api_key,
                                 clear_api_key=clear_key, **fields)
            logger.info("User %s set the %s LLM of bot %s", user.username, category, bot.id)

        error = await self._change(change)
        self.llm_errors = {category: error} if error else {}
        if error:
            return None
        return rx.toast.success(f"The {category} model of this bot is saved.")

    @rx.event
    async def reset_llm(self, category: str):
        """Drop the bot's override of a category: the global default applies again."""

        def change(session: Session, user: AppUser, bot: Bot) -> None:
            llm_settings.clear_override(session=session, bot_id=bot.id or 0, category=category)

        error = await self._change(change)
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

        error = await self._change(change)
        self.mcp_errors = {str(server_id): error} if error else {}
        if error:
            return None
        return rx.toast.success("MCP server settings saved.")

    @rx.event
    async def list_models(self, category: str):
        """Ask the category's saved server which models it offers (for the Model field's suggestions)."""
        if category not in self.models:
            return
        self.models_note = {**self.models_note, category: "Asking the server…"}
        yield
        try:
            await asyncio.to_thread(run_for_bot, self.session_token, self.current_bot_id,
                                    lambda _session, _user, _bot: None, admin=True)
            names = await asyncio.wait_for(
                llm_settings.list_models_for(category=category, bot_id=self.current_bot_id), timeout=MODELS_TIMEOUT)
        except asyncio.TimeoutError:
            note = f"The server did not answer within {MODELS_TIMEOUT:g} s."
            names = []
        except Exception as exc:
            note = "Could not list the models: " + user_message(exc)
            names = []
        else:
            note = (f"{len(names)} model{'' if len(names) == 1 else 's'} on the server: pick one in the Model field."
                    if names else "The server offers no models.")
        self.models = {**self.models, category: names[:500]}
        self.models_note = {**self.models_note, category: note}

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


# --------------------------------------------------------------------------- components


def section(title: str, description: str, *children: rx.Component, **props: Any) -> rx.Component:
    """A titled card of the settings page."""
    return rx.card(
        rx.vstack(
            rx.vstack(rx.heading(title, size="4", as_="h2"),
                      rx.text(description, size="2", color=rx.color("gray", 11)), spacing="1"),
            *children,
            spacing="4",
            width="100%",
        ),
        width="100%",
        size="3",
        **props,
    )


def field(label: str, control: rx.Component, *, hint: str = "", error_key: str = "") -> rx.Component:
    """A labelled control with a hint and the field's error under it."""
    return rx.vstack(
        rx.el.label(rx.text(label, size="2", weight="medium"), control, display="flex", flex_direction="column",
                    gap="0.35rem", width="100%"),
        rx.cond(BotSettingsState.errors.contains(error_key),  # type: ignore[attr-defined]
                error_text(BotSettingsState.errors[error_key], size="1"))
        if error_key else rx.fragment(),
        rx.text(hint, size="1", color=rx.color("gray", 10)) if hint else rx.fragment(),
        spacing="1",
        width="100%",
    )


def text_input(name: str, **props: Any) -> rx.Component:
    return rx.input(value=BotSettingsState.form[name], on_change=lambda value: BotSettingsState.set_field(name, value),
                    name=name, width="100%", **props)


def flag_switch(name: str, label: str, hint: str) -> rx.Component:
    return switch_label(
        rx.switch(checked=BotSettingsState.flags[name], on_change=lambda value: BotSettingsState.set_flag(name, value),
                  aria_label=label),
        rx.vstack(rx.text(label, size="2", weight="medium"), rx.text(hint, size="1", color=rx.color("gray", 10)),
                  spacing="0"),
        gap="0.75rem",
        align="start",
        width="100%",
    )


def general_section() -> rx.Component:
    return section(
        "General", "Who the bot is and how it thinks.",
        rx.grid(
            field("Name", text_input("name"), error_key="name"),
            field("Agent mode", rx.select(["chain", "native"], value=BotSettingsState.form["agent_mode"],
                                          on_change=lambda value: BotSettingsState.set_field("agent_mode", value),
                                          aria_label="Agent mode", width="100%"),
                  hint="chain: specialised calls per step. native: one tool-calling loop for models that call tools well.",
                  error_key="agent_mode"),
            columns=TWO_COLUMNS, spacing="4", width="100%",
        ),
        field("Personality", rx.text_area(value=BotSettingsState.form["personality"],
                                          on_change=lambda value: BotSettingsState.set_field("personality", value),
                                          name="personality", rows="6", width="100%", resize="vertical"),
              hint="Added to the system prompt after GroBot's core directives.", error_key="personality"),
    )


def reply_section() -> rx.Component:
    return section(
        "Reply rules", "When the bot answers on Discord (rules first, an LLM decides only what they leave open).",
        rx.grid(
            flag_switch("reply_to_mentions", "Mentions", "Answer when someone mentions the bot."),
            flag_switch("reply_in_dms", "Direct messages", "Answer every direct message."),
            flag_switch("reply_to_replies", "Replies", "Answer replies to the bot's messages."),
            flag_switch("reply_when_relevant", "When relevant", "Let the decision model join other conversations."),
            columns=TWO_COLUMNS, spacing="4", width="100%",
        ),
        field("Allowed channels", text_input("allowed_channel_ids", placeholder="Any channel"),
              hint="Discord channel ids, comma-separated. Empty: every channel.", error_key="allowed_channel_ids"),
        field("Always-on channels", text_input("always_on_channel_ids", placeholder="None"),
              hint="Channels where the bot answers every message.", error_key="always_on_channel_ids"),
        field("Keywords", text_input("keywords", placeholder="None"),
              hint="Words that make the bot answer, comma-separated.", error_key="keywords"),
    )


def limits_section() -> rx.Component:
    return section(
        "Limits", "How much work one message may cause.",
        rx.grid(
            field("Max tool rounds", text_input("max_tool_rounds", type="number", min=0, max=20),
                  hint="0 to 20", error_key="max_tool_rounds"),
            field("User cooldown (s)", text_input("user_cooldown_seconds", type="number", min=0, step="0.5"),
                  hint="Between two answers to the same user.", error_key="user_cooldown_seconds"),
            field("Concurrent runs", text_input("max_concurrent_runs", type="number", min=1, max=100),
                  hint="Messages answered at the same time.", error_key="max_concurrent_runs"),
            columns=rx.breakpoints(initial="1", sm="3"), spacing="4", width="100%",
        ),
    )


def limit_input(name: str) -> rx.Component:
    """A daily limit: empty or "default" follows the global default, 0 or "unlimited" is no limit."""
    return text_input(name, placeholder="default", aria_label=FIELD_LABELS[name])


def limit_field(name: str) -> rx.Component:
    return field(FIELD_LABELS[name], limit_input(name), error_key=name,
                 hint=f"Empty: the global default ({BotSettingsState.limit_defaults[name]}). 0: unlimited.")


def usage_meter(label: str, used: rx.Var, limit: rx.Var, percent: rx.Var, testid: str) -> rx.Component:
    return rx.vstack(
        rx.hstack(rx.text(label, size="1", weight="medium", color=rx.color("gray", 11)), rx.spacer(),
                  rx.text(used, " / ", limit, size="1", data_testid=testid), width="100%"),
        rx.progress(value=percent, size="1", width="100%",
                    color_scheme=rx.cond(percent >= 100, "red", rx.cond(percent >= 80, "amber", "indigo"))),
        spacing="1",
        width="100%",
    )


def today_panel() -> rx.Component:
    today = BotSettingsState.today
    return rx.box(
        rx.vstack(
            rx.hstack(
                rx.text("Today", size="2", weight="medium"),
                rx.text(today.day, " (UTC)", size="1", color=rx.color("gray", 10)),
                rx.spacer(),
                rx.cond(today.over_limit, rx.badge("limit reached", color_scheme="red", variant="soft")),
                align="center",
                width="100%",
            ),
            rx.grid(
                usage_meter("Tokens", today.tokens, today.token_limit, today.token_percent, "today-tokens"),
                usage_meter("LLM calls", today.calls, today.call_limit, today.call_percent, "today-calls"),
                columns=TWO_COLUMNS, spacing="4", width="100%",
            ),
            rx.text(rx.cond(today.user_message_limit == "unlimited", "No per-user message limit.",
                            rx.fragment(today.users_at_limit, " user(s) at their limit of ",
                                        today.user_message_limit, " messages today.")),
                    size="1", color=rx.color("gray", 11), data_testid="today-users"),
            spacing="3",
            width="100%",
        ),
        padding="0.75rem 1rem",
        border=f"1px solid {rx.color('gray', 5)}",
        border_radius="8px",
        background=rx.color("gray", 2),
        width="100%",
        data_testid="today-usage",
    )


def daily_limits_section() -> rx.Component:
    return section(
        "Daily limits", "Budgets per UTC day. When one is used up, the bot says so and waits for the next day.",
        today_panel(),
        rx.grid(
            *[limit_field(name) for name in bots_service.LIMIT_FIELDS],
            columns=rx.breakpoints(initial="1", sm="3"), spacing="4", width="100%",
        ),
    )


def gateway_section() -> rx.Component:
    return section(
        "Discord connection", "Changing these reconnects the bot (only this bot).",
        rx.grid(
            flag_switch("message_content_intent", "Message content intent",
                        "Needed to read messages; enable it in the developer portal too."),
            flag_switch("members_intent", "Server members intent", "Lets the bot see member lists."),
            columns=TWO_COLUMNS, spacing="4", width="100%",
        ),
    )


def save_bar() -> rx.Component:
    return rx.vstack(
        rx.cond(BotSettingsState.form_error != "",
                rx.callout(BotSettingsState.form_error, icon="triangle-alert", color_scheme="red", width="100%",
                           data_testid="settings-error")),
        rx.hstack(
            rx.cond(BotSettingsState.dirty, rx.text("Unsaved changes", size="2", color=rx.color("amber", 11)),
                    rx.text("All changes saved", size="2", color=rx.color("gray", 10))),
            rx.spacer(),
            rx.button("Discard", variant="soft", color_scheme="gray", on_click=BotSettingsState.discard,
                      disabled=~BotSettingsState.dirty),
            rx.button(rx.icon("save", size=16), "Save changes", on_click=BotSettingsState.save,
                      loading=BotSettingsState.saving),
            align="center",
            spacing="3",
            width="100%",
        ),
        position="sticky",
        bottom="0",
        padding="0.75rem 1rem",
        background=rx.color("gray", 1),
        border=f"1px solid {rx.color('gray', 5)}",
        border_radius="10px",
        box_shadow="0 -4px 12px rgba(0,0,0,0.04)",
        width="100%",
        z_index="5",
    )


def token_section() -> rx.Component:
    return section(
        "Discord token", "The bot's secret. It is stored encrypted and never shown again.",
        rx.hstack(
            rx.text("Token:", size="2", weight="medium"),
            rx.badge(rx.cond(BotSettingsState.token_set, "set", "not set"),
                     color_scheme=rx.cond(BotSettingsState.token_set, "green", "gray"), variant="soft",
                     data_testid="token-state"),
            align="center",
            spacing="2",
        ),
        rx.form(
            rx.hstack(
                rx.input(name="token", id="new-token", type="password", placeholder="Paste a new token to replace it",
                         auto_complete="off", aria_label="New Discord token", width="100%"),
                rx.button("Replace token", type="submit", variant="soft"),
                rx.cond(BotSettingsState.token_set,
                        rx.button("Remove", type="button", variant="ghost", color_scheme="red",
                                  on_click=BotSettingsState.clear_token)),
                spacing="3",
                width="100%",
            ),
            on_submit=BotSettingsState.replace_token,
            reset_on_submit=False,
            width="100%",
        ),
        rx.cond(BotSettingsState.token_error != "",
                error_text(BotSettingsState.token_error, size="2")),
    )


def llm_card(row: LLMRow) -> rx.Component:
    source_text = rx.match(row.source, ("bot", "Set for this bot"), ("global", "Global default"), "Built-in default")
    small = {"size": "2", "width": "100%"}
    return rx.card(
        rx.form(
            rx.vstack(
                rx.hstack(
                    rx.vstack(rx.heading(row.category.upper(), size="2", letter_spacing="0.05em"),
                              rx.text(row.help, size="1", color=rx.color("gray", 10)), spacing="0"),
                    rx.spacer(),
                    rx.badge(source_text, color_scheme=rx.cond(row.source == "bot", "indigo", "gray"), variant="soft"),
                    align="start",
                    width="100%",
                ),
                rx.el.input(type="hidden", name="category", value=row.category),
                rx.el.datalist(rx.foreach(BotSettingsState.models[row.category], lambda name: rx.el.option(value=name)),
                               id=f"models-{row.category}"),
                rx.grid(
                    rx.el.label(rx.text("Provider", size="1", weight="medium"),
                                rx.select(list(llm_settings.PROVIDERS), name="provider", default_value=row.provider,
                                          size="2"),
                                display="flex", flex_direction="column", gap="0.25rem"),
                    rx.el.label(rx.text("Model", size="1", weight="medium"),
                                rx.input(name="model", default_value=row.model, custom_attrs={"list": f"models-{row.category}"},
                                         placeholder="Provider default", **small),
                                display="flex", flex_direction="column", gap="0.25rem"),
                    columns="2", spacing="3", width="100%",
                ),
                rx.hstack(
                    rx.button(rx.icon("list", size=12), "List models", type="button", variant="ghost", size="1",
                              on_click=BotSettingsState.list_models(row.category)),
                    rx.cond(BotSettingsState.models_note.contains(row.category),  # type: ignore[attr-defined]
                            rx.text(BotSettingsState.models_note[row.category], size="1", color=rx.color("gray", 11),
                                    data_testid="models-note")),
                    spacing="2",
                    align="center",
                    width="100%",
                ),
                rx.el.label(rx.text("Base URL", size="1", weight="medium"),
                            rx.input(name="base_url", default_value=row.base_url, placeholder="Provider default",
                                     **small),
                            display="flex", flex_direction="column", gap="0.25rem", width="100%"),
                rx.grid(
                    rx.el.label(rx.text("Context window", size="1", weight="medium"),
                                rx.input(name="context_window", default_value=row.context_window, type="number", **small),
                                display="flex", flex_direction="column", gap="0.25rem"),
                    rx.el.label(rx.text("Temperature", size="1", weight="medium"),
                                rx.input(name="temperature", default_value=row.temperature, type="number", step="0.1",
                                         **small),
                                display="flex", flex_direction="column", gap="0.25rem"),
                    columns="2", spacing="3", width="100%",
                ),
                rx.el.label(rx.text("Fallback model", size="1", weight="medium"),
                            rx.input(name="fallback_model", default_value=row.fallback_model, placeholder="None",
                                     **small),
                            display="flex", flex_direction="column", gap="0.25rem", width="100%"),
                rx.el.label(
                    rx.hstack(rx.text("API key", size="1", weight="medium"),
                              rx.badge(rx.cond(row.api_key_set, "set", "not set"), size="1", variant="soft",
                                       color_scheme=rx.cond(row.api_key_set, "green", "gray")), spacing="2"),
                    rx.input(name="api_key", type="password", placeholder="Type a new key to replace it",
                             auto_complete="off", **small),
                    display="flex", flex_direction="column", gap="0.25rem", width="100%"),
                rx.hstack(
                    rx.el.label(rx.hstack(rx.checkbox(name="supports_images", default_checked=row.supports_images),
                                          rx.text("Reads images", size="1"), spacing="2", align="center")),
                    rx.cond(row.api_key_set,
                            rx.el.label(rx.hstack(rx.checkbox(name="clear_api_key"), rx.text("Remove the key", size="1"),
                                                  spacing="2", align="center"))),
                    spacing="4",
                ),
                rx.cond(BotSettingsState.llm_errors.contains(row.category),  # type: ignore[attr-defined]
                        rx.callout(BotSettingsState.llm_errors[row.category], icon="triangle-alert", color_scheme="red",
                                   size="1", width="100%", data_testid="llm-error")),
                rx.hstack(
                    rx.cond(row.source == "bot",
                            rx.button("Use global default", type="button", variant="ghost", color_scheme="gray",
                                      size="2", on_click=BotSettingsState.reset_llm(row.category))),
                    rx.spacer(),
                    rx.button("Save " + row.category, type="submit", variant="soft", size="2"),
                    width="100%",
                    align="center",
                ),
                spacing="3",
                width="100%",
            ),
            on_submit=BotSettingsState.save_llm,
            reset_on_submit=False,
            key=f"{row.category}-{BotSettingsState.revision}",
            data_category=row.category,
        ),
        width="100%",
    )


def llm_section() -> rx.Component:
    return section(
        "Language models", "Per category, the bot can use its own model instead of the global default.",
        rx.grid(rx.foreach(BotSettingsState.llms, llm_card), columns=rx.breakpoints(initial="1", lg="3"), spacing="4",
                width="100%"),
    )


def mcp_row(row: McpRow) -> rx.Component:
    return rx.card(
        rx.form(
            rx.vstack(
                rx.hstack(
                    rx.el.label(rx.hstack(
                        rx.checkbox(name="enabled", default_checked=row.linked, disabled=~row.server_enabled),
                        rx.text(row.name, weight="medium"), spacing="2", align="center")),
                    rx.badge(row.transport, variant="surface", color_scheme="gray", size="1"),
                    rx.cond(~row.server_enabled, rx.badge("server disabled", color_scheme="amber", size="1")),
                    rx.spacer(),
                    rx.button("Save", type="submit", variant="soft", size="1"),
                    align="center",
                    spacing="3",
                    width="100%",
                ),
                rx.el.input(type="hidden", name="server_id", value=row.server_id),
                rx.grid(
                    rx.el.label(rx.text("Allowed tools", size="1", weight="medium"),
                                rx.input(name="allowed_tools", default_value=row.allowed_tools,
                                         placeholder="All tools of the server", size="2", width="100%"),
                                display="flex", flex_direction="column", gap="0.25rem"),
                    rx.el.label(rx.text("Timeout (s)", size="1", weight="medium"),
                                rx.input(name="timeout", default_value=row.timeout, type="number", size="2",
                                         width="100%"),
                                display="flex", flex_direction="column", gap="0.25rem"),
                    columns="3fr 1fr", spacing="3", width="100%",
                ),
                mcp_check(BotSettingsState, row.server_id, row.known_tools, row.last_error),
                rx.cond(row.known_tools != "", tool_settings(row.tools, row.server_id)),
                rx.cond(BotSettingsState.mcp_errors.contains(row.server_id.to_string()),  # type: ignore[attr-defined]
                        rx.text(BotSettingsState.mcp_errors[row.server_id.to_string()], size="2",
                                color=rx.color("red", 11), role="alert")),
                spacing="2",
                width="100%",
            ),
            on_submit=BotSettingsState.save_mcp,
            reset_on_submit=False,
            key=f"mcp-{row.server_id}-{BotSettingsState.revision}",
        ),
        width="100%",
        data_server=row.name,
    )


def mcp_section() -> rx.Component:
    return section(
        "MCP servers", "The tool servers this bot may use, which of their tools, how long a call may take, "
                       "and per tool its fallback and whether it changes things.",
        rx.cond(
            BotSettingsState.mcp.length() > 0,  # type: ignore[attr-defined]
            rx.vstack(rx.foreach(BotSettingsState.mcp, mcp_row), spacing="3", width="100%"),
            rx.vstack(rx.text("No MCP servers are registered yet. Add one on the ",
                              rx.link("MCP servers page", href="/mcp"),
                              " (known servers are one click: Add from preset), or from the command line:", size="2",
                              color=rx.color("gray", 11)), command_line(ADD_MCP_COMMAND), spacing="2", width="100%"),
        ),
    )


def delete_section() -> rx.Component:
    return section(
        "Danger zone", "Deleting a bot removes its settings, conversations, logs, files, memory and knowledge.",
        rx.alert_dialog.root(
            rx.alert_dialog.trigger(rx.button(rx.icon("trash-2", size=16), "Delete this bot", color_scheme="red",
                                              variant="soft", width="fit-content")),
            rx.alert_dialog.content(
                rx.alert_dialog.title("Delete ", BotSettingsState.bot_name, "?"),
                rx.alert_dialog.description(
                    "This cannot be undone. The bot goes offline and everything it knows is deleted. "
                    "Type the bot's name to confirm.", size="2"),
                rx.input(value=BotSettingsState.delete_confirm, on_change=BotSettingsState.set_delete_confirm,
                         placeholder=BotSettingsState.bot_name, aria_label="Bot name to confirm", margin_top="1rem"),
                rx.hstack(
                    rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", color_scheme="gray")),
                    rx.alert_dialog.action(rx.button("Delete bot", color_scheme="red", on_click=BotSettingsState.delete_bot,
                                                     disabled=~BotSettingsState.delete_allowed)),
                    spacing="3",
                    justify="end",
                    margin_top="1rem",
                ),
            ),
        ),
        border=f"1px solid {rx.color('red', 6)}",
    )


def settings_tab() -> rx.Component:
    return rx.cond(
        BotSettingsState.settings_loaded,
        rx.vstack(
            general_section(),
            reply_section(),
            limits_section(),
            daily_limits_section(),
            gateway_section(),
            save_bar(),
            token_section(),
            llm_section(),
            mcp_section(),
            delete_section(),
            spacing="5",
            width="100%",
        ),
        rx.cond(BotSettingsState.load_error != "",
                rx.callout(BotSettingsState.load_error, icon="triangle-alert", color_scheme="red", width="100%"),
                rx.center(rx.spinner(size="3"), height="8rem", width="100%")),
    )


def settings_page() -> rx.Component:
    return bot_page(SETTINGS, settings_tab())
