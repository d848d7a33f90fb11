"""The Council tab: its state, what it reads and does through the services with the checks of each event (the view
is in :mod:`grobot.pages.bot_council`)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.core.models import AppUser, Bot
from grobot.core.services import costs, council
from grobot.core.services.users import NotSignedIn
from grobot.core.wording import counted
from grobot.pages.bot_council_settings_state import CouncilSettingsState, settings_form
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

logger = logging.getLogger(__name__)

LIST_LIMIT = 50
QUERY_KEY = "deliberation"
LIVE_STALE_SECONDS = 10.0  # a live refresh still running after this long does not block the next one


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
