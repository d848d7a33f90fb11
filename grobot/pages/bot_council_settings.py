"""The Council tab's settings card (admins): the council on or off, each advisor's role text and LLM, the synthesis's LLM.

The switch saves at once; the advisors and the synthesis are saved together by the card's
Save button. An advisor starts from one of the bot's LLM categories and may use another
provider and/or model (empty: the category's).
"""

from __future__ import annotations

from typing import Any

import reflex as rx

from grobot.components.forms import MUTED, confirm_dialog, error_text, form_dialog, section
from grobot.core.llm import providers
from grobot.pages.bot_council_settings_state import SAME, AdvisorForm, CouncilSettingsState

CATEGORIES = ["output", "decision", "tools"]
PROVIDER_CHOICES = [SAME, *providers.NAMES]


# --------------------------------------------------------------------------- components


def _select(items: list[str], value: rx.Var, on_change: Any, label: str | rx.Var) -> rx.Component:
    return rx.select.root(
        rx.select.trigger(aria_label=label, width="100%"),
        rx.select.content(*[rx.select.item("as the category" if item == SAME else item, value=item) for item in items]),
        value=value,
        on_change=on_change,
        size="2",
    )


def _labelled(label: str, control: rx.Component, **props: Any) -> rx.Component:
    return rx.el.label(rx.text(label, size="1", weight="medium", color=MUTED), control,
                       display="flex", flex_direction="column", gap="0.25rem", **props)


def advisor_card(form: AdvisorForm, index: int) -> rx.Component:
    edit = CouncilSettingsState.edit_advisor
    return rx.box(
        rx.vstack(
            rx.hstack(
                rx.text(form.name, weight="bold", size="3"),
                rx.badge(form.uses, variant="soft", color_scheme="gray", data_testid="advisor-uses"),
                rx.spacer(),
                rx.el.label(rx.switch(checked=form.enabled, on_change=lambda v: edit(index, "enabled", v),
                                      aria_label=f"{form.name} takes part"),
                            rx.text("Takes part", size="1"), display="flex", gap="0.4rem", align_items="center"),
                rx.icon_button(rx.icon("trash-2", size=14), variant="soft", color_scheme="red", size="1",
                               aria_label=f"Remove {form.name}", title="Remove (save your changes first)",
                               on_click=CouncilSettingsState.ask_remove(form.name),
                               disabled=CouncilSettingsState.settings_dirty),
                align="center", spacing="3", width="100%", wrap="wrap",
            ),
            rx.text_area(value=form.role, on_change=lambda v: edit(index, "role", v), rows="3", width="100%",
                         aria_label=f"Role of {form.name}"),
            rx.grid(
                _labelled("LLM category", _select(CATEGORIES, form.category, lambda v: edit(index, "category", v),
                                                  f"LLM category of {form.name}")),
                _labelled("Provider", _select(PROVIDER_CHOICES, form.provider, lambda v: edit(index, "provider", v),
                                              f"Provider of {form.name}")),
                _labelled("Model (empty: the category's or provider's)",
                          rx.input(value=form.model, on_change=lambda v: edit(index, "model", v),
                                   placeholder="as the category", aria_label=f"Model of {form.name}")),
                columns=rx.breakpoints(initial="1", sm="3"), spacing="3", width="100%",
            ),
            spacing="2", width="100%",
        ),
        padding="0.75rem", border=f"1px solid {rx.color('gray', 5)}", border_radius="8px", width="100%",
        data_advisor=form.name,
    )


def synthesis_row() -> rx.Component:
    state = CouncilSettingsState
    return rx.box(
        rx.vstack(
            rx.hstack(rx.text("Synthesis", weight="bold", size="3"),
                      rx.badge(state.synthesis_uses, variant="soft", color_scheme="gray"), spacing="3", align="center"),
            rx.text("States the consensus, the disagreements and a confidence score from the advisors' answers.",
                    size="1", color=MUTED),
            rx.grid(
                _labelled("LLM category", _select(CATEGORIES, state.synthesis_category,
                                                  lambda v: state.edit_synthesis("synthesis_category", v),
                                                  "LLM category of the synthesis")),
                _labelled("Provider", _select(PROVIDER_CHOICES, state.synthesis_provider,
                                              lambda v: state.edit_synthesis("synthesis_provider", v),
                                              "Provider of the synthesis")),
                _labelled("Model", rx.input(value=state.synthesis_model, placeholder="as the category",
                                            on_change=lambda v: state.edit_synthesis("synthesis_model", v),
                                            aria_label="Model of the synthesis")),
                columns=rx.breakpoints(initial="1", sm="3"), spacing="3", width="100%",
            ),
            spacing="2", width="100%",
        ),
        padding="0.75rem", border=f"1px dashed {rx.color('gray', 6)}", border_radius="8px", width="100%",
    )


def add_dialog() -> rx.Component:
    state = CouncilSettingsState
    return form_dialog(
        "Add an advisor", "Its role text is its system prompt: what it looks at, and in which style it answers.",
        _labelled("Name", rx.input(value=state.new_name, on_change=state.set_new_name, placeholder="e.g. Historian",
                                   aria_label="New advisor's name")),
        _labelled("Role", rx.text_area(value=state.new_role, on_change=state.set_new_role, rows="4",
                                       aria_label="New advisor's role")),
        rx.cond(state.add_error != "", error_text(state.add_error)),
        submit_label="Add advisor", on_submit=state.add_advisor, form_key="council-add",
        open_=state.adding, on_open_change=state.add_open_changed,
    )


def settings_card() -> rx.Component:
    state = CouncilSettingsState
    return section(
        "Council settings",
        "/council QUESTION (Discord and Test Chat) puts a question to every advisor: at once, or in turn on an "
        "embedded model's server. The switch saves at once; Save stores the advisors and the synthesis.",
        rx.el.label(rx.switch(checked=state.council_enabled, on_change=state.set_council_enabled,
                              aria_label="Council enabled"),
                    rx.text(rx.cond(state.council_enabled, "Council enabled", "Council disabled"), size="2",
                            weight="medium"),
                    display="flex", gap="0.5rem", align_items="center"),
        rx.cond(state.settings_error != "", rx.callout(state.settings_error, icon="triangle-alert", color_scheme="red",
                                                       width="100%", data_testid="council-settings-error")),
        rx.vstack(rx.foreach(state.advisor_forms, advisor_card), synthesis_row(), spacing="3", width="100%"),
        rx.hstack(
            # Adding, removing and resetting read the form again: unsaved edits are saved (or undone) first.
            rx.button(rx.icon("plus", size=14), "Add advisor", variant="soft", on_click=state.open_add,
                      disabled=state.settings_dirty),
            rx.button("Reset to the default advisors", variant="ghost", color_scheme="gray", on_click=state.ask_reset,
                      disabled=state.settings_dirty),
            rx.spacer(),
            rx.cond(state.settings_dirty, rx.text("Unsaved changes", size="2", color=rx.color("amber", 11))),
            rx.cond(state.settings_dirty, rx.button("Undo", variant="soft", color_scheme="gray", on_click=state.load)),
            rx.button("Save", on_click=state.save_settings, disabled=~state.settings_dirty),
            align="center", spacing="3", width="100%", wrap="wrap",
        ),
        add_dialog(),
        confirm_dialog(open_=state.confirm_remove != "", title="Remove this advisor?",
                       message=f"{state.confirm_remove} no longer takes part in the council's deliberations.",
                       confirm_label="Remove", on_confirm=state.remove_advisor, on_cancel=state.cancel_confirm),
        confirm_dialog(open_=state.confirm_reset, title="Reset the advisors?",
                       message="The advisors and their settings are replaced by the five default roles.",
                       confirm_label="Reset", on_confirm=state.reset_advisors, on_cancel=state.cancel_confirm),
    )
