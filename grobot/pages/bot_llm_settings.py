"""The LLM cards of a bot's Settings tab: one card per category (decision, tools, output), each saved on its own."""

from __future__ import annotations

from typing import Any

import reflex as rx

from grobot.components.llm_check import check_callout, unverified_callout
from grobot.components.unsaved import confirm_when_checked, guard_attrs
from grobot.core.services import llm_settings
from grobot.pages.bot_llm_settings_state import SOURCE_LABELS, LLMRow
from grobot.pages.bot_settings_cards import card_section, confirm_button, labelled
from grobot.pages.bot_settings_state import BotSettingsState
from grobot.state.llm_check import INHERIT


def _edited(category: rx.Var) -> Any:
    """The on_change of an LLM card's field: a check result about other values is cleared."""
    return lambda _value: BotSettingsState.edited(category)  # every change: a throttle could drop the one that matters


def _hint(row: LLMRow, name: str) -> rx.Var:
    """"Set for this bot." for a value of its own, else where the empty field's value comes from (for the
    provider chosen in the card)."""
    return rx.cond(row.hints[name] != "", row.hints[name],
                   row.sources[BotSettingsState.chosen[row.category]][name])  # type: ignore[return-value]


def provider_select(row: LLMRow) -> rx.Component:
    """The provider: "Inherit (ollama, from the global setting)" until the bot has a provider of its own."""
    return rx.select.root(
        rx.select.trigger(width="100%", data_testid="llm-provider"),
        rx.select.content(
            rx.select.item(row.provider_label, value=INHERIT),
            rx.select.separator(),
            *[rx.select.item(name, value=name) for name in llm_settings.PROVIDERS],
        ),
        name="provider",
        value=BotSettingsState.chosen[row.category],  # what the empty fields' "Inherit (...)" follow
        size="2",
        on_change=lambda value: BotSettingsState.choose_provider(row.category, value),
    )


def llm_card(row: LLMRow) -> rx.Component:
    small = {"size": "2", "width": "100%"}
    cat = row.category
    inherit = row.inherits[BotSettingsState.chosen[cat]]  # what each empty field takes with the chosen provider
    return rx.card(
        rx.form(
            rx.vstack(
                rx.hstack(
                    rx.vstack(rx.heading(cat.upper(), size="2", letter_spacing="0.05em"),
                              rx.text(row.help, size="1", color=rx.color("gray", 11)), spacing="0"),
                    rx.spacer(),
                    rx.badge(rx.match(row.source, *SOURCE_LABELS.items(), "Built-in default"),
                             color_scheme=rx.cond(row.source == "bot", "indigo", "gray"), variant="soft",
                             data_testid="llm-source"),
                    align="start",
                    width="100%",
                ),
                rx.el.input(type="hidden", name="category", value=cat),
                rx.el.datalist(rx.foreach(BotSettingsState.models[cat], lambda name: rx.el.option(value=name)),
                               id=f"models-{cat}"),
                labelled("Provider", provider_select(row),
                         rx.cond(row.hints["provider"] != "", row.hints["provider"], row.sources[INHERIT]["provider"])),
                labelled("Model", rx.input(name="model", id=f"bot-llm-{cat}-model", default_value=row.model,
                                           custom_attrs={"list": f"models-{cat}"}, placeholder=inherit["model"],
                                           on_change=_edited(cat), **small),
                         _hint(row, "model")),
                labelled("Base URL", rx.input(name="base_url", default_value=row.base_url,
                                              placeholder=inherit["base_url"], on_change=_edited(cat), **small),
                         _hint(row, "base_url")),
                rx.grid(
                    labelled("Context window", rx.input(name="context_window", default_value=row.context_window,
                                                        type="number", placeholder=inherit["context_window"],
                                                        **small),
                             _hint(row, "context_window")),
                    labelled("Temperature", rx.input(name="temperature", default_value=row.temperature,
                                                     type="number", step="0.1", placeholder=inherit["temperature"],
                                                     **small),
                             _hint(row, "temperature")),
                    columns="2", spacing="3", width="100%",
                ),
                labelled("Repetition penalty", rx.input(name="repeat_penalty", default_value=row.repeat_penalty,
                                                        type="number", step="0.05",
                                                        placeholder=inherit["repeat_penalty"], **small),
                         _hint(row, "repeat_penalty")),
                labelled("Fallback model", rx.input(name="fallback_model", default_value=row.fallback_model,
                                                    placeholder="None", **small)),
                rx.el.label(
                    rx.hstack(rx.text("API key", size="1", weight="medium"),
                              rx.badge(rx.cond(row.api_key_set, "set", "not set"), size="1", variant="soft",
                                       color_scheme=rx.cond(row.api_key_set, "green", "gray")), spacing="2"),
                    rx.input(name="api_key", type="password", placeholder="Type a new key to replace it",
                             auto_complete="off", on_change=_edited(cat), **small),
                    rx.text(rx.cond(row.hints.contains("api_key"), row.hints["api_key"],  # type: ignore[attr-defined]
                                    "A new key is checked with the provider before it is saved; a stored key stays only with the "
                                    "same provider and server."),
                            size="1", color=rx.color("gray", 11)),
                    display="flex", flex_direction="column", gap="0.25rem", width="100%"),
                rx.hstack(
                    rx.el.label(rx.hstack(rx.checkbox(name="supports_images", default_checked=row.supports_images),
                                          rx.text("Reads images", size="1"), spacing="2", align="center")),
                    rx.cond(row.api_key_set,
                            rx.el.label(rx.hstack(
                                rx.checkbox(name="clear_api_key",
                                            **confirm_when_checked(f"Remove the API key of the {cat} model?")),
                                rx.text("Remove the key", size="1"), spacing="2", align="center"))),
                    spacing="4",
                ),
                rx.cond(BotSettingsState.llm_errors.contains(cat),  # type: ignore[attr-defined]
                        rx.callout(BotSettingsState.llm_errors[cat], icon="triangle-alert", color_scheme="red",
                                   size="1", width="100%", data_testid="llm-error")),
                rx.hstack(
                    rx.button("Save " + cat, type="submit", variant="soft", size="2"),
                    rx.button(rx.cond(BotSettingsState.checking == cat, rx.spinner(size="1"),
                                      rx.icon("plug-zap", size=14)),
                              "Check connection", type="submit", variant="ghost", size="2",
                              disabled=BotSettingsState.checking != "",
                              on_click=BotSettingsState.set_intent(cat, "check"),
                              title="Asks the server typed above for its models (nothing is saved)",
                              custom_attrs={"data-no-confirm": "true"}),
                    rx.spacer(),
                    width="100%",
                    align="center",
                    wrap="wrap",
                ),
                rx.cond(BotSettingsState.check_result.contains(cat),  # type: ignore[attr-defined]
                        check_callout(BotSettingsState.check_result[cat], BotSettingsState.check_failed[cat],
                                      BotSettingsState.models[cat], model_input_id=f"bot-llm-{cat}-model",
                                      testid="llm-check")),
                rx.cond(BotSettingsState.unverified.contains(cat),  # type: ignore[attr-defined]
                        unverified_callout(BotSettingsState.unverified[cat],
                                           on_save_anyway=BotSettingsState.set_intent(cat, "force"),
                                           testid="llm-unverified")),
                spacing="3",
                width="100%",
            ),
            on_submit=BotSettingsState.submit_llm,
            reset_on_submit=False,
            key=f"{cat}-{BotSettingsState.revision}-{BotSettingsState.versions.get('llm-' + cat, 0)}",
            data_category=cat,
            **guard_attrs(),
        ),
        rx.cond(row.source == "bot",
                confirm_button(rx.button("Use global default", type="button", variant="ghost", color_scheme="gray",
                                         size="2", margin_top="0.5rem"),
                               title=f"Use the global default for {cat}?",
                               message="This bot's own settings of this category, its API key included, are deleted.",
                               confirm="Use global default", on_confirm=BotSettingsState.reset_llm(cat))),
        width="100%",
    )


def llm_section() -> rx.Component:
    return card_section(
        "Language models", "Per category, the bot can use its own model instead of the global default. Only what "
                           "you fill in is stored for this bot; an empty field inherits what it shows in grey.",
        rx.grid(rx.foreach(BotSettingsState.llms, llm_card), columns=rx.breakpoints(initial="1", lg="3"), spacing="4",
                width="100%"),
        saves="Each model saves on its own",
    )
