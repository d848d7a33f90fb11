"""A bot's Settings tab (admins): the bot's own fields (General to Discord connection, saved together
by the bar after them), then the cards that save on their own (:mod:`grobot.pages.bot_settings_cards`).
The state lives in :mod:`grobot.pages.bot_settings_state`. Leaving the tab with unsaved edits asks
"Discard unsaved changes?" first (``assets/unsaved_guard.js``).
"""

from __future__ import annotations

from typing import Any

import reflex as rx

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import SETTINGS
from grobot.components.formatting import counted
from grobot.components.forms import error_text, switch_label
from grobot.components.layout import wide_only
from grobot.components.long_text import token_meter
from grobot.components.unsaved import unsaved_guard, unsaved_marker
from grobot.core.services import bots as bots_service
from grobot.pages.bot_channel_personas import channels_section
from grobot.pages.bot_llm_settings import llm_section
from grobot.pages.bot_mcp_tools import mcp_section
from grobot.pages.bot_settings_cards import card_section, delete_section, token_section
from grobot.pages.bot_settings_state import FIELD_LABELS, BotSettingsState, load_settings

__all__ = ["BotSettingsState", "llm_section", "load_settings", "settings_page"]

TWO_COLUMNS = rx.breakpoints(initial="1", md="2")  # one column on narrow screens
BAR_SECTIONS = ("General", "Reply rules", "Who may use the bot", "Moderation", "Limits", "Web search",
                "Usage limits and budgets", "Discord connection")
BAR_SAVES = "Saved with Save changes"


def section(title: str, description: str, *children: rx.Component, **props: Any) -> rx.Component:
    """A titled card of the bot's own fields: saved together, by the bar after the last of them."""
    return card_section(title, description, *children,
                        badge=rx.badge(rx.icon("arrow-down", size=12), BAR_SAVES, variant="outline",
                                       color_scheme="indigo", size="1", data_testid="bar-save"), **props)


def field(label: str, control: rx.Component, *, hint: str = "", error_key: str = "") -> rx.Component:
    """A labelled control with a hint and the field's error under it."""
    return rx.vstack(
        rx.el.label(rx.text(label, size="2", weight="medium"), control, display="flex", flex_direction="column",
                    gap="0.35rem", width="100%"),
        rx.cond(BotSettingsState.errors.contains(error_key),  # type: ignore[attr-defined]
                error_text(BotSettingsState.errors[error_key], size="1", data_field_error=error_key))
        if error_key else rx.fragment(),
        rx.text(hint, size="1", color=rx.color("gray", 11)) if hint else rx.fragment(),
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
        rx.vstack(rx.text(label, size="2", weight="medium"), rx.text(hint, size="1", color=rx.color("gray", 11)),
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
        token_meter(BotSettingsState.personality_meter, BotSettingsState.personality_level,
                    testid="personality-tokens"),
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
              hint="Discord channel ids, comma-separated (their threads too). Empty: every channel.", error_key="allowed_channel_ids"),
        field("Always-on channels", text_input("always_on_channel_ids", placeholder="None"),
              hint="Channels (and their threads) where the bot answers every message.", error_key="always_on_channel_ids"),
        field("Keywords", text_input("keywords", placeholder="None"),
              hint="Words that make the bot answer, comma-separated.", error_key="keywords"),
    )


def access_list(name: str, kind: str, choices: rx.Var, empty: str) -> rx.Component:
    """One access list: its ids (typed, or added from the users or roles the bot has seen), each shown by
    name with a button that takes it off."""
    chips = BotSettingsState.access_chips[name]
    return field(
        FIELD_LABELS[name],
        rx.vstack(
            rx.cond(
                chips.length() > 0,  # type: ignore[attr-defined]
                rx.flex(
                    rx.foreach(chips, lambda chip: rx.badge(
                        rx.text(chip[1], as_="span", max_width="14rem", overflow="hidden", text_overflow="ellipsis",
                                white_space="nowrap", title=chip[0]),
                        rx.icon_button(rx.icon("x", size=12), type="button", size="1", variant="ghost",
                                       color_scheme="gray", aria_label="Remove " + chip[1],
                                       on_click=BotSettingsState.remove_access(name, chip[0])),
                        variant="surface", size="2", radius="full", data_testid=f"{name}-chip")),
                    wrap="wrap", gap="0.4rem"),
                rx.text(empty, size="1", color=rx.color("gray", 11)),
            ),
            rx.select.root(
                rx.select.trigger(placeholder=f"Add a {kind} this bot has seen", width="100%",
                                  aria_label=f"Add to {FIELD_LABELS[name].lower()}"),
                rx.select.content(rx.foreach(choices, lambda choice: rx.select.item(choice[1], value=choice[0]))),
                value="",
                on_change=lambda value: BotSettingsState.add_access(name, value),
                disabled=choices.length() == 0,  # type: ignore[attr-defined]
            ),
            text_input(name, placeholder=f"Or {kind} ids, comma-separated", aria_label=f"{FIELD_LABELS[name]} (ids)"),
            spacing="2", width="100%",
        ),
        error_key=name,
    )


def access_section() -> rx.Component:
    return section(
        "Who may use the bot", "On Discord (Test Chat is for testers). A blocked user, or one with a blocked role, gets no "
        "answer and costs no LLM call; a block wins. With allowed users or roles, only they are answered (in a DM, where "
        "there are no roles, only the allowed users). Applies from the next message.",
        rx.grid(
            access_list("allowed_user_ids", "user", BotSettingsState.user_choices, "Everyone who is not blocked."),
            access_list("blocked_user_ids", "user", BotSettingsState.user_choices, "Nobody."),
            access_list("allowed_role_ids", "role", BotSettingsState.role_choices, "Any role."),
            access_list("blocked_role_ids", "role", BotSettingsState.role_choices, "No role."),
            columns=TWO_COLUMNS, spacing="4", width="100%",
        ),
        rx.text("Users are those who wrote to the bot (its Knowledge Base); roles those of the servers it is in.",
                size="1", color=rx.color("gray", 11)),
        data_testid="section-who-may-use-the-bot",
    )


MODERATION_ACTIONS = {"ignore": "Ignore it (no answer)", "refuse": "Answer with a short refusal", "log": "Only log it"}


def moderation_section() -> rx.Component:
    return section(
        "Moderation", "What a message to the bot, or its answer, must not contain. Answers are checked before they are "
        "sent, also while they stream. Every match is a warning in the bot's Logs (without the message).",
        rx.grid(
            field("Blocked words", rx.text_area(value=BotSettingsState.form["moderation_words"],
                                                on_change=lambda value: BotSettingsState.set_field("moderation_words", value),
                                                name="moderation_words", rows="4", width="100%", resize="vertical",
                                                placeholder="None"),
                  hint="One per line (or comma-separated): whole words or phrases, in any case.",
                  error_key="moderation_words"),
            field("Blocked patterns", rx.text_area(value=BotSettingsState.form["moderation_patterns"],
                                                   on_change=lambda value: BotSettingsState.set_field("moderation_patterns",
                                                                                                      value),
                                                   name="moderation_patterns", rows="4", width="100%", resize="vertical",
                                                   placeholder="None", font_family="monospace"),
                  hint="One regular expression per line (RE2 syntax, any case), e.g. b[a@4]d\\s*w[o0]rd.",
                  error_key="moderation_patterns"),
            columns=TWO_COLUMNS, spacing="4", width="100%",
        ),
        rx.grid(
            field("When something matches",
                  rx.select.root(
                      rx.select.trigger(width="100%", aria_label="When something matches"),
                      rx.select.content(*[rx.select.item(label, value=value) for value, label in MODERATION_ACTIONS.items()]),
                      value=BotSettingsState.form["moderation_action"],
                      on_change=lambda value: BotSettingsState.set_field("moderation_action", value),
                  ),
                  hint="A refusal is said at most once an hour per user; an answer that matches is replaced by it "
                       "(ignore: taken back).", error_key="moderation_action"),
            flag_switch("moderation_ask_model", "Ask the decision model",
                        "Before answering, one short LLM call asks whether the message is abusive."),
            columns=TWO_COLUMNS, spacing="4", width="100%",
        ),
        data_testid="section-moderation",
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


def web_search_section() -> rx.Component:
    return section(
        "Web search", "The built-in tools web_search and web_read: the bot looks things up on the web and reads "
                      "pages. Off by default: what users ask is sent to an outside search engine.",
        flag_switch("web_search", "Search the web", "Give the bot web_search and web_read."),
        field("SearXNG address", text_input("web_search_url", placeholder="https://searx.example.org"),
              hint=f"Empty: the global setting ({BotSettingsState.web_search_default}).", error_key="web_search_url"),
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
                rx.text(today.day, " (UTC)", size="1", color=rx.color("gray", 11)),
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
                            rx.fragment(counted(today.users_at_limit, "user"), " at their limit of ",
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
        "Usage limits and budgets", "Per UTC day and month. At 80 % of a budget the bot's Logs and the Usage page warn; "
        "when one is used up, the bot says so and waits for the next day or month. Costs are estimated from the "
        "prices on the Usage page.",
        today_panel(),
        rx.grid(
            *[limit_field(name) for name in bots_service.DAILY_LIMIT_FIELDS],
            columns=rx.breakpoints(initial="1", sm="3"), spacing="4", width="100%",
        ),
        rx.grid(
            *[limit_field(name) for name in bots_service.BUDGET_FIELDS],
            columns=rx.breakpoints(initial="1", sm="2", md="4"), spacing="4", width="100%",
            data_testid="bot-budgets",
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


SAVE_BAR_ID = "bot-settings-save-bar"
# The page scrolls a field that gets the focus (Tab) into view above the sticky bar, not under it: the
# page's scroll-padding-bottom follows the bar's height (it grows with an error, or wraps on a phone).
KEEP_FOCUS_ABOVE_BAR = f"""(() => {{
  const bar = document.getElementById("{SAVE_BAR_ID}");
  const root = document.documentElement;
  if (!bar || typeof ResizeObserver === "undefined") return;
  const fit = () => {{ root.style.scrollPaddingBottom = bar.isConnected ? `${{bar.offsetHeight + 16}}px` : ""; }};
  const observer = new ResizeObserver(() => {{ fit(); if (!bar.isConnected) observer.disconnect(); }});
  observer.observe(bar);
  fit();
}})()"""
FORGET_BAR_PADDING = 'document.documentElement.style.scrollPaddingBottom = ""'


def save_bar() -> rx.Component:
    """The bar that saves the bot's own fields: there only while something is unsaved (or being saved, or
    refused), at the bottom of the window."""
    return rx.fragment(
        unsaved_marker(BotSettingsState.dirty),
        rx.cond(BotSettingsState.dirty | BotSettingsState.saving | (BotSettingsState.form_error != ""), _bar()),
    )


def _bar() -> rx.Component:
    return rx.vstack(
        rx.cond(BotSettingsState.form_error != "",
                rx.callout(BotSettingsState.form_error, icon="triangle-alert", color_scheme="red", width="100%",
                           data_testid="settings-error")),
        rx.hstack(
            rx.vstack(
                rx.text("Unsaved changes", size="2", color=rx.color("amber", 11)),
                rx.text("Saves " + ", ".join(BAR_SECTIONS) + ". The cards below save on their own.", size="1",
                        color=rx.color("gray", 11), data_testid="bar-scope", display=wide_only("block")),
                spacing="0",
            ),
            rx.spacer(),
            rx.button("Discard", type="button", variant="soft", color_scheme="gray", on_click=BotSettingsState.discard,
                      disabled=~BotSettingsState.dirty),
            rx.button(rx.icon("save", size=16), "Save changes", type="submit", loading=BotSettingsState.saving,
                      disabled=~BotSettingsState.dirty),
            align="center",
            spacing="3",
            width="100%",
            wrap="wrap",
        ),
        id=SAVE_BAR_ID,
        data_testid="save-bar",
        on_mount=rx.call_script(KEEP_FOCUS_ABOVE_BAR),
        on_unmount=rx.call_script(FORGET_BAR_PADDING),
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


def bar_form() -> rx.Component:
    """The bot's own fields and their bar, as one form: Enter in a field saves, like Save changes."""
    return rx.form(
        # The form's default button, never disabled: Enter sends the form even before the page knows of the
        # edit (Save changes is enabled once it does); the server saves only what changed.
        rx.el.button(type="submit", hidden=True, tab_index=-1, aria_hidden="true"),
        rx.vstack(general_section(), reply_section(), access_section(), moderation_section(), limits_section(),
                  web_search_section(), daily_limits_section(), gateway_section(), save_bar(), spacing="5", width="100%"),
        on_submit=BotSettingsState.submit_bar,
        reset_on_submit=False,
        no_validate=True,
        aria_label="Bot settings",
        width="100%",
    )


def settings_tab() -> rx.Component:
    return rx.cond(
        BotSettingsState.settings_loaded,
        rx.vstack(
            unsaved_guard(),
            rx.box(on_unmount=BotSettingsState.left, display="none"),
            bar_form(),
            token_section(),
            llm_section(),
            channels_section(),
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
