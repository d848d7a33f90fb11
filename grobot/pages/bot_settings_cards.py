"""The cards of a bot's Settings tab that save on their own (each says so): the Discord token and the
danger zone, and the frame every card shares (the LLM cards: :mod:`grobot.pages.bot_llm_settings`; the
MCP cards: :mod:`grobot.pages.bot_mcp_tools`). Destructive actions ask first."""

from __future__ import annotations

from typing import Any

import reflex as rx

from grobot.components.forms import LAID_OUT_WHEN_SHOWN, error_text
from grobot.components.unsaved import guard_attrs
from grobot.pages.bot_settings_state import BotSettingsState

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


# --------------------------------------------------------------------------- MCP servers


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
