"""The Council tab (admins): a bot's deliberations (question, advisors, synthesis, confidence, tokens, cost),
one of them in full (``?deliberation=ID`` survives a reload), and the council's settings. A deliberation in
progress shows advisor by advisor as they answer (the tab follows it live); one without a synthesis is marked
failed, with why."""

from __future__ import annotations

import reflex as rx

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import COUNCIL
from grobot.components.empty_state import empty_state
from grobot.components.forms import MUTED, section
from grobot.components.safe_text import safe_markdown, safe_text
from grobot.pages.bot_council_settings import settings_card
from grobot.pages.bot_council_state import AdvisorView, CouncilState, DeliberationRow

LIVE_REFRESH_MS = 2000  # the list and the open deliberation follow a council in progress, this often
WIDE_ONLY = rx.breakpoints(initial="none", md="table-cell")  # columns a narrow screen leaves out
COLUMNS = (("When", "7rem", False), ("Question", None, False), ("Advisors", None, True), ("Confidence", "6rem", False),
           ("Tokens", "6rem", True), ("Cost", "5rem", True), ("Time", "5rem", True))


# --------------------------------------------------------------------------- components


def status_badge(status: rx.Var[str], confidence: rx.Var[str], progress: rx.Var[str]) -> rx.Component:
    """A finished deliberation's confidence; else "In progress" (with how many advisors answered) or "Failed"."""
    return rx.match(
        status,
        ("running", rx.badge(rx.spinner(size="1"), "In progress", variant="soft", color_scheme="amber",
                             title=progress, data_testid="deliberation-running")),
        ("failed", rx.badge("Failed", variant="soft", color_scheme="red", data_testid="deliberation-failed")),
        ("unfinished", rx.badge("Failed", variant="soft", color_scheme="red", data_testid="deliberation-failed")),
        rx.badge(confidence, variant="soft", color_scheme="iris"),
    )


def deliberation_row(row: DeliberationRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(row.when, size="1", color=MUTED), width="7rem"),
        rx.table.row_header_cell(
            rx.link(safe_text(row.question, weight="medium", truncate=True, max_width="28rem"), href="#",
                    on_click=CouncilState.open_deliberation(row.id).prevent_default, aria_label="Open deliberation"),
            rx.text(row.asked_by, rx.cond(row.status == "running", " · " + row.progress, ""), size="1",
                    color=MUTED)),
        rx.table.cell(safe_text(row.advisors, size="1"), display=WIDE_ONLY),
        rx.table.cell(status_badge(row.status, row.confidence, row.progress), text_align="right"),
        rx.table.cell(rx.text(row.tokens, size="2"), text_align="right", display=WIDE_ONLY),
        rx.table.cell(rx.text(row.cost, size="2"), text_align="right", display=WIDE_ONLY),
        rx.table.cell(rx.text(row.seconds, size="2", white_space="nowrap"), text_align="right", display=WIDE_ONLY),
        data_deliberation=row.id,
        align="center",
    )


def deliberation_list() -> rx.Component:
    return section(
        "Deliberations",
        CouncilState.shown_count,
        rx.cond(CouncilState.list_error != "",
                rx.callout(CouncilState.list_error, icon="triangle-alert", color_scheme="red", width="100%")),
        rx.cond(
            CouncilState.deliberations.length() > 0,  # type: ignore[attr-defined]
            rx.box(rx.table.root(
                rx.table.header(rx.table.row(*[
                    rx.table.column_header_cell(label, width=width, display=WIDE_ONLY if wide_only else None)
                    for label, width, wide_only in COLUMNS])),
                rx.table.body(rx.foreach(CouncilState.deliberations, deliberation_row)),
                variant="surface", width="100%",
            ), overflow_x="auto", width="100%"),
            empty_state("users", "No deliberations yet",
                        "Ask the council with /council QUESTION on Discord or in the Test Chat."),
        ),
    )


def advisor_section(advisor: AdvisorView) -> rx.Component:
    return rx.box(
        rx.hstack(rx.text(advisor.name, weight="bold"), rx.badge(advisor.llm, variant="soft", color_scheme="gray"),
                  rx.spacer(),
                  rx.cond(advisor.state == "", rx.text(advisor.tokens, " · ", advisor.seconds, size="1", color=MUTED)),
                  align="center", spacing="2", width="100%", wrap="wrap"),
        rx.match(
            advisor.state,
            ("answering", rx.hstack(rx.spinner(size="1"), rx.text("Answering…", size="2", color=MUTED),
                                    spacing="2", align="center", margin_top="0.25rem")),
            ("waiting", rx.text("Waiting for its turn on the model", size="2", color=MUTED, margin_top="0.25rem")),
            rx.cond(advisor.error != "",
                    rx.callout(rx.text("Could not answer: ", advisor.error), icon="circle-x", color_scheme="red",
                               size="1", margin_top="0.4rem"),
                    safe_markdown(advisor.answer, margin_top="0.25rem")),
        ),
        padding="0.75rem", border=f"1px solid {rx.color('gray', 5)}", border_radius="8px", width="100%",
        data_advisor_answer=advisor.name, data_state=rx.cond(advisor.state == "", "answered", advisor.state),
    )


def _label(text: str) -> rx.Component:
    return rx.text(text, weight="bold", size="1", color=rx.color("iris", 11), text_transform="uppercase",
                   letter_spacing="0.04em", margin_top="0.25rem")


def synthesis_box() -> rx.Component:
    opened = CouncilState.opened
    return rx.box(
        rx.hstack(rx.heading("Synthesis", size="3", as_="h3"),
                  status_badge(opened.status, "Confidence " + opened.confidence, opened.progress),
                  spacing="3", align="center", data_testid="confidence"),
        rx.cond(opened.status == "running",
                rx.text("In progress: ", opened.progress, ". The synthesis comes once they have all answered.",
                        size="2", color=MUTED, margin_top="0.5rem")),
        rx.cond(
            opened.error != "",
            rx.callout(rx.text("No synthesis: ", opened.error), icon="triangle-alert", color_scheme="red", size="1",
                       margin_top="0.5rem", data_testid="synthesis-error"),
        ),
        rx.cond(opened.consensus != "", rx.vstack(
            _label("Consensus"), safe_text(opened.consensus, size="2"),
            _label("Disagreements"),
            rx.cond(opened.disagreements.length() > 0,  # type: ignore[attr-defined]
                    rx.el.ul(rx.foreach(opened.disagreements, lambda d: rx.el.li(safe_text(d, size="2"))),
                             padding_left="1.25rem", margin="0", list_style_type="disc"),
                    rx.text("None", size="2", color=MUTED)),
            _label("Recommendation"), safe_text(opened.recommendation, size="2"),
            spacing="1", margin_top="0.5rem", width="100%")),
        padding="0.75rem", border=f"1px solid {rx.color('iris', 6)}", background=rx.color("iris", 2),
        border_radius="8px", width="100%", data_testid="synthesis",
    )


def deliberation_detail() -> rx.Component:
    opened = CouncilState.opened
    return section(
        "Deliberation",
        rx.text(opened.when, " · asked by ", opened.asked_by, " · ", opened.tokens, " tokens · cost ", opened.cost,
                " · ", opened.seconds),
        safe_text(opened.question, size="4", weight="medium", data_testid="deliberation-question"),
        synthesis_box(),
        rx.vstack(rx.foreach(opened.advisors, advisor_section), spacing="2", width="100%"),
        actions=rx.button(rx.icon("arrow-left", size=14), "All deliberations", variant="soft",
                          on_click=CouncilState.close_deliberation),
    )


def council_tab() -> rx.Component:
    return rx.vstack(
        rx.moment(interval=LIVE_REFRESH_MS, format="HH:mm:ss", display="none", on_change=CouncilState.refresh_live),
        rx.cond(CouncilState.open_error != "",
                rx.callout(CouncilState.open_error, icon="triangle-alert", color_scheme="red", width="100%")),
        rx.cond(CouncilState.is_open, deliberation_detail(),
                rx.cond(CouncilState.list_loaded, rx.vstack(deliberation_list(), settings_card(), spacing="4",
                                                            width="100%"))),
        spacing="4",
        width="100%",
    )


def council_page() -> rx.Component:
    return bot_page(COUNCIL, council_tab())
