"""The "Add bot" dialog of the Bots page (admins): name, Discord token, personality, enabled.

The bot is created by the same service as the CLI's ``bot add`` (``bots.create_bot``); its
errors are shown next to the field they are about. The token is read from the submitted form
only: it is never kept in a state var, so it never goes back to the browser.
"""

from __future__ import annotations

import reflex as rx

from grobot.components.forms import field, form_dialog
from grobot.pages.add_bot_state import AddBotState

MAX_PERSONALITY_ROWS = 5


def add_bot_button() -> rx.Component:
    return rx.button(rx.icon("plus", size=16), "Add bot", on_click=AddBotState.start_add_bot)


def add_bot_dialog() -> rx.Component:
    errors = AddBotState.add_bot_errors
    return form_dialog(
        "Add a bot",
        "A new Discord bot of the fleet. The worker starts it once it has a token and is enabled.",
        field("Name", rx.input(id="new-bot-name", name="name", auto_complete="off", width="100%"),
              input_id="new-bot-name", error=errors.get("name", "")),
        field("Discord token", rx.input(id="new-bot-token", name="token", type="password", auto_complete="off",
                                        placeholder="From the Bot page of the Discord developer portal",
                                        width="100%"),
              input_id="new-bot-token", error=errors.get("token", ""),
              help_text="Stored encrypted and never shown again. You can also set it later."),
        field("Personality", rx.text_area(id="new-bot-personality", name="personality", rows=str(MAX_PERSONALITY_ROWS),
                                          placeholder="Who the bot is and how it talks", width="100%"),
              input_id="new-bot-personality", error=errors.get("personality", "")),
        rx.el.label(rx.hstack(rx.checkbox(name="enabled", default_checked=True), rx.text("Enabled", size="2"),
                              spacing="2", align="center")),
        rx.cond(errors.contains("form"),  # type: ignore[attr-defined]
                rx.callout(errors.get("form", ""), icon="triangle-alert", color_scheme="red", width="100%")),
        submit_label="Add bot",
        on_submit=AddBotState.add_bot,
        form_key=f"add-bot-{AddBotState.add_bot_version}",
        open_=AddBotState.add_bot_open,
        on_open_change=AddBotState.add_bot_open_change,
    )
