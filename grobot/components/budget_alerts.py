"""The banner of the budgets at 80 % or more (the Usage page and a bot's Logs tab)."""

from __future__ import annotations

import reflex as rx


def budget_alert_banner(alerts: rx.Var, *, title: str, testid: str) -> rx.Component:
    """An amber callout listing ``alerts`` (one line each); nothing when there are none."""
    return rx.cond(
        alerts.length() > 0,  # type: ignore[attr-defined]
        rx.callout.root(
            rx.callout.icon(rx.icon("gauge")),
            rx.vstack(
                rx.text(title, weight="bold"),
                rx.foreach(alerts, lambda line: rx.text(line, size="2")),
                spacing="1",
            ),
            color_scheme="amber",
            width="100%",
            data_testid=testid,
        ),
    )
