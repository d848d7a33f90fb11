"""The Schedules tab of a bot: the posts it makes on its own (a fixed text or its answer to a prompt, on a
cron or an interval in a time zone): list, add, edit, pause, delete, "Run now", and "Try in Test Chat"
(the prompt answered in the admin's Test Chat, nothing posted). Its state: :mod:`grobot.pages.bot_schedules_state`."""

from __future__ import annotations

import logging
from typing import Any

import reflex as rx

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import SCHEDULES
from grobot.components.empty_state import empty_state
from grobot.components.forms import MUTED, confirm_dialog, error_text, field, form_dialog, section
from grobot.components.safe_text import safe_text
from grobot.pages.bot_schedules_state import KIND_LABELS, SchedulesState

logger = logging.getLogger(__name__)


def _select(name: str, options: list[tuple[str, str]], default: Any, label: str) -> rx.Component:
    return rx.el.select(
        *[rx.el.option(text, value=value) for value, text in options],
        name=name, id=f"schedule-{name}", default_value=default, aria_label=label,
        style={"font_size": "var(--font-size-2)", "padding": "0.35rem", "width": "100%",
               "border_radius": "var(--radius-2)", "border": f"1px solid {rx.color('gray', 7)}",
               "background": "transparent"},
    )


def editor() -> rx.Component:
    values = SchedulesState.editor_values
    return form_dialog(
        rx.cond(SchedulesState.editor_id != 0, "Edit schedule", "Add a schedule"),
        "The bot posts in the channel on its own, at the times below (in the time zone given).",
        field("Name", rx.input(name="name", id="schedule-name", default_value=values["name"],
                               placeholder="e.g. Weekly summary"), input_id="schedule-name"),
        field("Channel id", rx.input(name="channel_id", id="schedule-channel_id", default_value=values["channel_id"],
                                     placeholder="e.g. 1234567890123456789", input_mode="numeric",
                                     custom_attrs={"list": "schedule-channels"}),
              input_id="schedule-channel_id",
              help_text="The channels the bot has talked in are offered; any other: in Discord, Developer Mode, "
                        "right-click the channel, Copy Channel ID."),
        rx.el.datalist(rx.foreach(SchedulesState.channels, lambda c: rx.el.option(c.name, value=c.id)),
                       id="schedule-channels"),
        field("What", _select("kind", list(KIND_LABELS.items()), values["kind"], "What the bot posts"),
              input_id="schedule-kind"),
        field("Text or prompt", rx.text_area(name="content", id="schedule-content", default_value=values["content"],
                                             rows="4", placeholder="e.g. Summarise this week's open questions."),
              input_id="schedule-content"),
        rx.grid(
            field("Repeat", _select("timing", [("cron", "On a cron"), ("interval", "Every N seconds")],
                                    values["timing"], "Repeat"), input_id="schedule-timing"),
            field("Time zone", rx.input(name="timezone", id="schedule-timezone", default_value=values["timezone"],
                                        placeholder="Europe/Paris"), input_id="schedule-timezone"),
            field("Cron", rx.input(name="cron", id="schedule-cron", default_value=values["cron"]),
                  input_id="schedule-cron", help_text="minute hour day month weekday"),
            field("Every (seconds)", rx.input(name="every", id="schedule-every", default_value=values["every"],
                                              input_mode="numeric"), input_id="schedule-every"),
            columns="2", spacing="3", width="100%",
        ),
        field("Grace time (seconds)", rx.input(name="grace", id="schedule-grace", default_value=values["grace"],
                                               input_mode="numeric"), input_id="schedule-grace",
              help_text="A run missed by more than this (the worker was down) is skipped; at most one is caught up."),
        rx.cond(SchedulesState.editor_error != "", error_text(SchedulesState.editor_error, size="2")),
        submit_label="Save",
        on_submit=SchedulesState.save,
        form_key=SchedulesState.editor_key.to_string(),
        open_=SchedulesState.editor_open,
        on_open_change=SchedulesState.editor_open_change,
    )


def schedule_card(row: rx.Var) -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.vstack(
                    rx.hstack(
                        rx.text(rx.cond(row.name != "", row.name, "Schedule " + row.id.to_string()), weight="bold",
                                size="3"),
                        rx.badge(rx.cond(row.kind == "prompt", "prompt", "text"), variant="soft",
                                 color_scheme=rx.cond(row.kind == "prompt", "violet", "gray")),
                        rx.cond(~row.enabled, rx.badge("paused", color_scheme="amber", variant="soft")),
                        spacing="2", align="center", wrap="wrap",
                    ),
                    rx.text(row.when, " · ", row.channel, size="2", color=MUTED, title="Channel " + row.channel_id),
                    spacing="1", min_width="0",
                ),
                rx.hstack(
                    rx.button(rx.icon("play", size=14), "Run now", size="1", variant="soft",
                              on_click=SchedulesState.run_now(row.id), title="Post it now"),
                    rx.cond(row.kind == "prompt",
                            rx.button(rx.icon("message-square", size=14), "Try in Test Chat", size="1", variant="soft",
                                      color_scheme="gray", on_click=SchedulesState.try_in_chat(row.id),
                                      title="See what it would post, in your Test Chat (nothing is posted)")),
                    rx.button(rx.cond(row.enabled, "Pause", "Resume"), size="1", variant="soft", color_scheme="gray",
                              on_click=SchedulesState.set_enabled(row.id, ~row.enabled)),
                    rx.icon_button(rx.icon("pencil", size=14), size="1", variant="ghost",
                                   on_click=SchedulesState.start_edit(row.id), aria_label="Edit", title="Edit"),
                    rx.icon_button(rx.icon("trash-2", size=14), size="1", variant="ghost", color_scheme="red",
                                   on_click=SchedulesState.ask_delete(row.id), aria_label="Delete", title="Delete"),
                    spacing="2", wrap="wrap", justify="end", align="center",
                ),
                justify="between", align="start", width="100%", gap="0.75rem", wrap="wrap",
            ),
            safe_text(row.content, size="2", white_space="pre-wrap", word_break="break-word",
                      style={"display": "-webkit-box", "-webkit-line-clamp": "3", "-webkit-box-orient": "vertical",
                             "overflow": "hidden"}),
            rx.hstack(
                rx.text("Next run: ", rx.cond(row.next_run != "", row.next_run, "—"), size="1", color=MUTED,
                        data_testid="schedule-next-run"),
                rx.cond(row.last_status != "",
                        rx.text("Last: ", rx.cond(row.last_run != "", row.last_run + " · ", ""), row.last_status,
                                size="1", color=MUTED, data_testid="schedule-last")),
                spacing="4", wrap="wrap",
            ),
            spacing="2", width="100%",
        ),
        width="100%",
        data_testid="schedule",
    )


def schedules_tab() -> rx.Component:
    add = rx.button(rx.icon("plus", size=16), "Add schedule", on_click=SchedulesState.start_add)
    return rx.vstack(
        section(
            "Schedules",
            "Posts the bot makes on its own in a channel: a fixed text, or its answer to a prompt (with its tools). "
            "Each run is a line in the Logs.",
            rx.cond(
                SchedulesState.sched_error != "",
                error_text(SchedulesState.sched_error, size="2"),
                rx.cond(
                    SchedulesState.rows.length() > 0,
                    rx.vstack(rx.foreach(SchedulesState.rows, schedule_card), spacing="3", width="100%"),
                    rx.cond(SchedulesState.sched_loaded,
                            empty_state("calendar-clock", "No schedules yet",
                                        "E.g. each Monday at 09:00, summarise this week's open questions in #general.",
                                        add),
                            rx.spinner()),
                ),
            ),
            actions=rx.cond(SchedulesState.rows.length() > 0, add),
        ),
        editor(),
        confirm_dialog(open_=SchedulesState.delete_id != 0, title="Delete this schedule?",
                       message="Delete " + SchedulesState.delete_name + "? The bot stops posting it.",
                       confirm_label="Delete", on_confirm=SchedulesState.confirm_delete,
                       on_cancel=SchedulesState.cancel_delete),
        spacing="4",
        width="100%",
    )


def schedules_page() -> rx.Component:
    return bot_page(SCHEDULES, schedules_tab())
