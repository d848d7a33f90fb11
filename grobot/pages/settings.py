"""The Settings page (admins): the global LLM defaults per category and the global settings.

Forms are uncontrolled: what the admin typed stays in the page until it is saved, so an
error (shown next to its field) loses nothing. API keys are write-only: the page shows
whether one is stored and accepts a new value, which only passes through the submit handler.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import reflex as rx

from grobot.components.formatting import byte_size_text
from grobot.components.forms import field, secret_badge, section
from grobot.components.layout import page_layout
from grobot.core.errors import GroBotError
from grobot.core.llm import embedded
from grobot.core.models import LLMCategory
from grobot.core.services import app_settings, llm_settings
from grobot.core.services.validation import field_errors
from grobot.state.admin_state import AdminState, Refused

logger = logging.getLogger(__name__)

ROUTE = "/settings"
TITLE = "Settings · GroBot"
CHECK_TIMEOUT_SECONDS = 10.0
MAX_MODELS_SHOWN = 40


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


@dataclass(frozen=True)
class SettingInfo:
    key: str
    label: str
    help_text: str
    step: str


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
                "A bot's own limit (bot settings) wins.", "1"),
    SettingInfo("daily_call_limit", "Daily LLM calls per bot", "0 = unlimited.", "1"),
    SettingInfo("user_daily_message_limit", "Daily messages per Discord user", "Per user and bot; 0 = unlimited.", "1"),
    SettingInfo("memory_max_per_bot", "Long-term memories per bot", "Beyond this, the oldest are deleted (checked "
                "every few minutes); 0 = no cap.", "1"),
)

LLM_FIELDS = ("provider", "base_url", "model", "context_window", "temperature", "fallback_model", "supports_images")


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
            "fallback_model": llm.fallback_model or "",
            "supports_images": "yes" if llm.supports_images else "",
            "api_key": llm.public()["api_key"],
            "source": llm.source,
            "source_label": source_label(llm),
            "status": llm.unavailable or "",
        }
    values = app_settings.get_values(tuple(app_settings.DEFAULTS), session=session)
    return forms, {key: _number_text(value) for key, value in values.items()}


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


def _llm_fields(form: dict[str, Any]) -> dict[str, Any]:
    """The submitted LLM form as the service's fields (empty optional values left out)."""
    fields: dict[str, Any] = {
        "provider": str(form.get("provider", "")).strip(),
        "base_url": str(form.get("base_url", "")).strip(),
        "model": str(form.get("model", "")).strip(),
        "fallback_model": str(form.get("fallback_model", "")).strip() or None,
        "supports_images": bool(form.get("supports_images")),
    }
    for key in ("context_window", "temperature"):
        text = str(form.get(key, "")).strip()
        fields[key] = text if text else None
    return fields


class SettingsState(AdminState):
    """The forms of the Settings page (never an API key: only whether one is set)."""

    llm: dict[str, dict[str, str]] = {}

    @rx.var
    def uses_demo_model(self) -> bool:
        """Whether a category falls back to the built-in demo model."""
        return any(form.get("source_label") == "Built-in: tiny demo model" for form in self.llm.values())
    app: dict[str, str] = {}
    errors: dict[str, str] = {}
    loaded: bool = False
    # Bumped for a form whose inputs must start over from the stored values (after its save);
    # the other forms keep what the admin typed in them.
    form_versions: dict[str, int] = {}
    checking: str = ""
    models: dict[str, list[str]] = {}
    check_result: dict[str, str] = {}
    check_failed: dict[str, bool] = {}
    typed_file_bytes: str = ""  # what the admin types as max_file_bytes ("" = the stored value)

    @rx.var
    def file_bytes_help(self) -> str:
        """The largest file's size in words, following what is typed."""
        return byte_size_text(self.typed_file_bytes or self.app.get("max_file_bytes", ""))

    @rx.event
    def type_file_bytes(self, value: str) -> None:
        self.typed_file_bytes = str(value)[:24]

    async def _reload(self, *forms: str) -> None:
        """Read the stored values; ``forms`` (all when none given) show them afresh."""
        self.llm, self.app = await self._admin(load_forms)
        self.typed_file_bytes = ""
        self.loaded = True
        names = forms or (*(c.key for c in CATEGORIES), "app")
        self.form_versions = {**self.form_versions, **{name: self.form_versions.get(name, 0) + 1 for name in names}}

    @rx.event
    async def open(self):
        """On load: read the forms (after the page's admin check)."""
        self.errors = {}
        return await self._open()

    @rx.event
    async def save_llm(self, form: dict[str, Any]):
        """Save one category's global default; errors go next to their fields, nothing is lost."""
        category = str(form.get("category", ""))
        if category not in {c.key for c in CATEGORIES}:
            return rx.toast.error("Unknown category")
        fields = llm_settings.with_default_model({k: v for k, v in _llm_fields(form).items() if v is not None})
        problems = field_errors(llm_settings.LLMFields, fields)
        for key in ("context_window", "temperature"):
            if key not in fields:
                problems[key] = "required"
        self.errors = {k: v for k, v in self.errors.items() if not k.startswith(f"{category}.")}
        if problems:
            self.errors.update({f"{category}.{k}": v for k, v in problems.items()})
            return rx.toast.error("Nothing was saved: check the highlighted fields")
        api_key = str(form.get("api_key", "")).strip() or None
        clear_key = bool(form.get("clear_api_key")) and api_key is None

        def work(session, user):
            llm_settings.set_llm(session=session, category=category, api_key=api_key, clear_api_key=clear_key, **fields)
            logger.info("Admin %s changed the global %s LLM settings", user.username, category)

        try:
            await self._admin(work, readonly=False)
            await self._reload(category)
        except Refused as refused:
            return refused.event
        except GroBotError as exc:
            self.errors[f"{category}.model"] = str(exc)
            return rx.toast.error(str(exc))
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
                self.errors.update({f"app.{k}": v for k, v in problems.items()})
                return rx.toast.error("Nothing was saved: check the highlighted fields")
            await self._reload("app")
        except Refused as refused:
            return refused.event
        return rx.toast.success("Settings saved")

    @rx.event
    async def check_connection(self, category: str):
        """List the models of the server a category's saved settings point at (no agent chain)."""
        if category not in {c.key for c in CATEGORIES}:
            return
        if refused := await self._refused():
            yield refused
            return
        self.checking = category
        yield
        try:
            models = await asyncio.wait_for(llm_settings.list_models_for(category=category), CHECK_TIMEOUT_SECONDS)
        except asyncio.TimeoutError:
            self._check_done(category, [], f"No answer within {CHECK_TIMEOUT_SECONDS:g} s")
        except GroBotError as exc:
            self._check_done(category, [], str(exc))
        except Exception as exc:  # a server answering something unexpected
            logger.warning("Listing the models of the %s server failed: %s", category, type(exc).__name__)
            self._check_done(category, [], f"The server could not be reached ({type(exc).__name__})")
        else:
            shown = sorted(models)[:MAX_MODELS_SHOWN]
            more = f" (first {len(shown)} shown)" if len(models) > len(shown) else ""
            self._check_done(category, shown, f"Connected: {len(models)} model{'' if len(models) == 1 else 's'} available{more}")

    def _check_done(self, category: str, models: list[str], message: str) -> None:
        self.checking = ""
        self.models = {**self.models, category: models}
        self.check_result = {**self.check_result, category: message}
        self.check_failed = {**self.check_failed, category: not models and not message.startswith("Connected")}


def _error(key: str) -> rx.Var:
    return SettingsState.errors.get(key, "")


def _input(form_key: str, name: str, value: rx.Var, **props: Any) -> rx.Component:
    return rx.input(
        id=f"{form_key}-{name}",
        name=name,
        default_value=value,
        width="100%",
        **props,
    )


PROVIDER_HELP = ("mistral, xai (Grok), deepseek, groq, openrouter: their own service and default model, with an "
                 "API key; openai: also any OpenAI-compatible server (give its base URL).")


def llm_form(info: CategoryInfo) -> rx.Component:
    """One category's global default."""
    cat = info.key
    values = SettingsState.llm[cat]
    ident = f"llm-{cat}"
    return rx.form(
        rx.el.input(type="hidden", name="category", value=cat),
        rx.grid(
            field(
                "Provider",
                rx.select(
                    list(llm_settings.PROVIDERS),
                    name="provider",
                    default_value=values["provider"],
                    id=f"{ident}-provider",
                    width="100%",
                ),
                input_id=f"{ident}-provider",
                error=_error(f"{cat}.provider"),
                help_text=PROVIDER_HELP,
            ),
            field(
                "Model",
                _input(ident, "model", values["model"], placeholder="Empty: the provider's default model"),
                input_id=f"{ident}-model",
                error=_error(f"{cat}.model"),
            ),
            field(
                "Base URL",
                _input(ident, "base_url", values["base_url"], placeholder="Empty: OLLAMA_HOST, or the provider's API"),
                input_id=f"{ident}-base_url",
                error=_error(f"{cat}.base_url"),
            ),
            field(
                "Fallback model",
                _input(ident, "fallback_model", values["fallback_model"], placeholder="Optional"),
                input_id=f"{ident}-fallback_model",
                error=_error(f"{cat}.fallback_model"),
                help_text="Used when the model fails.",
            ),
            field(
                "Context window (tokens)",
                _input(ident, "context_window", values["context_window"], type="number", step="1"),
                input_id=f"{ident}-context_window",
                error=_error(f"{cat}.context_window"),
            ),
            field(
                "Temperature",
                _input(ident, "temperature", values["temperature"], type="number", step="0.05"),
                input_id=f"{ident}-temperature",
                error=_error(f"{cat}.temperature"),
                help_text="0 to 2.",
            ),
            columns=rx.breakpoints(initial="1", sm="2"),
            spacing="4",
            width="100%",
        ),
        rx.vstack(
            rx.hstack(
                rx.el.label(rx.text("API key", size="2", weight="medium"), html_for=f"{ident}-api_key"),
                secret_badge(values["api_key"] == "set", testid=f"{ident}-api-key-state"),
                align="center",
                spacing="2",
            ),
            rx.input(
                id=f"{ident}-api_key",
                name="api_key",
                type="password",
                placeholder="Type a new key to replace the stored one",
                auto_complete="new-password",
                width="100%",
            ),
            rx.hstack(
                rx.cond(
                    values["api_key"] == "set",
                    rx.el.label(
                        rx.hstack(rx.checkbox(name="clear_api_key", id=f"{ident}-clear"), rx.text("Remove the stored key", size="2"), spacing="2", align="center"),
                    ),
                ),
                rx.el.label(
                    rx.hstack(
                        rx.checkbox(name="supports_images", default_checked=values["supports_images"] == "yes"),
                        rx.text("The model accepts images", size="2"),
                        spacing="2",
                        align="center",
                    ),
                ),
                spacing="5",
                wrap="wrap",
            ),
            spacing="2",
            width="100%",
            margin_top="1rem",
        ),
        rx.hstack(
            rx.button(rx.icon("save", size=16), "Save", type="submit"),
            rx.button(
                rx.cond(SettingsState.checking == cat, rx.spinner(size="2"), rx.icon("plug-zap", size=16)),
                "Check connection",
                type="button",
                variant="soft",
                color_scheme="gray",
                disabled=SettingsState.checking != "",
                on_click=SettingsState.check_connection(cat),
                title="Lists the models of the server in the saved settings",
            ),
            spacing="3",
            margin_top="1rem",
        ),
        check_result(cat, ident),
        on_submit=SettingsState.save_llm,
        reset_on_submit=False,
        key=f"{ident}-{SettingsState.form_versions.get(cat, 0)}",
        width="100%",
        aria_label=info.label,
        no_validate=True,
    )


def check_result(cat: str, ident: str) -> rx.Component:
    """What "Check connection" found: the models (a click puts one into the Model field), or why not."""
    return rx.cond(
        SettingsState.check_result.contains(cat),
        rx.callout(
            rx.vstack(
                rx.text(SettingsState.check_result[cat], size="2"),
                rx.flex(
                    rx.foreach(
                        SettingsState.models.get(cat, []),
                        lambda name: rx.badge(
                            name,
                            variant="surface",
                            cursor="pointer",
                            title="Use this model",
                            on_click=rx.set_value(f"{ident}-model", name),
                        ),
                    ),
                    gap="0.4rem",
                    wrap="wrap",
                ),
                spacing="2",
            ),
            icon=rx.cond(SettingsState.check_failed[cat], "triangle-alert", "circle-check"),
            color_scheme=rx.cond(SettingsState.check_failed[cat], "red", "green"),
            margin_top="1rem",
            width="100%",
            data_testid=f"{ident}-check",
        ),
    )


def llm_section(info: CategoryInfo) -> rx.Component:
    values = SettingsState.llm[info.key]
    return section(
        info.label,
        info.description,
        llm_form(info),
        rx.cond(
            values["status"] != "",
            rx.callout(values["status"], icon="triangle-alert", color_scheme="red", width="100%",
                       data_testid=f"llm-{info.key}-status"),
        ),
        actions=rx.badge(
            values["source_label"],
            variant="soft",
            color_scheme=rx.cond(values["source"] == "global", "indigo", "gray"),
        ),
    )


def app_settings_form() -> rx.Component:
    return section(
        "Fleet settings",
        "Limits and housekeeping that apply to every bot.",
        rx.form(
            rx.grid(
                *[
                    field(
                        info.label,
                        rx.input(
                            id=f"app-{info.key}",
                            name=info.key,
                            type="number",
                            step=info.step,
                            default_value=SettingsState.app[info.key],
                            width="100%",
                            **({"on_change": SettingsState.type_file_bytes} if info.key == "max_file_bytes" else {}),
                        ),
                        input_id=f"app-{info.key}",
                        error=_error(f"app.{info.key}"),
                        help_text=SettingsState.file_bytes_help if info.key == "max_file_bytes" else info.help_text,
                    )
                    for info in APP_SETTINGS
                ],
                columns=rx.breakpoints(initial="1", sm="2"),
                spacing="4",
                width="100%",
            ),
            rx.button(rx.icon("save", size=16), "Save settings", type="submit", margin_top="1rem"),
            on_submit=SettingsState.save_app,
            reset_on_submit=False,
            key=f"app-{SettingsState.form_versions.get('app', 0)}",
            width="100%",
            aria_label="Fleet settings",
            no_validate=True,
        ),
    )


def settings_page() -> rx.Component:
    """The Settings page."""
    return page_layout(
        rx.cond(
            SettingsState.loaded,
            rx.vstack(
                rx.callout(
                    "These defaults apply to every bot without its own LLM settings. Bots read them for each "
                    "message: a change applies at once, without a restart.",
                    icon="info",
                    variant="surface",
                    width="100%",
                ),
                rx.cond(
                    SettingsState.uses_demo_model,
                    rx.callout(DEMO_NOTICE, icon="sparkles", color_scheme="amber", variant="surface", width="100%",
                               data_testid="demo-model-notice"),
                ),
                *[llm_section(info) for info in CATEGORIES],
                app_settings_form(),
                spacing="5",
                width="100%",
            ),
            rx.center(rx.spinner(size="3"), padding="3rem", width="100%"),
        ),
        active="settings",
        title="Settings",
        subtitle="Global LLM defaults and fleet-wide limits",
    )
