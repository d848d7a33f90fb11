"""The Test Chat tab's line above the chat: which model answers (the provider and model of the bot's output
category, with where the setting comes from), and a plain word when it is the tiny demo model, with where an
admin sets another."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import reflex as rx
from sqlmodel import Session

from grobot.components.bot_tabs import SETTINGS, bot_href
from grobot.core.llm import embedded
from grobot.core.models import AppUser, Bot, LLMCategory
from grobot.core.services import llm_settings
from grobot.pages.settings_state import ROUTE as GLOBAL_SETTINGS_ROUTE
from grobot.state.bot_page import BotPageState, run_for_bot

logger = logging.getLogger(__name__)

SOURCES = {"bot": "this bot's setting", "global": "the global setting", "builtin": "the built-in default"}


@dataclass(frozen=True)
class AnsweringModel:
    """The model that writes the bot's answers, as a tester reads it."""

    name: str  # "ollama llama3.2", "llamacpp SmolLM2-135M-Instruct (tiny demo model)"
    source: str  # where the setting comes from
    demo: bool  # the tiny embedded demo model


def answering_model(token: str, bot_id: int) -> AnsweringModel:
    """The provider and model of the bot's output category (its own setting, else inherited)."""

    def work(session: Session, _user: AppUser, bot: Bot) -> AnsweringModel:
        llm = llm_settings.effective_llm(session=session, category=LLMCategory.OUTPUT.value, bot_id=bot.id)
        local = llm.provider == embedded.PROVIDER
        model = embedded.display_name(llm.model) if local else llm.model
        return AnsweringModel(name=f"{llm.provider} {model}", source=SOURCES.get(llm.source, llm.source),
                              demo=local and llm.model == embedded.DEMO_MODEL)

    return run_for_bot(token, bot_id, work, admin=False)


class ChatModelState(BotPageState):
    """The model of the open bot's answers (read when the Test Chat opens)."""

    model_name: str = ""
    model_source: str = ""
    demo_model: bool = False

    @rx.event
    async def load(self) -> None:
        self.model_name = ""
        if not self.bot_ready:
            return
        try:
            model = await asyncio.to_thread(answering_model, self.session_token, self.current_bot_id)
        except Exception as exc:  # the chat works without the line; the session's end is the chat's to say
            logger.debug("The answering model could not be read: %s", type(exc).__name__)
            return
        self.model_name, self.model_source, self.demo_model = model.name, model.source, model.demo


def _where_to_set() -> rx.Component:
    """Admins: links to the bot's Language models and to the global Settings; testers: who can."""
    return rx.cond(
        ChatModelState.is_admin,
        rx.text("Set another model in ", rx.link("this bot's Settings", href=bot_href(SETTINGS.key)),
                " (Language models, output) or for every bot on the ",
                rx.link("Settings page", href=GLOBAL_SETTINGS_ROUTE), ".", size="2"),
        rx.text("An admin can set another model for this bot.", size="2"),
    )


def model_line() -> rx.Component:
    """Above the chat: "Answers with PROVIDER MODEL (from SOURCE)", and a plain notice for the demo model."""
    return rx.cond(
        ChatModelState.model_name != "",
        rx.vstack(
            rx.hstack(
                rx.icon("cpu", size=14, color=rx.color("gray", 11), flex_shrink="0", margin_top="0.15rem"),
                rx.text("Answers with ", rx.text.strong(ChatModelState.model_name), " · ", ChatModelState.model_source,
                        size="1", color=rx.color("gray", 11)),
                spacing="2", align="start",
                data_testid="chat-model",
            ),
            rx.cond(
                ChatModelState.demo_model,
                rx.callout(
                    rx.vstack(
                        rx.text("This bot answers with the tiny demo model that runs inside GroBot (SmolLM2, 135M "
                                "parameters): it shows that everything works, but its answers are poor.", size="2"),
                        _where_to_set(),
                        spacing="1",
                    ),
                    icon="sparkles", color_scheme="amber", variant="surface", size="1", width="100%",
                    data_testid="chat-demo-model",
                ),
            ),
            spacing="2",
            width="100%",
        ),
    )
