"""The Settings page (admins): the global LLM defaults per category and the global settings.

Each card saves on its own (its Save button); the state and its handlers live in
:mod:`grobot.pages.settings_state`. Leaving the page with an edited card asks first
(``assets/unsaved_guard.js``).
"""

from __future__ import annotations

from typing import Any

import reflex as rx

from grobot.components.forms import field, secret_badge, section
from grobot.components.layout import page_layout
from grobot.components.llm_check import check_callout, unverified_callout
from grobot.components.unsaved import confirm_when_checked, guard_attrs, unsaved_guard
from grobot.core.services import llm_settings
from grobot.pages.settings_state import APP_SETTINGS, CATEGORIES, DEMO_NOTICE, ROUTE, TITLE, CategoryInfo, SettingsState

__all__ = ["CATEGORIES", "ROUTE", "TITLE", "SettingsState", "llm_form", "settings_page"]


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


def _edited(category: str) -> Any:
    """The on_change of an LLM form's field: a check result about other values is cleared."""
    return lambda _value: SettingsState.edited(category)  # every change: a throttle could drop the one that matters


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
                    on_change=lambda value: SettingsState.choose_provider(cat, value),
                ),
                input_id=f"{ident}-provider",
                error=_error(f"{cat}.provider"),
                help_text=SettingsState.provider_hints.get(cat, ""),
            ),
            field(
                "Model",
                _input(ident, "model", values["model"], on_change=_edited(cat), placeholder="Empty: the provider's default model"),
                input_id=f"{ident}-model",
                error=_error(f"{cat}.model"),
            ),
            field(
                "Base URL",
                _input(ident, "base_url", values["base_url"], on_change=_edited(cat),
                       placeholder="Empty: the provider's own address (below)"),
                input_id=f"{ident}-base_url",
                error=_error(f"{cat}.base_url"),
                help_text=SettingsState.base_url_hints.get(cat, ""),
            ),
            field(
                "Fallback model",
                _input(ident, "fallback_model", values["fallback_model"], on_change=_edited(cat), placeholder="Optional"),
                input_id=f"{ident}-fallback_model",
                error=_error(f"{cat}.fallback_model"),
                help_text="Used when the model fails.",
            ),
            field(
                "Context window (tokens)",
                _input(ident, "context_window", values["context_window"], on_change=_edited(cat), type="number", step="1"),
                input_id=f"{ident}-context_window",
                error=_error(f"{cat}.context_window"),
            ),
            field(
                "Temperature",
                _input(ident, "temperature", values["temperature"], on_change=_edited(cat), type="number", step="0.05"),
                input_id=f"{ident}-temperature",
                error=_error(f"{cat}.temperature"),
                help_text="0 to 2.",
            ),
            field(
                "Repetition penalty",
                _input(ident, "repeat_penalty", values["repeat_penalty"], on_change=_edited(cat), type="number",
                       step="0.05", placeholder="Empty: the provider's default"),
                input_id=f"{ident}-repeat_penalty",
                error=_error(f"{cat}.repeat_penalty"),
                help_text="1 (off) to 2, for the answers; the embedded models' default stops a small model's loops.",
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
                on_change=_edited(cat),
            ),
            rx.text("A new key is checked with the provider (its model list) before it is saved. A stored key "
                    "stays only with the same provider and server.", size="1",
                    color=rx.color("gray", 11)),
            rx.cond(_error(f"{cat}.api_key"),
                    rx.text(_error(f"{cat}.api_key"), size="1", color=rx.color("red", 11), role="alert",
                            data_field_error=f"{ident}-api_key")),
            rx.hstack(
                rx.cond(
                    values["api_key"] == "set",
                    rx.el.label(
                        rx.hstack(rx.checkbox(name="clear_api_key", id=f"{ident}-clear",
                                              **confirm_when_checked(
                                                  f"Remove the stored API key of the {info.label.lower()}?")),
                                  rx.text("Remove the stored key", size="2"), spacing="2", align="center"),
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
                type="submit",
                variant="soft",
                color_scheme="gray",
                disabled=SettingsState.checking != "",
                on_click=SettingsState.set_intent(cat, "check"),
                title="Asks the server typed above for its models (nothing is saved)",
                custom_attrs={"data-no-confirm": "true"},
            ),
            spacing="3",
            margin_top="1rem",
        ),
        check_result(cat, ident),
        on_submit=SettingsState.submit_llm,
        reset_on_submit=False,
        key=f"{ident}-{SettingsState.form_versions.get(cat, 0)}",
        id=f"{ident}-form",
        width="100%",
        aria_label=info.label,
        no_validate=True,
        **guard_attrs(),
    )


def check_result(cat: str, ident: str) -> rx.Component:
    """What "Check connection" found, or why a typed key could not be checked (with "Save anyway")."""
    return rx.fragment(
        rx.cond(
            SettingsState.check_result.contains(cat),  # type: ignore[attr-defined]
            rx.box(check_callout(SettingsState.check_result[cat], SettingsState.check_failed[cat],
                                 SettingsState.models.get(cat, []), model_input_id=f"{ident}-model",
                                 testid=f"{ident}-check"), margin_top="1rem", width="100%"),
        ),
        rx.cond(
            SettingsState.unverified.contains(cat),  # type: ignore[attr-defined]
            rx.box(unverified_callout(SettingsState.unverified[cat],
                                      on_save_anyway=SettingsState.set_intent(cat, "force"),
                                      testid=f"{ident}-unverified"), margin_top="1rem", width="100%"),
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
                            **({"type": "number", "step": info.step} if info.step else {"type": "url"}),
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
            **guard_attrs(),
        ),
    )


def settings_page() -> rx.Component:
    """The Settings page."""
    return page_layout(
        rx.cond(
            SettingsState.loaded,
            rx.vstack(
                unsaved_guard(),
                rx.box(on_unmount=SettingsState.left, display="none"),
                rx.callout(
                    "These defaults apply to every bot without its own LLM settings. Bots read them for each "
                    "message: a change applies at once, without a restart. Each card saves on its own, with "
                    "its Save button; leaving the page with unsaved edits asks first.",
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
