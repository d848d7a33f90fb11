"""The state of the Settings page (admins): the global LLM defaults per category and the global settings.

Forms are uncontrolled: what the admin typed stays in the page until it is saved, so an
error (shown next to its field) loses nothing. API keys are write-only: the page shows
whether one is stored and accepts a new value, which only passes through the submit handler.
Each LLM form has one submit handler: Save (a typed key is checked with the provider first),
"Check connection" (what is typed, not what is saved) and "Save anyway" (a key that could not be
checked) submit it with their intent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import reflex as rx

from grobot.components.formatting import byte_size_text
from grobot.core.errors import GroBotError
from grobot.core.llm import embedded, providers
from grobot.core.models import LLMCategory
from grobot.core.services import app_settings, llm_settings, llm_sources
from grobot.core.services.validation import field_problems, field_sentence, sentences
from grobot.core.settings import get_settings
from grobot.state.admin_state import AdminState, Refused
from grobot.state.llm_check import LLMFormChecks, Typed, check_typed, key_refusal, validated

logger = logging.getLogger(__name__)

ROUTE = "/settings"
TITLE = "Settings · GroBot"


@dataclass(frozen=True)
class CategoryInfo:
    key: str
    label: str
    description: str


CATEGORIES: tuple[CategoryInfo, ...] = (
    CategoryInfo(LLMCategory.DECISION.value, "Decision model", "Small, fast calls: whether to answer, clarifications."),
    CategoryInfo(LLMCategory.TOOLS.value, "Tools model", "Picks the tools and extracts their arguments as JSON."),
    CategoryInfo(LLMCategory.OUTPUT.value, "Output model", "Writes the answers users read (streamed)."),
)


ERROR_FIELDS = ("provider", "model", "base_url", "fallback_model", "context_window", "temperature", "repeat_penalty",
                "api_key")


def nothing_saved(problems: Any) -> str:
    """The toast of a refused save: each problem, naming its field."""
    return "Nothing was saved: " + " ".join(problems)


def llm_field_errors(category: str, message: str) -> dict[str, str]:
    """A service's error about a category's form, each problem under its own field as a sentence naming
    it (``{"output.api_key": "API key is required for ..."}``); other text goes under the model."""
    problems = field_problems(message)
    if problems and all(name in ERROR_FIELDS for name, _problem in problems):
        errors: dict[str, str] = {}
        for name, problem in problems:
            errors.setdefault(f"{category}.{name}", field_sentence(name, problem))
        return errors
    return {f"{category}.model": sentences(message)}


@dataclass(frozen=True)
class SettingInfo:
    key: str
    label: str
    help_text: str
    step: str  # of a number ("" for a text setting)


APP_SETTINGS: tuple[SettingInfo, ...] = (
    SettingInfo("log_retention_days", "Keep bot logs (days)", "Older log lines are deleted every night.", "1"),
    SettingInfo("event_retention_days", "Keep agent events (days)", "Step-by-step traces of runs, shown in Test Chat.", "1"),
    SettingInfo("max_file_bytes", "Largest file a bot may store (bytes)", "The size in words follows what you type.", "1"),
    SettingInfo("tool_timeout_seconds", "Tool call timeout (seconds)", "A tool call that takes longer fails.", "any"),
    SettingInfo(
        "acknowledge_after_seconds",
        "Acknowledge after (seconds)",
        "When tool work takes longer, the bot first says it is working on it.",
        "any",
    ),
    SettingInfo("daily_token_limit", "Daily tokens per bot", "LLM tokens in + out per UTC day; 0 = unlimited. "
                "A bot's own limit (Tokens per day, on the bot's Settings tab) wins.", "1"),
    SettingInfo("daily_call_limit", "Daily LLM calls per bot", "0 = unlimited.", "1"),
    SettingInfo("user_daily_message_limit", "Daily messages per Discord user", "Per user and bot; 0 = unlimited.", "1"),
    SettingInfo("daily_cost_limit", "Daily cost per bot", "Estimated, in the currency of the Usage page's prices; "
                "0 = unlimited. An alert at 80 %, no LLM calls at 100 %.", "any"),
    SettingInfo("monthly_token_limit", "Monthly tokens per bot", "Per UTC month; 0 = unlimited.", "1"),
    SettingInfo("monthly_call_limit", "Monthly LLM calls per bot", "Per UTC month; 0 = unlimited.", "1"),
    SettingInfo("monthly_cost_limit", "Monthly cost per bot", "Estimated, per UTC month; 0 = unlimited. A bot's own "
                "budget (Cost per month, on the bot's Settings tab) wins.", "any"),
    SettingInfo("memory_max_per_bot", "Long-term memories per bot", "Beyond this, the oldest are deleted (checked "
                "every few minutes); 0 = no cap.", "1"),
    SettingInfo("web_search_url", "Web search: SearXNG address", "Bots with web search on search this SearXNG "
                "instance (its JSON format enabled). Empty: DuckDuckGo and other engines, no key needed.", ""),
)

LLM_FIELDS = ("provider", "base_url", "model", "context_window", "temperature", "repeat_penalty", "fallback_model",
              "supports_images")


def _number_text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def load_forms(session, _user) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The current global LLM defaults (API keys as "set"/"not set") and global settings, as text."""
    llms = llm_settings.effective_llms(session=session)
    stored = llm_settings.global_rows(session=session)
    forms: dict[str, dict[str, str]] = {}
    for key, llm in llms.items():
        row = stored.get(key)
        forms[key] = {
            "provider": llm.provider,
            "base_url": row.base_url if row is not None else "",  # as saved: empty follows OLLAMA_HOST
            "model": llm.model,
            "context_window": str(llm.context_window),
            "temperature": _number_text(llm.temperature),
            "repeat_penalty": "" if llm.repeat_penalty is None else _number_text(llm.repeat_penalty),
            "fallback_model": llm.fallback_model or "",
            "supports_images": "yes" if llm.supports_images else "",
            "api_key": llm.public()["api_key"],
            "source": llm.source,
            "source_label": source_label(llm),
            "status": llm.unavailable or "",
            "base_url_hint": (f"Empty: {llm.base_url} ({llm_sources.url_source(llm.provider)})."
                              if (row is None or not row.base_url) and llm.base_url else ""),
        }
    values = app_settings.get_values(tuple(app_settings.DEFAULTS), session=session)
    return forms, {key: _number_text(value) for key, value in values.items()}


def url_hints() -> dict[str, str]:
    """Per provider, where a setting of it without a Base URL goes."""
    hints = {}
    for name, entry in providers.ENTRIES.items():
        if name == embedded.PROVIDER:
            hints[name] = "Leave it empty: the bot worker runs the model file itself."
        elif name == "ollama":
            hints[name] = f"Empty: {get_settings().ollama_host} ({llm_sources.url_source(name)})."
        else:
            hints[name] = f"Empty: {entry.base_url} ({llm_sources.PROVIDER_DEFAULT})."
    return hints


def source_label(llm: Any) -> str:
    """Where a category's settings come from, as the badge says it."""
    if llm.source == "global":
        return "Global default"
    if llm.provider == embedded.PROVIDER and llm.model == embedded.DEMO_MODEL:
        return "Built-in: tiny demo model"
    return "Built-in default (Ollama)"


DEMO_NOTICE = (
    "No LLM is configured, so the bots answer with SmolLM2-135M, a tiny demo model that runs inside GroBot: "
    "it shows that everything works, but its answers are poor. Set a real model below: Ollama (provider ollama), "
    "an OpenAI-compatible server such as OpenAI, Mistral or vLLM (provider openai), or a GGUF file on this machine "
    "(provider llamacpp, the model being its path, e.g. models/qwen2.5-7b-instruct-q4_k_m.gguf under the data dir)."
)


class SettingsState(LLMFormChecks, AdminState):
    """The forms of the Settings page (never an API key: only whether one is set)."""

    llm: dict[str, dict[str, str]] = {}
    app: dict[str, str] = {}
    errors: dict[str, str] = {}
    loaded: bool = False
    # Bumped for a form whose inputs must start over from the stored values (after its save);
    # the other forms keep what the admin typed in them.
    form_versions: dict[str, int] = {}
    models: dict[str, list[str]] = {}
    typed_file_bytes: str = ""  # what the admin types as max_file_bytes ("" = the stored value)
    chosen: dict[str, str] = {}  # per category, the provider chosen in its form (saved or not)
    url_hints: dict[str, str] = {}  # per provider, where an empty Base URL leads

    @rx.var
    def provider_hints(self) -> dict[str, str]:
        """Per category, what the provider chosen in its form means."""
        return {cat: entry.summary() if (entry := providers.entry(name)) else ""
                for cat, name in self.chosen.items()}

    @rx.var
    def base_url_hints(self) -> dict[str, str]:
        """Per category, where an empty Base URL leads with the provider chosen in its form (the stored
        setting's own hint while its provider is the chosen one)."""
        return {cat: (self.llm.get(cat, {}).get("base_url_hint", "") if name == self.llm.get(cat, {}).get("provider")
                      else self.url_hints.get(name, "")) for cat, name in self.chosen.items()}

    @rx.event
    def choose_provider(self, category: str, provider: str) -> None:
        """The provider select of ``category``'s form changed (its hints follow it)."""
        if category in self.chosen and providers.entry(provider) is not None:
            self.chosen = {**self.chosen, category: provider}
        self.edited(category)

    @rx.var
    def file_bytes_help(self) -> str:
        """The largest file's size in words, following what is typed."""
        return byte_size_text(self.typed_file_bytes or self.app.get("max_file_bytes", ""))

    @rx.event
    def type_file_bytes(self, value: str) -> None:
        self.typed_file_bytes = str(value)[:24]

    @rx.var
    def uses_demo_model(self) -> bool:
        """Whether a category falls back to the built-in demo model."""
        return any(form.get("source_label") == "Built-in: tiny demo model" for form in self.llm.values())

    def _show_forms(self, llm: dict[str, dict[str, str]], app: dict[str, str], *forms: str) -> None:
        self.llm, self.app = llm, app
        self.url_hints = url_hints()
        self.chosen = {**self.chosen, **{cat: llm[cat]["provider"] for cat in llm if not self.chosen.get(cat)
                                         or cat in forms}}

    async def _reload(self, *forms: str) -> None:
        """Read the stored values; ``forms`` (all when none given) show them afresh."""
        names = forms or (*(c.key for c in CATEGORIES), "app")
        self._show_forms(*await self._admin(load_forms), *names)
        self.typed_file_bytes = ""
        self.loaded = True
        self.form_versions = {**self.form_versions, **{name: self.form_versions.get(name, 0) + 1 for name in names}}

    async def _read(self, fn: Any) -> Any:
        return await self._admin(lambda session, _user: fn(session))

    @rx.event
    async def open(self):
        """On load: read the forms (after the page's admin check); no check result outlives the page."""
        self._forget_checks()
        self.models = {}
        if not self.loaded:
            self.errors = {}
            return await self._open()
        # Loaded again while shown (the browser reconnecting): the forms keep what is typed in them.
        try:
            self._show_forms(*await self._admin(load_forms))
        except Refused as refused:
            return refused.event
        return None

    @rx.event
    def left(self) -> None:
        """The page is gone: its forms start afresh next time."""
        self.loaded = False

    @rx.event
    async def submit_llm(self, form: dict[str, Any]):
        """A category's form: "Check connection", "Save anyway" or Save, by the intent of its button."""
        category = str(form.get("category", ""))
        if category not in {c.key for c in CATEGORIES}:
            yield rx.toast.error("Unknown category")
            return
        async for event in self._submit(category, form):
            yield event

    async def _validated(self, category: str, typed: Typed) -> llm_settings.Validated | None:
        """The one validation of Save and "Check connection": the form's own rule (a context window and a
        temperature, which the service would default), then the service's; each problem goes under its field
        (None when there is one). Raises Refused."""
        self.errors = {k: v for k, v in self.errors.items() if not k.startswith(f"{category}.")}
        problems = {f"{category}.{name}": field_sentence(name, "required") for name in ("context_window", "temperature")
                    if name not in typed.fields}
        try:
            target = await validated(self._read, typed)
        except GroBotError as exc:
            problems = {**llm_field_errors(category, str(exc)), **problems}
            target = None
        self.errors.update(problems)
        return None if problems else target

    async def _check(self, category: str, form: dict[str, Any]):
        """Check the form as Save would store it (refused as Save refuses it), then list the models of the
        server typed in it (not the saved one): no agent chain."""
        if refused := await self._refused():
            yield refused
            return
        self._forget_check(category)
        self.checking = category
        yield
        typed = Typed.from_form(form)
        try:
            if await self._validated(category, typed) is None:
                self.checking = ""
                yield rx.toast.error("Not checked: correct the highlighted fields first")
                return
            result = await check_typed(self._read, typed)
        except Refused as refused:
            self.checking = ""
            yield refused.event
            return
        self.models = {**self.models, category: list(result.models)}
        self._checked(category, result)

    async def _save_llm(self, category: str, form: dict[str, Any], *, check_key: bool):
        """Save one category's global default; errors go next to their fields, nothing is lost."""
        typed = Typed.from_form(form)
        self._forget_check(category)
        if refused := await self._refused():  # an admin, before any request to the typed server
            return refused
        try:
            target = await self._validated(category, typed)
            if target is None:
                return rx.toast.error(nothing_saved(v for k, v in self.errors.items() if k.startswith(f"{category}.")))
            refusal = await key_refusal(self._read, typed, target) if check_key else None
        except Refused as refused:
            return refused.event
        if refusal is not None and refusal.status == "rejected":
            self.errors[f"{category}.api_key"] = refusal.message
            return rx.toast.error(refusal.message)
        if refusal is not None:
            self.unverified = {**self.unverified, category: refusal.message}
            return rx.toast.warning("Not saved yet: the API key could not be checked")

        def work(session, user):
            llm_settings.set_llm(session=session, category=category, api_key=typed.api_key,
                                 clear_api_key=typed.clear_key, **typed.fields)
            logger.info("Admin %s changed the global %s LLM settings%s", user.username, category,
                        " (the key was not checked)" if typed.api_key and not check_key else "")

        try:
            await self._admin(work, readonly=False)
            await self._reload(category)
        except Refused as refused:
            return refused.event
        except GroBotError as exc:
            said = llm_field_errors(category, str(exc))
            self.errors.update(said)
            return rx.toast.error(nothing_saved(said.values()))
        label = next(c.label for c in CATEGORIES if c.key == category)
        return rx.toast.success(f"{label} saved")

    @rx.event
    async def save_app(self, form: dict[str, Any]):
        """Save the global settings, all or none; each error shows next to its field."""
        values = {info.key: str(form.get(info.key, "")) for info in APP_SETTINGS}
        self.errors = {k: v for k, v in self.errors.items() if not k.startswith("app.")}
        problems: dict[str, str] = {}

        def work(session, user):
            problems.update(app_settings.set_values(values, session=session))
            if not problems:
                logger.info("Admin %s changed the global settings", user.username)

        try:
            await self._admin(work, readonly=False)
            if problems:
                labels = {info.key: info.label for info in APP_SETTINGS}
                said = {f"app.{k}": field_sentence(k, v, labels.get(k)) for k, v in problems.items()}
                self.errors.update(said)
                return rx.toast.error(nothing_saved(said.values()))
            await self._reload("app")
        except Refused as refused:
            return refused.event
        return rx.toast.success("Settings saved")
