"""The Usage page (admins): LLM calls, tokens, latency and estimated cost of the fleet over the
last 1, 7 or 30 days: charts per day, breakdowns per model, bot, Discord user and source, tables
per bot and agent role, the budget alerts, and the prices (everything aggregated in SQL by
``grobot.core.services.usage`` and ``usage_charts``, each list limited there). The view; its state:
:mod:`grobot.pages.usage_state`."""

from __future__ import annotations

import reflex as rx

from grobot.components.budget_alerts import budget_alert_banner
from grobot.components.empty_state import empty_state
from grobot.components.forms import error_text
from grobot.components.layout import NARROW_ONLY, WIDE_CELL, page_layout
from grobot.components.stat_card import stat_card
from grobot.pages import usage_charts as charts
from grobot.pages.usage_state import PriceLine, PricesState, UsageLine, UsageState

ROUTE = "/usage"
TITLE = "Usage · GroBot"


def usage_row(line: UsageLine) -> rx.Component:
    """One bot's or agent role's usage; a narrow screen shows its tokens in and out under its name, in
    place of their columns, so the row (mean latency and cost too) fits the screen."""
    return rx.table.row(
        rx.table.row_header_cell(rx.vstack(
            rx.text(line.name, weight="medium", word_break="break-word"),
            rx.text(line.tokens_in, " in · ", line.tokens_out, " out tokens", size="1", color=rx.color("gray", 11),
                    display=NARROW_ONLY, data_testid="usage-tokens"),
            spacing="1",
        )),
        rx.table.cell(line.calls, text_align="right"),
        rx.table.cell(line.tokens_in, text_align="right", display=WIDE_CELL),
        rx.table.cell(line.tokens_out, text_align="right", display=WIDE_CELL),
        rx.table.cell(
            rx.cond(
                line.errors > 0,
                rx.text(line.errors, " (", line.error_rate, ")", color=rx.color("red", 11)),
                rx.text("0", color=rx.color("gray", 11)),
            ),
            text_align="right",
        ),
        rx.table.cell(line.latency, text_align="right"),
        rx.table.cell(line.cost, text_align="right"),
        align="center",
        data_usage_name=line.name,
    )


def usage_table(first: str, lines: rx.Var, testid: str) -> rx.Component:
    right = {"text_align": "right"}
    return rx.table.root(
        rx.table.header(
            rx.table.row(
                rx.table.column_header_cell(first, width="28%"),
                rx.table.column_header_cell("LLM calls", **right),
                rx.table.column_header_cell("Tokens in", display=WIDE_CELL, **right),
                rx.table.column_header_cell("Tokens out", display=WIDE_CELL, **right),
                rx.table.column_header_cell("Errors", **right),
                rx.table.column_header_cell("Mean latency", **right),
                rx.table.column_header_cell("Est. cost", **right),
            )
        ),
        rx.table.body(rx.foreach(lines, usage_row)),
        variant="surface",
        size=rx.breakpoints(initial="1", md="2"),
        width="100%",
        data_testid=testid,
    )


def alerts_banner() -> rx.Component:
    return budget_alert_banner(UsageState.alerts, title="Budget alerts", testid="budget-alerts")


def grid(*children: rx.Component) -> rx.Component:
    return rx.grid(*children, columns=rx.breakpoints(initial="1", md="2"), gap="1rem", width="100%")


def usage_content() -> rx.Component:
    return rx.vstack(
        rx.flex(
            stat_card("LLM calls", UsageState.totals.calls, "activity", "accent"),
            stat_card("Tokens", UsageState.totals.tokens, "coins", "amber"),
            stat_card("Errors", UsageState.totals.errors, "triangle-alert", "red"),
            stat_card("Mean latency", UsageState.totals.latency, "timer", "green"),
            stat_card("Estimated cost", UsageState.totals.cost, "wallet", "grass"),
            gap="1rem",
            wrap="wrap",
            width="100%",
        ),
        rx.heading("Over time", size="4", as_="h2", margin_top="0.5rem"),
        grid(charts.calls_chart(UsageState.daily), charts.tokens_chart(UsageState.daily),
             charts.latency_chart(UsageState.daily), charts.cost_chart(UsageState.daily, UsageState.currency)),
        rx.heading("Breakdowns", size="4", as_="h2", margin_top="0.5rem"),
        grid(charts.breakdown_chart("LLM calls per model", UsageState.models, "chart-models"),
             charts.source_chart(UsageState.sources),
             charts.breakdown_chart("LLM calls per bot", UsageState.bot_items, "chart-bots"),
             charts.breakdown_chart("LLM calls per Discord user", UsageState.users, "chart-users",
                                    empty_text="No Discord user's message was answered in this period "
                                               "(Test Chat and command-line runs are not counted here).")),
        rx.heading("Per month (UTC)", size="4", as_="h2", margin_top="0.5rem"),
        charts.month_table(UsageState.months),
        rx.heading("Per model", size="4", as_="h2", margin_top="0.5rem"),
        charts.breakdown_table("Model", UsageState.models, "usage-by-model"),
        rx.heading("Per Discord user", size="4", as_="h2", margin_top="0.5rem"),
        rx.cond(UsageState.users.length() > 0,
                charts.breakdown_table("Discord user", UsageState.users, "usage-by-user"),
                rx.text("No Discord messages answered in this period.", size="2", color=rx.color("gray", 11))),
        rx.heading("Per bot", size="4", as_="h2", margin_top="0.5rem"),
        rx.box(usage_table("Bot", UsageState.by_bot, "usage-by-bot"), overflow_x="auto", width="100%"),
        rx.heading("Per agent role", size="4", as_="h2", margin_top="0.5rem"),
        rx.box(usage_table("Agent role", UsageState.by_role, "usage-by-role"), overflow_x="auto", width="100%"),
        spacing="4",
        width="100%",
    )


def usage_page() -> rx.Component:
    """The Usage page."""
    return page_layout(
        rx.vstack(
            alerts_banner(),
            rx.cond(
                UsageState.loaded,
                rx.cond(
                    UsageState.by_bot.length() > 0,
                    usage_content(),
                    empty_state(
                        "chart-no-axes-column",
                        "No LLM calls in the last " + UsageState.period_label,
                        "Every LLM call a bot makes (on Discord or in Test Chat) is counted here. "
                        "Chat with a bot, or choose a longer period.",
                    ),
                ),
                rx.center(rx.spinner(size="3"), padding="3rem", width="100%"),
            ),
            prices_card(),
            spacing="4",
            width="100%",
        ),
        active="usage",
        title="Usage",
        subtitle="LLM calls of the fleet over the last " + UsageState.period_label,
        actions=rx.hstack(
            rx.segmented_control.root(
                rx.segmented_control.item("24 h", value="1"),
                rx.segmented_control.item("7 days", value="7"),
                rx.segmented_control.item("30 days", value="30"),
                value=UsageState.period,
                on_change=UsageState.set_period,
                aria_label="Period",
            ),
            rx.icon_button(rx.icon("refresh-cw", size=16), variant="soft", color_scheme="gray", on_click=UsageState.open,
                           aria_label="Refresh", title="Refresh"),
            spacing="3",
            align="center",
        ),
    )



def source_badge(line: PriceLine) -> rx.Component:
    """Whose price it is: "set here" (the admin's) or "default"."""
    return rx.badge(line.source, color_scheme=rx.cond(line.admin, "accent", "gray"), variant="soft")


def price_row(line: PriceLine) -> rx.Component:
    """One model's price; a narrow screen shows its provider and source under the model, in place of
    their columns, so the row (and its Remove button) fits the screen."""
    return rx.table.row(
        rx.table.cell(line.provider, display=WIDE_CELL),
        rx.table.row_header_cell(rx.vstack(
            rx.text(line.model, weight="medium", word_break="break-word"),
            rx.hstack(rx.text(line.provider, size="1", color=rx.color("gray", 11)), source_badge(line),
                      spacing="2", align="center", wrap="wrap", display=NARROW_ONLY, data_testid="price-details"),
            spacing="1",
        )),
        rx.table.cell(line.input, text_align="right"),
        rx.table.cell(line.output, text_align="right"),
        rx.table.cell(source_badge(line), display=WIDE_CELL),
        rx.table.cell(rx.cond(
            line.admin,
            rx.icon_button(rx.icon("trash-2", size=14), variant="ghost", color_scheme="red", size="1",
                           aria_label="Remove the price of " + line.provider + " " + line.model,
                           on_click=PricesState.delete_price(line.provider, line.model)),
        )),
        data_price_model=line.model,
    )


def price_input(name: str, placeholder: str, label: str, width: str, **props: str) -> rx.Component:
    """One field of the price form, with its problem under it."""
    return rx.vstack(
        rx.input(name=name, placeholder=placeholder, aria_label=label, width="100%", required=True,
                 aria_invalid=rx.cond(PricesState.price_errors.contains(name), "true", "false"), **props),
        rx.cond(PricesState.price_errors.contains(name),  # type: ignore[attr-defined]
                error_text(PricesState.price_errors[name], data_field_error=f"price-{name}")),
        spacing="1",
        width=width,
        max_width="100%",
    )


def price_form() -> rx.Component:
    return rx.form(
        rx.flex(
            price_input("provider", "provider (e.g. openai)", "Provider", "11rem"),
            price_input("model", "model", "Model", "14rem"),
            price_input("input", "input", "Input price per million tokens", "7rem", input_mode="decimal"),
            price_input("output", "output", "Output price per million tokens", "7rem", input_mode="decimal"),
            rx.button("Save price", type="submit"),
            gap="0.5rem",
            wrap="wrap",
            align="start",
        ),
        key=PricesState.form_key,
        on_submit=PricesState.save_price,
        reset_on_submit=False,
    )


def currency_form() -> rx.Component:
    return rx.form(
        rx.hstack(
            rx.text("Currency", size="2", color=rx.color("gray", 11)),
            rx.input(name="currency", default_value=PricesState.currency, key=PricesState.currency,
                     aria_label="Currency", width="5rem", max_length=3),
            rx.button("Save currency", type="submit", variant="soft"),
            align="center",
            spacing="2",
        ),
        on_submit=PricesState.save_currency,
    )


def prices_card() -> rx.Component:
    right = {"text_align": "right"}
    return rx.card(
        rx.vstack(
            rx.heading("Prices", size="4", as_="h2"),
            rx.text("Per million tokens, in " + PricesState.currency + ". Estimated costs use them; local models "
                    "(Ollama, llama.cpp) are free, and a model without a price has no cost. The defaults are "
                    "approximate list prices: set your own for your contract or currency.",
                    size="2", color=rx.color("gray", 11)),
            currency_form(),
            price_form(),
            rx.box(
                rx.table.root(
                    rx.table.header(rx.table.row(
                        rx.table.column_header_cell("Provider", display=WIDE_CELL),
                        rx.table.column_header_cell("Model"),
                        rx.table.column_header_cell("Input", **right),
                        rx.table.column_header_cell("Output", **right),
                        rx.table.column_header_cell("Source", display=WIDE_CELL),
                        rx.table.column_header_cell(""),
                    )),
                    rx.table.body(rx.foreach(PricesState.prices, price_row)),
                    variant="surface",
                    size="1",
                    width="100%",
                    data_testid="prices",
                ),
                overflow_x="auto",
                width="100%",
            ),
            spacing="3",
            width="100%",
        ),
        width="100%",
    )
