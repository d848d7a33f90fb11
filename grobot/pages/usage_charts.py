"""The Usage page's charts (recharts through Reflex) and breakdown tables, as plain component functions."""

from __future__ import annotations

import reflex as rx

from grobot.components.forms import LAID_OUT_WHEN_SHOWN

CHART_HEIGHT = 220
TICKS = {"fontSize": 11}  # the axes' labels (an axis's own font size does not reach them)
LABEL_WIDTH = 165  # px beside a breakdown's bars: its labels are cut to fit (grobot.pages.usage_state.LABEL_CHARS)
SOURCE_COLORS = {"discord": "var(--indigo-9)", "test": "var(--amber-9)", "cli": "var(--green-9)",
                 "council": "var(--iris-9)", "background": "var(--gray-9)"}  # each slice's ``fill`` in its data


def chart_card(title: str, chart: rx.Component, testid: str, *, empty: rx.Var | None = None,
               empty_text: str = "") -> rx.Component:
    """A chart under its title; with ``empty`` (a list var), ``empty_text`` in its place when the list is empty."""
    body = rx.box(chart, width="100%", height=f"{CHART_HEIGHT}px")
    if empty is not None:
        body = rx.cond(empty.length() > 0, body,  # type: ignore[attr-defined]
                       rx.center(rx.text(empty_text, size="2", color=rx.color("gray", 11), text_align="center"),
                                 width="100%", height=f"{CHART_HEIGHT}px", data_testid="chart-empty"))
    return rx.card(
        rx.vstack(
            rx.heading(title, size="3", as_="h3"),
            body,
            spacing="2",
            width="100%",
        ),
        width="100%",
        min_width="0",
        data_testid=testid,
        **LAID_OUT_WHEN_SHOWN,
    )


def _axes(key: str = "day", *, counts: bool = False) -> list[rx.Component]:
    """The grid, axes and tooltip of a chart per day (``counts``: whole numbers on the value axis)."""
    return [
        rx.recharts.cartesian_grid(stroke_dasharray="3 3", vertical=False),
        rx.recharts.x_axis(data_key=key, tick_line=False, tick=TICKS, min_tick_gap=8),
        rx.recharts.y_axis(width=80, tick_line=False, tick=TICKS, allow_decimals=not counts),
        rx.recharts.graphing_tooltip(),
    ]


def calls_chart(data: rx.Var) -> rx.Component:
    return chart_card("LLM calls per day", rx.recharts.bar_chart(
        *_axes(counts=True), rx.recharts.bar(data_key="calls", name="LLM calls", fill="var(--accent-9)", is_animation_active=False),
        data=data, width="100%", height=CHART_HEIGHT), "chart-calls")


TOKENS_IN_COLOR = "var(--indigo-9)"  # tokens in and out: colours far apart, in light and dark themes
TOKENS_OUT_COLOR = "var(--amber-9)"


def tokens_chart(data: rx.Var) -> rx.Component:
    return chart_card("Tokens per day", rx.recharts.area_chart(
        *_axes(counts=True),
        rx.recharts.area(data_key="tokens_in", name="tokens in", stack_id="tokens", stroke=TOKENS_IN_COLOR,
                         fill=TOKENS_IN_COLOR, fill_opacity=0.35, is_animation_active=False),
        rx.recharts.area(data_key="tokens_out", name="tokens out", stack_id="tokens", stroke=TOKENS_OUT_COLOR,
                         fill=TOKENS_OUT_COLOR, fill_opacity=0.6, is_animation_active=False),
        rx.recharts.legend(),
        data=data, width="100%", height=CHART_HEIGHT), "chart-tokens")


def latency_chart(data: rx.Var) -> rx.Component:
    return chart_card("Mean latency per day (seconds)", rx.recharts.line_chart(
        *_axes(), rx.recharts.line(data_key="latency", name="seconds", stroke="var(--green-9)", dot=True,
                                   is_animation_active=False),
        data=data, width="100%", height=CHART_HEIGHT), "chart-latency")


def cost_chart(data: rx.Var, currency: rx.Var) -> rx.Component:
    return chart_card("Estimated cost per day", rx.recharts.bar_chart(
        *_axes(), rx.recharts.bar(data_key="cost", name=currency, fill="var(--grass-9)", is_animation_active=False),
        data=data, width="100%", height=CHART_HEIGHT), "chart-cost")


def breakdown_chart(title: str, data: rx.Var, testid: str, *, empty_text: str = "") -> rx.Component:
    """Calls per name (a model, a bot, a user), longest bar first; a long name is cut to fit beside its bar
    (whole in the table below)."""
    return chart_card(title, rx.recharts.bar_chart(
        rx.recharts.cartesian_grid(stroke_dasharray="3 3", horizontal=False),
        rx.recharts.x_axis(type_="number", tick_line=False, tick=TICKS, allow_decimals=False),
        rx.recharts.y_axis(data_key="short", type_="category", width=LABEL_WIDTH, tick_line=False, tick=TICKS,
                           interval=0),
        rx.recharts.graphing_tooltip(),
        rx.recharts.bar(data_key="calls", name="LLM calls", fill="var(--accent-9)", is_animation_active=False),
        data=data, layout="vertical", width="100%", height=CHART_HEIGHT), testid,
        empty=data if empty_text else None, empty_text=empty_text)


def source_chart(data: rx.Var) -> rx.Component:
    """Discord vs Test Chat (and CLI, background) by LLM calls (each item has its ``fill``)."""
    return chart_card("Discord vs Test Chat", rx.recharts.pie_chart(
        rx.recharts.pie(
            data=data, data_key="calls", name_key="name", inner_radius="45%", outer_radius="80%", label=True,
            is_animation_active=False,
        ),
        rx.recharts.legend(),
        rx.recharts.graphing_tooltip(),
        width="100%", height=CHART_HEIGHT), "chart-sources")


def breakdown_table(first: str, lines: rx.Var, testid: str) -> rx.Component:
    """Name, calls, tokens, mean latency and cost of each line (dicts of text)."""
    right = {"text_align": "right"}
    return rx.box(
        rx.table.root(
            rx.table.header(rx.table.row(
                rx.table.column_header_cell(first),
                rx.table.column_header_cell("LLM calls", **right),
                rx.table.column_header_cell("Tokens", **right),
                rx.table.column_header_cell("Mean latency", **right),
                rx.table.column_header_cell("Est. cost", **right),
            )),
            rx.table.body(rx.foreach(lines, lambda line: rx.table.row(
                rx.table.row_header_cell(rx.text(line["name"], weight="medium")),
                rx.table.cell(line["calls"], **right),
                rx.table.cell(line["tokens"], **right),
                rx.table.cell(line["latency"], **right),
                rx.table.cell(line["cost"], **right),
                data_usage_name=line["name"],
            ))),
            variant="surface",
            size="1",
            width="100%",
            data_testid=testid,
        ),
        overflow_x="auto",
        width="100%",
    )


def month_table(lines: rx.Var) -> rx.Component:
    """Calls, tokens and cost of the fleet per UTC month (the last six), newest first."""
    right = {"text_align": "right"}
    return rx.table.root(
        rx.table.header(rx.table.row(
            rx.table.column_header_cell("Month"),
            rx.table.column_header_cell("LLM calls", **right),
            rx.table.column_header_cell("Tokens", **right),
            rx.table.column_header_cell("Est. cost", **right),
        )),
        rx.table.body(rx.foreach(lines, lambda line: rx.table.row(
            rx.table.row_header_cell(line["name"]),
            rx.table.cell(line["calls"], **right),
            rx.table.cell(line["tokens"], **right),
            rx.table.cell(line["cost"], **right),
        ))),
        variant="surface",
        size="1",
        width="100%",
        data_testid="usage-by-month",
    )
