"""The Settings tab's "Persona per channel" card: a channel's personality addition and LLM overrides
(the state: :mod:`grobot.pages.bot_channel_personas_state`)."""

from __future__ import annotations

import reflex as rx

from grobot.components.forms import error_text
from grobot.core.services import llm_settings
from grobot.core.services.channel_personas import CATEGORIES
from grobot.pages.bot_channel_personas_state import NEW
from grobot.pages.bot_settings_cards import card_section, confirm_button, labelled
from grobot.pages.bot_settings_state import BotSettingsState
from grobot.state.llm_check import INHERIT

S = BotSettingsState


def persona_row(row: rx.Var) -> rx.Component:
    return rx.card(
        rx.flex(
            rx.vstack(
                rx.text(row["label"], weight="bold", size="2"),
                rx.cond(row["personality"] != "", rx.text(row["personality"], size="2", white_space="pre-wrap"),
                        rx.text("No personality addition.", size="1", color=rx.color("gray", 11))),
                rx.text(rx.cond(row["models"] != "", row["models"], "The bot's own models."), size="1",
                        color=rx.color("gray", 11)),
                spacing="1", flex="1 1 14rem", min_width="0",
            ),
            rx.hstack(
                rx.button("Edit", type="button", variant="soft", size="1",
                          on_click=S.choose_persona_channel(row["channel_id"])),
                confirm_button(rx.button("Remove", type="button", variant="ghost", color_scheme="red", size="1"),
                               title="Remove this channel's persona?",
                               message="The bot answers there with its own personality and models again.",
                               confirm="Remove", on_confirm=S.remove_channel_persona(row["channel_id"])),
                spacing="2",
            ),
            justify="between", align="start", wrap="wrap", gap="0.5rem", width="100%",
        ),
        width="100%", size="1", data_testid="channel-persona",
    )


def category_fields(category: str) -> rx.Component:
    stored = S.persona_form
    return rx.vstack(
        rx.text(category.capitalize(), size="2", weight="medium"),
        labelled("Provider", rx.select.root(
            rx.select.trigger(width="100%", aria_label=f"{category.capitalize()} provider"),
            rx.select.content(rx.select.item("The bot's", value=INHERIT), rx.select.separator(),
                              *[rx.select.item(name, value=name) for name in llm_settings.PROVIDERS]),
            name=f"{category}_provider",
            default_value=rx.cond(stored[f"{category}_provider"] != "", stored[f"{category}_provider"], INHERIT),
            size="2")),
        labelled("Model", rx.input(name=f"{category}_model", default_value=stored[f"{category}_model"],
                                   placeholder="The bot's", aria_label=f"{category.capitalize()} model", width="100%")),
        labelled("Base URL", rx.input(name=f"{category}_base_url", default_value=stored[f"{category}_base_url"],
                                      placeholder="The bot's", aria_label=f"{category.capitalize()} base URL",
                                      input_mode="url", width="100%")),
        labelled("Context window", rx.input(name=f"{category}_context_window",
                                            default_value=stored[f"{category}_context_window"],
                                            placeholder="The bot's", aria_label=f"{category.capitalize()} context window",
                                            input_mode="numeric", width="100%")),
        labelled("Temperature", rx.input(name=f"{category}_temperature", default_value=stored[f"{category}_temperature"],
                                         placeholder="The bot's", aria_label=f"{category.capitalize()} temperature",
                                         input_mode="decimal", width="100%")),
        spacing="2", width="100%",
    )


def persona_form() -> rx.Component:
    return rx.form(
        rx.vstack(
            rx.grid(
                labelled("Channel", rx.select.root(
                    rx.select.trigger(width="100%", aria_label="Channel"),
                    rx.select.content(
                        rx.select.item("Another channel (type its id)", value=NEW),
                        rx.foreach(S.channel_choices, lambda c: rx.select.item(c[1], value=c[0]))),
                    name="channel", value=S.persona_channel, on_change=S.choose_persona_channel, size="2")),
                rx.cond(S.persona_channel == NEW,
                        labelled("Channel id", rx.input(name="channel_id", placeholder="Discord channel id",
                                                        aria_label="Channel id", width="100%")),
                        rx.fragment()),
                columns=rx.breakpoints(initial="1", md="2"), spacing="3", width="100%",
            ),
            labelled("Channel's addition",
                     rx.text_area(name="personality", default_value=S.persona_form["personality"], rows="3",
                                  width="100%", resize="vertical", placeholder="None: the bot's own only",
                                  aria_label="Channel's addition"),
                     "Said after the bot's personality in this channel and its threads."),
            rx.grid(*[category_fields(c) for c in CATEGORIES], columns=rx.breakpoints(initial="1", md="3"), spacing="4",
                    width="100%"),
            rx.cond(S.persona_error != "", error_text(S.persona_error, size="2")),
            rx.button("Save channel persona", type="submit", variant="soft", width="fit-content"),
            spacing="3", width="100%",
        ),
        on_submit=S.save_channel_persona,
        reset_on_submit=False,
        key=f"persona-{S.persona_channel}-{S.persona_version}",
        width="100%",
        aria_label="Channel persona",
    )


def channels_section() -> rx.Component:
    return card_section(
        "Persona per channel", "In a channel (and its threads) the bot can answer with more personality and other "
        "models. An empty field is the bot's own. Applies from the next message there; Test Chat can test as a channel.",
        rx.cond(S.channel_personas.length() > 0,  # type: ignore[attr-defined]
                rx.vstack(rx.foreach(S.channel_personas, persona_row), spacing="2", width="100%"),
                rx.text("None: the bot is the same in every channel.", size="2", color=rx.color("gray", 11))),
        persona_form(),
        saves="Saves on its own: Save channel persona",
        data_testid="section-persona-per-channel",
    )
