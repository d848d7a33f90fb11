"""Form building blocks of the admin pages: labelled fields with their error, section cards,
"set / not set" badges for secrets, the confirmation dialog and the dialog that holds one form."""

from __future__ import annotations

import logging

import reflex as rx
from reflex.event import EventType

logger = logging.getLogger(__name__)

MUTED = rx.color("gray", 11)
# A card of a long page: while it is off screen the browser skips its layout and painting (a long page
# such as a bot's Settings is laid out in a fraction of the time); its size meanwhile is the one it had.
LAID_OUT_WHEN_SHOWN = {"content_visibility": "auto", "contain_intrinsic_size": "auto 480px"}


def field(
    label: str,
    control: rx.Component,
    *,
    input_id: str,
    error: rx.Var | None = None,
    help_text: str | rx.Var | None = None,
) -> rx.Component:
    """A label, its control, an optional help line and the field's error (shown when not empty)."""
    parts: list[rx.Component] = [
        rx.el.label(rx.text(label, size="2", weight="medium"), html_for=input_id),
        control,
    ]
    if help_text is not None:
        parts.append(rx.text(help_text, size="1", color=MUTED))
    if error is not None:
        parts.append(
            rx.cond(
                error,
                rx.text(
                    rx.icon("circle-alert", size=12, display="inline", vertical_align="-1px", margin_right="4px"),
                    error,
                    size="1",
                    color=rx.color("red", 11),
                    role="alert",
                    data_field_error=input_id,
                ),
            )
        )
    return rx.vstack(*parts, spacing="1", width="100%", align="stretch")


def error_text(message: rx.Var | str, *, size: str = "1", **props: object) -> rx.Component:
    """An error message in red, announced to screen readers (wrap it in ``rx.cond`` to hide it when empty)."""
    return rx.text(message, size=size, color=rx.color("red", 11), role="alert", **props)


def section(title: str, description: str | rx.Var, *children: rx.Component, actions: rx.Component | None = None) -> rx.Component:
    """A card with a heading, one line of explanation and its content."""
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.vstack(
                    rx.heading(title, size="4", as_="h2"),
                    rx.text(description, size="2", color=MUTED),
                    spacing="1",
                ),
                actions if actions is not None else rx.fragment(),
                justify="between",
                align="start",
                width="100%",
                gap="1rem",
            ),
            *children,
            spacing="4",
            width="100%",
        ),
        size="3",
        width="100%",
        **LAID_OUT_WHEN_SHOWN,
    )


def secret_badge(is_set: rx.Var[bool], *, testid: str = "") -> rx.Component:
    """Whether a secret is stored: its value never reaches the browser."""
    return rx.cond(
        is_set,
        rx.badge(rx.icon("lock", size=12), "set", color_scheme="green", variant="soft", data_testid=testid or None),
        rx.badge(rx.icon("lock-open", size=12), "not set", color_scheme="gray", variant="soft", data_testid=testid or None),
    )


def confirm_dialog(
    *,
    open_: rx.Var[bool],
    title: str | rx.Var,
    message: rx.Var | str,
    confirm_label: str | rx.Var,
    on_confirm: EventType,
    on_cancel: EventType,
) -> rx.Component:
    """A destructive action's confirmation (an alert dialog with Cancel and a red button).

    Closing it any other way than by the red button (Cancel, Escape) calls ``on_cancel``: the
    dialog has no trigger, so its ``on_open_change`` only ever reports a close. The red button is
    no ``alert_dialog.action`` (that would report a close too, after ``on_confirm``): its handler
    closes the dialog through ``open_``.
    """
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title(title),
            rx.alert_dialog.description(message, size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", color_scheme="gray")),
                rx.button(confirm_label, color_scheme="red", on_click=on_confirm),
                spacing="3",
                justify="end",
                margin_top="1rem",
            ),
            max_width="28rem",
        ),
        open=open_,
        on_open_change=lambda _is_open: on_cancel,
    )


def form_dialog(
    title: rx.Component | str,
    description: str,
    *fields: rx.Component,
    submit_label: str,
    on_submit: EventType,
    form_key: str,
    open_: rx.Var[bool],
    on_open_change: EventType,
) -> rx.Component:
    """A dialog holding one form: its fields, then Cancel and the submit button."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(title),
            rx.dialog.description(description, size="2", color=rx.color("gray", 11), margin_bottom="1rem"),
            rx.form(
                rx.vstack(
                    *fields,
                    rx.hstack(
                        rx.dialog.close(rx.button("Cancel", type="button", variant="soft", color_scheme="gray")),
                        rx.button(submit_label, type="submit"),
                        spacing="3",
                        justify="end",
                        width="100%",
                    ),
                    spacing="4",
                    width="100%",
                ),
                on_submit=on_submit,
                reset_on_submit=False,
                key=form_key,
            ),
            max_width="28rem",
        ),
        open=open_,
        on_open_change=on_open_change,
    )


def muted_dash() -> rx.Component:
    """What an empty table cell shows."""
    return rx.text("—", color=MUTED)


def table_header(*columns: str | tuple[str, str]) -> rx.Component:
    """A table header row; a column is a label or (label, width)."""
    cells = []
    for column in columns:
        label, width = column if isinstance(column, tuple) else (column, None)
        cells.append(rx.table.column_header_cell(label, width=width))
    return rx.table.header(rx.table.row(*cells))


def switch_label(*children: rx.Component, gap: str = "0.5rem", align: str = "center", **props: object) -> rx.Component:
    """A row holding a switch (or checkbox) and its text as one ``<label>``: clicking the text
    toggles the switch."""
    return rx.el.label(*children, display="flex", align_items=align, gap=gap, cursor="pointer", **props)
