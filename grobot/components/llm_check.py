"""What an LLM form shows after "Check connection" or a key check: the result (with the server's models,
a click puts one into the Model field), and the offer to save a key that could not be checked."""

from __future__ import annotations

import reflex as rx
from reflex.event import EventType


def check_callout(message: rx.Var, failed: rx.Var, models: rx.Var, *, model_input_id: rx.Var | str,
                  testid: rx.Var | str) -> rx.Component:
    """The result of "Check connection" (wrap it in ``rx.cond`` to hide it when there is none)."""
    return rx.callout(
        rx.vstack(
            rx.text(message, size="2"),
            rx.flex(
                rx.foreach(models, lambda name: rx.badge(name, variant="surface", cursor="pointer",
                                                         title="Use this model",
                                                         on_click=rx.set_value(model_input_id, name))),
                gap="0.4rem",
                wrap="wrap",
            ),
            spacing="2",
        ),
        icon=rx.cond(failed, "triangle-alert", "circle-check"),
        color_scheme=rx.cond(failed, "red", "green"),
        width="100%",
        data_testid=testid,
    )


def unverified_callout(message: rx.Var, *, on_save_anyway: EventType, testid: rx.Var | str) -> rx.Component:
    """A key that could not be checked (the provider cannot be reached): the admin may save it anyway.

    "Save anyway" submits the form again (the typed key is still in it), marked to skip the check.
    """
    return rx.callout(
        rx.vstack(
            rx.text(message, size="2"),
            rx.button(rx.icon("save", size=14), "Save anyway", type="submit", size="1", color_scheme="amber",
                      on_click=on_save_anyway),
            spacing="2",
            align="start",
        ),
        icon="triangle-alert",
        color_scheme="amber",
        width="100%",
        data_testid=testid,
    )
