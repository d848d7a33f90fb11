"""The cards of a bot's Settings tab that save on their own (each says so): the Discord token, one card
per LLM category, one per MCP server, and the danger zone. Destructive actions ask first."""

from __future__ import annotations

from typing import Any

import reflex as rx

from grobot.components.empty_state import command_line
from grobot.components.forms import LAID_OUT_WHEN_SHOWN, error_text
from grobot.components.llm_check import check_callout, unverified_callout
from grobot.components.unsaved import confirm_when_checked, guard_attrs
from grobot.core.services import llm_settings
from grobot.pages.bot_mcp_tools import mcp_check, tool_settings
from grobot.pages.bot_settings_state import SOURCE_LABELS, BotSettingsState, LLMRow, McpRow
from grobot.state.llm_check import INHERIT

ADD_MCP_COMMAND = "python -m grobot mcp add --preset time"
OWN_SAVE = "Saves on its own"


def own_save_badge(text: str = OWN_SAVE) -> rx.Component:
    """Says that a card is saved by its own button, not by the bar of the bot's fields."""
    return rx.badge(rx.icon("save", size=12), text, variant="outline", color_scheme="gray", size="1",
                    data_testid="own-save")


def card_section(title: str, description: str, *children: rx.Component, saves: str = OWN_SAVE,
                 badge: rx.Component | None = None, **props: Any) -> rx.Component:
    """A titled card of the settings page; its badge says what saves it (by default: its own button)."""
    if badge is None and saves:
        badge = own_save_badge(saves)
    return rx.card(
        rx.vstack(
            rx.flex(  # the badge goes under the title on narrow screens
                rx.vstack(rx.heading(title, size="4", as_="h2"),
                          rx.text(description, size="2", color=rx.color("gray", 11)), spacing="1",
                          flex="1 1 16rem"),
                badge if badge is not None else rx.fragment(),
                align="start",
                justify="between",
                wrap="wrap",
                gap="0.5rem",
                width="100%",
            ),
            *children,
            spacing="4",
            width="100%",
        ),
        width="100%",
        size="3",
        **LAID_OUT_WHEN_SHOWN,
        **props,
    )


def confirm_button(trigger: rx.Component, *, title: str | rx.Var, message: str, confirm: str,
                   on_confirm: Any) -> rx.Component:
    """A button that asks before a destructive action (Cancel, or the red ``confirm``)."""
    return rx.alert_dialog.root(
        rx.alert_dialog.trigger(trigger),
        rx.alert_dialog.content(
            rx.alert_dialog.title(title),
            rx.alert_dialog.description(message, size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button(confirm, color_scheme="red", on_click=on_confirm)),
                spacing="3",
                justify="end",
                margin_top="1rem",
            ),
            max_width="28rem",
        ),
    )


# --------------------------------------------------------------------------- Discord token


def token_section() -> rx.Component:
    return card_section(
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
                spacing="3",
                width="100%",
            ),
            on_submit=BotSettingsState.replace_token,
            reset_on_submit=False,
            key=f"token-{BotSettingsState.revision}-{BotSettingsState.versions.get('token', 0)}",
            width="100%",
            **guard_attrs(),
        ),
        rx.cond(BotSettingsState.token_set,
                confirm_button(rx.button("Remove the token", type="button", variant="ghost", color_scheme="red",
                                         size="1", width="fit-content"),
                               title="Remove the Discord token?",
                               message="The bot goes offline until a new token is set.",
                               confirm="Remove token", on_confirm=BotSettingsState.clear_token)),
        rx.cond(BotSettingsState.token_error != "",
                error_text(BotSettingsState.token_error, size="2")),
        saves="Saves on its own: Replace token",
    )


# --------------------------------------------------------------------------- LLM categories


def _edited(category: rx.Var) -> Any:
    """The on_change of an LLM card's field: a check result about other values is cleared."""
    return lambda _value: BotSettingsState.edited(category)  # every change: a throttle could drop the one that matters


def labelled(label: str, control: rx.Component, hint: rx.Var | str = "") -> rx.Component:
    """A small label over its control, with a line under it when there is one: where an empty field's value
    comes from ("From the global setting."), or "Set for this bot."."""
    return rx.vstack(
        rx.el.label(rx.text(label, size="1", weight="medium"), control,
                    display="flex", flex_direction="column", gap="0.25rem", width="100%"),
        rx.cond(hint != "", rx.text(hint, size="1", color=rx.color("gray", 11), data_testid="llm-hint"))
        if not isinstance(hint, str) else rx.fragment(),
        spacing="1",
        width="100%",
    )


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


# --------------------------------------------------------------------------- MCP servers


def mcp_row(row: McpRow) -> rx.Component:
    stop = rx.cond(row.linked, "Stop using " + row.name + " for this bot?", "")
    return rx.card(
        rx.form(
            rx.vstack(
                rx.hstack(
                    rx.el.label(rx.hstack(
                        rx.checkbox(name="enabled", default_checked=row.linked, disabled=~row.server_enabled,
                                    custom_attrs={"data-confirm-when-unchecked": stop}),
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
            key=f"mcp-{row.server_id}-{BotSettingsState.revision}-"
                f"{BotSettingsState.versions.get('mcp-' + row.server_id.to_string(), 0)}",
            **guard_attrs(),
        ),
        width="100%",
        data_server=row.name,
    )


def mcp_section() -> rx.Component:
    return card_section(
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
        saves="Each server saves on its own",
    )


# --------------------------------------------------------------------------- danger zone


def delete_section() -> rx.Component:
    return card_section(
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
        saves="",
        border=f"1px solid {rx.color('red', 6)}",
    )
