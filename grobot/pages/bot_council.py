"""The Council tab (admins): a bot's deliberations (question, advisors, synthesis, confidence, tokens, cost),
one of them in full (``?deliberation=ID`` survives a reload), and the council's settings. A deliberation in
progress shows advisor by advisor as they answer (the tab follows it live); one without a synthesis is marked
failed, with why."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import COUNCIL
from grobot.components.empty_state import empty_state
from grobot.components.forms import MUTED, section
from grobot.components.safe_text import safe_markdown, safe_text
from grobot.core.models import AppUser, Bot
from grobot.core.services import costs, council
from grobot.core.services.users import NotSignedIn
from grobot.core.wording import counted
from grobot.pages.bot_council_settings import CouncilSettingsState, settings_card, settings_form
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

logger = logging.getLogger(__name__)

LIST_LIMIT = 50
QUERY_KEY = "deliberation"
LIVE_REFRESH_MS = 2000  # the list and the open deliberation follow a council in progress, this often
LIVE_STALE_SECONDS = 10.0  # a live refresh still running after this long does not block the next one
WIDE_ONLY = rx.breakpoints(initial="none", md="table-cell")  # columns a narrow screen leaves out
COLUMNS = (("When", "7rem", False), ("Question", None, False), ("Advisors", None, True), ("Confidence", "6rem", False),
           ("Tokens", "6rem", True), ("Cost", "5rem", True), ("Time", "5rem", True))


@dataclass
class DeliberationRow:
    """One past deliberation in the list."""

    id: int
    when: str
    question: str
    asked_by: str
    advisors: str
    confidence: str
    tokens: str
    cost: str
    seconds: str
    status: str = "done"  # running, done, failed, unfinished
    progress: str = ""  # "2 of 5 advisors answered" (running)


@dataclass
class AdvisorView:
    name: str
    llm: str
    answer: str
    error: str
    tokens: str
    seconds: str
    state: str = ""  # waiting, answering; "" once answered


@dataclass
class DeliberationView:
    """One deliberation in full."""

    id: int = 0
    when: str = ""
    question: str = ""
    asked_by: str = ""
    advisors: list[AdvisorView] = field(default_factory=list)
    consensus: str = ""
    disagreements: list[str] = field(default_factory=list)
    recommendation: str = ""
    confidence: str = ""
    error: str = ""
    tokens: str = ""
    cost: str = ""
    seconds: str = ""
    status: str = ""
    progress: str = ""


UNFINISHED = "it did not finish: the process that ran it stopped"


def _confidence(value: int | None) -> str:
    return "—" if value is None else f"{value}/100"


def _progress(d: Any) -> str:
    answered = sum(1 for a in d.advisors if not a.get("state"))
    return f"{answered} of {counted(len(d.advisors), 'advisor')} answered"


def _row(d: Any, currency: str) -> DeliberationRow:
    return DeliberationRow(id=d.id or 0, when=d.created_at.strftime("%Y-%m-%d %H:%M UTC"), question=d.question,
                           asked_by=f"{d.asked_by or '?'} · {d.platform.replace('_', ' ')}",
                           advisors=", ".join(str(a.get("name", "")) for a in d.advisors),
                           confidence=_confidence(d.confidence), tokens=f"{d.tokens_in + d.tokens_out:,}",
                           cost=costs.money(d.cost, currency), seconds=f"{d.seconds:.1f} s" if d.seconds else "—",
                           status=council.deliberation_status(d), progress=_progress(d))


def _view(d: Any, currency: str) -> DeliberationView:
    advisors = [AdvisorView(name=str(a.get("name", "")), llm=f"{a.get('provider', '')} {a.get('model', '')}".strip(),
                            answer=str(a.get("answer") or ""), error=str(a.get("error") or ""),
                            tokens=f"{int(a.get('tokens_in') or 0) + int(a.get('tokens_out') or 0):,} tokens",
                            seconds=f"{float(a.get('seconds') or 0):.1f} s", state=str(a.get("state") or ""))
                for a in d.advisors]
    row = _row(d, currency)
    error = UNFINISHED if row.status == "unfinished" else d.error
    if row.status == "unfinished":  # the ones still to answer never will
        for advisor in advisors:
            if advisor.state:
                advisor.state, advisor.error = "", "the council did not finish"
    return DeliberationView(id=row.id, when=row.when, question=d.question, asked_by=row.asked_by, advisors=advisors,
                            consensus=d.consensus, disagreements=list(d.disagreements),
                            recommendation=d.recommendation, confidence=row.confidence, error=error,
                            tokens=row.tokens, cost=row.cost, seconds=row.seconds, status=row.status,
                            progress=row.progress)


def _list(session: Session, bot: Bot) -> tuple[list[DeliberationRow], dict[str, int]]:
    rows = council.list_deliberations(bot.id or 0, session=session, limit=LIST_LIMIT)
    currency = costs.get_currency(session=session)
    return [_row(d, currency) for d in rows], council.deliberation_counts(bot.id or 0, session=session)


def load_list(token: str, bot_id: int) -> tuple[list[DeliberationRow], dict[str, int]]:
    """The newest deliberations, and how many the bot has by status (done, running, failed)."""
    return run_for_bot(token, bot_id, lambda session, _user, bot: _list(session, bot), admin=True)


def load_tab(token: str, bot_id: int) -> tuple[list[DeliberationRow], dict[str, int], dict[str, Any]]:
    """The deliberations, their counts and the council's settings, in one transaction (the tab's load)."""

    def work(session: Session, _user: AppUser, bot: Bot) -> tuple[list[DeliberationRow], dict[str, int],
                                                                  dict[str, Any]]:
        return (*_list(session, bot), settings_form(session, bot))

    return run_for_bot(token, bot_id, work, admin=True)


def load_one(token: str, bot_id: int, deliberation_id: int) -> DeliberationView:
    return run_for_bot(token, bot_id, lambda session, _user, bot: _view(
        council.get_deliberation(deliberation_id, session=session, bot_id=bot.id or 0),
        costs.get_currency(session=session)), admin=True)


class CouncilState(BotPageState):
    """The deliberations of the open bot, and the one open."""

    deliberations: list[DeliberationRow] = []
    counts: dict[str, int] = {}
    list_loaded: bool = False
    list_error: str = ""
    opened: DeliberationView = DeliberationView()
    open_error: str = ""
    _live_started: float = 0.0

    @rx.var
    def is_open(self) -> bool:
        return self.opened.id > 0

    @rx.var
    def shown_count(self) -> str:
        """"3 deliberations · 1 in progress · 2 failed" (a failed one, without a synthesis, is not a deliberation)."""
        done, running, failed = (self.counts.get(k, 0) for k in ("done", "running", "failed"))
        text = counted(done, "deliberation")
        text += (f" · {running} in progress" if running else "") + (f" · {failed} failed" if failed else "")
        total = done + running + failed
        return text + (f" (the newest {len(self.deliberations)} shown)" if len(self.deliberations) < total else "")

    @rx.event
    async def load(self):
        self.list_loaded, self.list_error, self.open_error = False, "", ""
        self.opened = DeliberationView()
        if not self.bot_ready:
            return None
        try:
            self.deliberations, self.counts, form = await asyncio.to_thread(
                load_tab, self.session_token, self.current_bot_id)
            (await self.get_state(CouncilSettingsState))._opened(form)  # no second load, no second round trip
            wanted = self.router.url.query_parameters.get(QUERY_KEY, "")
            if wanted.isdigit():
                await self._open(int(wanted))
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.list_error = user_message(exc)
        self.list_loaded = True
        return None

    async def _open(self, deliberation_id: int) -> None:
        try:
            self.opened = await asyncio.to_thread(load_one, self.session_token, self.current_bot_id, deliberation_id)
            self.open_error = ""
        except NotSignedIn:
            raise
        except Exception as exc:
            self.opened = DeliberationView()
            self.open_error = user_message(exc)

    @rx.event
    async def open_deliberation(self, deliberation_id: int):
        """Show one deliberation; its address (``?deliberation=ID``) can be reloaded and shared."""
        try:
            await self._open(int(deliberation_id))
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        if not self.opened.id:
            return None
        return rx.call_script(f"window.history.pushState(null, '', '?{QUERY_KEY}={int(self.opened.id)}')")

    @rx.event(background=True)
    async def refresh_live(self, _tick: str = ""):
        """Keep the list and the open deliberation current (every timer tick): a council asked on Discord or in
        Test Chat shows up, then its advisors as they answer, without a reload."""
        async with self:
            now = time.monotonic()
            if not self.list_loaded or (self._live_started and now - self._live_started < LIVE_STALE_SECONDS):
                return
            self._live_started = now
            token, bot_id = self.session_token, self.current_bot_id
            opened = self.opened.id if self.opened.status == "running" else 0
        try:
            rows, counts = await asyncio.to_thread(load_list, token, bot_id)
            view = await asyncio.to_thread(load_one, token, bot_id, opened) if opened else None
        except Exception as exc:  # a moment without the database, or the session ended: the next tick says
            logger.debug("Council refresh failed: %s", type(exc).__name__)
            rows, counts, view = None, {}, None
        async with self:
            self._live_started = 0.0
            if bot_id != self.current_bot_id or rows is None:
                return
            self.deliberations, self.counts = rows, counts
            if view is not None and view.id == self.opened.id:
                self.opened = view

    @rx.event
    def close_deliberation(self):
        self.opened = DeliberationView()
        self.open_error = ""
        return rx.call_script("window.history.pushState(null, '', window.location.pathname)")


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
