"""The "Add from preset" picker of the MCP servers page (admins): the known MCP servers by tier.

A preset without keys is added with one click; one with keys asks only for its secrets (sent with
the form, stored encrypted by the service, never put in a state var). The new server is then tested
at once and its row shows its tools or its error, unless its program is not installed here (its first
start downloads it: the admin's "Test" does that).
"""

from __future__ import annotations

from typing import Any

import reflex as rx

from grobot.pages.mcp_presets_state import McpPresetState, PresetRow, SecretRow

# --------------------------------------------------------------------------- components


def _preset_card(row: PresetRow) -> rx.Component:
    muted = rx.color("gray", 11)
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.text(row.title, weight="medium"),
                rx.cond(row.per_bot, rx.badge("per bot", color_scheme="violet", variant="soft", size="1")),
                rx.spacer(),
                rx.button(
                    rx.cond(McpPresetState.adding == row.name, rx.spinner(size="1"), rx.icon("plus", size=14)),
                    rx.cond(row.secrets.length() > 0, "Add…", "Add"),
                    size="1",
                    on_click=McpPresetState.choose(row.name),
                    disabled=McpPresetState.adding != "",
                    aria_label="Add " + row.title,
                ),
                align="center",
                spacing="2",
                width="100%",
            ),
            rx.text(row.description, size="1", color=muted),
            rx.text(row.source, size="1", color=rx.color("gray", 11), font_family="var(--code-font-family, monospace)",
                    style={"overflow_wrap": "anywhere"}),
            spacing="1",
            width="100%",
        ),
        data_preset=row.name,
        width="100%",
    )


def _tier(title: str, rows: Any) -> rx.Component:
    return rx.vstack(
        rx.heading(title, size="3"),
        rx.grid(rx.foreach(rows, _preset_card), columns=rx.breakpoints(initial="1", sm="2"), spacing="3", width="100%"),
        spacing="2",
        width="100%",
    )


def _secret_field(row: SecretRow) -> rx.Component:
    return rx.vstack(
        rx.el.label(rx.text(row.label, " (", row.key, ")", size="2", weight="medium"), html_for=row.field_id),
        rx.input(id=row.field_id, name=row.field_name, type="password", auto_complete="off", width="100%"),
        rx.cond(row.help != "", rx.text(row.help, size="1", color=rx.color("gray", 11))),
        spacing="1",
        width="100%",
    )


def _secrets_form() -> rx.Component:
    return rx.form(
        rx.vstack(
            rx.text("Stored encrypted, never shown again.", size="2", color=rx.color("gray", 11)),
            rx.foreach(McpPresetState.chosen_secrets, _secret_field),
            rx.vstack(
                rx.el.label(rx.text("Server name (optional)", size="2", weight="medium"), html_for="preset-name"),
                rx.input(id="preset-name", name="server_name", placeholder=McpPresetState.chosen, width="100%"),
                spacing="1",
                width="100%",
            ),
            rx.hstack(
                rx.button("Back", type="button", variant="soft", color_scheme="gray", on_click=McpPresetState.back),
                rx.button(rx.cond(McpPresetState.adding != "", rx.spinner(size="2"), rx.icon("plus", size=16)), "Add",
                          type="submit", disabled=McpPresetState.adding != ""),
                justify="end",
                spacing="3",
                width="100%",
            ),
            spacing="3",
            width="100%",
        ),
        on_submit=McpPresetState.submit_secrets,
        reset_on_submit=False,
        key=f"preset-form-{McpPresetState.form_version}",
        aria_label="Preset secrets",
        width="100%",
    )


def presets_dialog() -> rx.Component:
    """The picker dialog (opened by the page's "Add from preset" buttons)."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(rx.cond(McpPresetState.chosen != "", "Add " + McpPresetState.chosen_title,
                                    "Add an MCP server from a preset")),
            rx.dialog.description(
                rx.cond(McpPresetState.chosen != "", "This server needs a key or token.",
                        "Known servers, ready to use. Added servers are tested at once; enable them per bot."),
                size="2", color=rx.color("gray", 11), margin_bottom="0.75rem",
            ),
            rx.cond(
                McpPresetState.preset_error != "",
                rx.callout(McpPresetState.preset_error, icon="triangle-alert", color_scheme="red", width="100%",
                           margin_bottom="0.75rem", role="alert"),
            ),
            rx.cond(
                McpPresetState.chosen != "",
                _secrets_form(),
                rx.scroll_area(
                    rx.vstack(_tier("No key needed", McpPresetState.keyless),
                              _tier("Needs a key or token", McpPresetState.keyed), spacing="5", width="100%"),
                    max_height="min(32rem, 70vh)", type="auto", scrollbars="vertical",
                ),
            ),
            rx.cond(
                McpPresetState.chosen == "",
                rx.hstack(rx.dialog.close(rx.button("Close", variant="soft", color_scheme="gray")), justify="end",
                          margin_top="1rem"),
            ),
            max_width="44rem",
        ),
        open=McpPresetState.presets_open,
        on_open_change=McpPresetState.open_change,
    )
