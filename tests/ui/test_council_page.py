"""The Council tab in a real browser: past deliberations listed and opened (the address survives a
reload), hostile text shown as text, the council switched on, an advisor's LLM changed and one removed."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from grobot.core.agents.council import AdvisorAnswer, Deliberation
from grobot.core.db import session_scope
from grobot.core.llm.service import CallRecord
from grobot.core.services import bots, costs, council
from tests.ui.auth import PAGE_TIMEOUT_MS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

HOSTILE = "<img src=x onerror=alert(1)> Should we expand to Lisbon?"


def _deliberation(question: str, confidence: int) -> Deliberation:
    result = Deliberation(question=question, consensus="Expand, but slowly.",
                          disagreements=["The Devil's Advocate doubts the demand"],
                          recommendation="Open a pop-up store first.", confidence=confidence, seconds=2.1)
    result.advisors = [
        AdvisorAnswer("Strategist", "", "ollama", "strat-model", answer="**Go** for the *first-mover* edge.",
                      tokens_in=40, tokens_out=12, seconds=0.9),
        AdvisorAnswer("Pragmatist", "", "openai", "gpt-prag", error="HTTP 500 from the server", seconds=1.2),
        AdvisorAnswer("Analyst", "", "ollama", "fake-model", answer="The numbers say yes.", tokens_in=40,
                      tokens_out=10, seconds=1.4),
    ]
    result.records = [CallRecord(role="council_advisor", provider="ollama", model="council-priced", tokens_in=100,
                                 tokens_out=30)]
    return result


def test_admin_reads_deliberations_and_sets_up_the_council(admin_page) -> None:
    page = admin_page
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name=f"Board-{uuid.uuid4().hex[:6]}").id or 0
        costs.set_price("ollama", "council-priced", 10.0, 20.0, session=session)
        older = council.save_deliberation(bot_id, _deliberation("Hire a second baker?", 40), session=session,
                                          asked_by="alice", platform="discord").id
        newest = council.save_deliberation(bot_id, _deliberation(HOSTILE, 72), session=session, asked_by="bob",
                                           platform="test_chat").id
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"/bots/{bot_id}/council")
    expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    rows = page.locator("[data-deliberation]")
    expect(rows).to_have_count(2, timeout=PAGE_TIMEOUT_MS)
    expect(rows.first).to_contain_text(HOSTILE)  # newest first, the markup shown as text
    expect(rows.first).to_contain_text("Strategist, Pragmatist, Analyst")
    expect(rows.first).to_contain_text("72/100")
    expect(rows.first).to_contain_text("130")  # tokens
    expect(rows.first).to_contain_text("EUR 0.0016")  # 100 in at 10, 30 out at 20 per million
    expect(rows.nth(1)).to_contain_text("Hire a second baker?")
    expect(page.get_by_text("2 deliberations")).to_be_visible()
    assert page.locator("img[src='x']").count() == 0

    rows.first.get_by_role("link", name="Open deliberation").click()
    expect(page).to_have_url(re.compile(rf"\?deliberation={newest}$"), timeout=PAGE_TIMEOUT_MS)
    synthesis = page.get_by_test_id("synthesis")
    expect(synthesis).to_contain_text("Confidence 72/100")
    expect(synthesis).to_contain_text("Expand, but slowly.")
    expect(synthesis).to_contain_text("The Devil's Advocate doubts the demand")
    expect(synthesis).to_contain_text("Open a pop-up store first.")
    strategist = page.locator('[data-advisor-answer="Strategist"]')
    expect(strategist).to_contain_text("ollama strat-model")
    expect(strategist.locator("strong")).to_have_text("Go")  # the answer's markdown
    expect(page.locator('[data-advisor-answer="Pragmatist"]')).to_contain_text(
        "Could not answer: HTTP 500 from the server")

    page.reload()  # the open deliberation survives a reload
    expect(page.get_by_test_id("deliberation-question")).to_have_text(HOSTILE, timeout=PAGE_TIMEOUT_MS)
    page.set_viewport_size({"width": 420, "height": 900})
    expect(page.get_by_test_id("synthesis")).to_be_visible()
    page.get_by_role("button", name="All deliberations").click()
    expect(rows).to_have_count(2, timeout=PAGE_TIMEOUT_MS)
    expect(page).not_to_have_url(re.compile(r"deliberation="))
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"/bots/{bot_id}/council?deliberation={older}")
    expect(page.get_by_test_id("deliberation-question")).to_have_text("Hire a second baker?",
                                                                     timeout=PAGE_TIMEOUT_MS)
    page.get_by_role("button", name="All deliberations").click()

    # Settings: the switch saves at once; the advisors are saved with Save.
    switch = page.get_by_role("switch", name="Council enabled")
    expect(switch).not_to_be_checked(timeout=PAGE_TIMEOUT_MS)
    switch.click()
    expect(switch).to_be_checked(timeout=PAGE_TIMEOUT_MS)
    assert _council(bot_id)[0] is True
    visionary = page.locator('[data-advisor="Visionary"]')
    expect(visionary.get_by_test_id("advisor-uses")).to_have_text("ollama llama3.2")
    visionary.get_by_role("textbox", name="Model of Visionary").fill("vision-9")
    visionary.get_by_role("textbox", name="Role of Visionary").fill("You are the Visionary. Think in decades.")
    expect(page.get_by_text("Unsaved changes")).to_be_visible()
    expect(page.get_by_role("button", name="Remove Strategist")).to_be_disabled()  # no edit is lost by a reload
    page.get_by_role("button", name="Save", exact=True).click()
    expect(visionary.get_by_test_id("advisor-uses")).to_have_text("ollama vision-9", timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_text("Unsaved changes")).to_have_count(0)
    advisors = _council(bot_id)[1]
    assert advisors["Visionary"] == ("vision-9", "You are the Visionary. Think in decades.")

    page.get_by_role("button", name="Remove Strategist").click()
    dialog = page.get_by_role("alertdialog")
    expect(dialog).to_contain_text("Strategist no longer takes part")
    dialog.get_by_role("button", name="Remove").click()
    expect(page.locator('[data-advisor="Strategist"]')).to_have_count(0, timeout=PAGE_TIMEOUT_MS)
    assert "Strategist" not in _council(bot_id)[1]
    assert not page.grobot_record.console_errors, page.grobot_record.console_errors


def _council(bot_id: int) -> tuple[bool, dict[str, tuple[str, str]]]:
    with session_scope(readonly=True) as session:
        return (council.get_council(bot_id, session=session).enabled,
                {a.name: (a.model, a.role) for a in council.advisors(bot_id, session=session)})


def test_council_in_test_chat_streams_each_advisor_as_a_step(admin_page, fake_llm, ui_env, tmp_path) -> None:
    """On a real bot worker (the page follows a run at its worker's Test Chat runner)."""
    import threading

    from sqlmodel import update

    from grobot.core import tester_chat_link
    from grobot.core.models import Bot
    from tests.fakes.llm import Reply, use_fake_llm
    from tests.helpers import wait_for
    from tests.ui.chat import start_worker, stop_worker, unique

    page = admin_page
    with session_scope() as session:
        session.execute(update(Bot).values(enabled=False))  # only this bot runs (the others have no Discord)
        bot_id = bots.create_bot(session=session, name=unique("Council")).id or 0
        council.set_council(bot_id, session=session, enabled=True)
    use_fake_llm(fake_llm, bot_id=bot_id)

    def advisor(name: str):
        return lambda body: f"You are the {name}." in str(body["messages"][0]["content"])

    fake_llm.script_for(advisor("Strategist"), Reply(text="Take the left road."), persistent=True)
    fake_llm.script_for(advisor("Devil's Advocate"), Reply(status=500, error="model crashed"), persistent=True)
    slow = threading.Event()  # the slow advisors answer once the page has shown the fast one's answer
    for name in ("Analyst", "Pragmatist", "Visionary"):
        fake_llm.script_for(advisor(name), Reply(text=f"{name}: left, after a while.", hold=slow), persistent=True)
    fake_llm.script_for(lambda body: "You chair an advisory council" in str(body["messages"][0]["content"]),
                        Reply(json={"consensus": "Left.", "disagreements": [], "recommendation": "Go left.",
                                    "confidence": 88}), persistent=True)
    worker = start_worker(ui_env, tmp_path / "worker.log")
    try:
        def runner() -> bool:
            with session_scope(readonly=True) as session:
                return bool(tester_chat_link.live_runners(session=session))

        wait_for(runner, timeout=120, interval=0.1, message="the worker's Test Chat runner")
        page.goto(f"/bots/{bot_id}/chat")
        box = page.get_by_role("textbox", name="Message")
        expect(box).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        box.fill("/council Which road?")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_test_id("user-message").last).to_have_text("/council Which road?", timeout=PAGE_TIMEOUT_MS)
        try:
            live = page.get_by_test_id("live-answer")
            # The fast advisor's section and step show while the slow ones still think.
            expect(live).to_contain_text("Take the left road.", timeout=PAGE_TIMEOUT_MS)
            expect(live.get_by_test_id("chain-steps")).to_contain_text("Advisor: Strategist")
            expect(live).not_to_contain_text("Synthesis")
        finally:
            slow.set()
        answer = page.get_by_test_id("bot-answer").last
        expect(answer).to_contain_text("Synthesis · confidence 88/100", timeout=PAGE_TIMEOUT_MS)
    finally:
        stop_worker(worker)
    answer = page.get_by_test_id("bot-answer").last
    expect(answer).to_contain_text("Synthesis · confidence 88/100", timeout=PAGE_TIMEOUT_MS)
    expect(answer).to_contain_text("could not answer")
    steps = answer.get_by_test_id("chain-steps")
    steps.get_by_text(re.compile(r"^Steps \(\d+\)$")).click()
    for name in ("Strategist", "Analyst", "Pragmatist", "Visionary", "Devil's Advocate"):
        expect(steps).to_contain_text(f"Advisor: {name}")

    page.goto(f"/bots/{bot_id}/council")
    row = page.locator("[data-deliberation]")
    expect(row).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
    expect(row).to_contain_text("Which road?")
    expect(row).to_contain_text("88/100")


def test_council_handlers_refuse_a_tester_on_the_server(ui_env) -> None:
    """A tester granted the bot still cannot read or change its council (admins only, checked on the server)."""
    from grobot.core.errors import PermissionDenied
    from grobot.core.models import Role
    from grobot.core.services import users
    from grobot.pages import bot_council_settings_state as bot_council_settings
    from grobot.pages import bot_council_state as bot_council
    from tests.ui.auth import create_ui_user
    from tests.ui.chat import unique

    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name=unique("Guarded")).id or 0
        deliberation_id = council.save_deliberation(bot_id, _deliberation("Secret plan?", 50), session=session).id
    tester = create_ui_user(unique("tester"), Role.TESTER)
    with session_scope() as session:
        user = users.get_user(tester.id, session=session)
        users.grant_bot(user, bot_id, session=session)
        token = users.start_session(user)

    def enable(session, bot) -> None:
        council.set_council(bot, session=session, enabled=True)

    for call in (lambda: bot_council.load_list(token, bot_id),
                 lambda: bot_council.load_one(token, bot_id, deliberation_id or 0),
                 lambda: bot_council_settings.load_form(token, bot_id),
                 lambda: bot_council_settings.change(token, bot_id, enable)):
        with pytest.raises(PermissionDenied):
            call()
    assert _council(bot_id)[0] is False


def _run_council_in_thread(bot_id: int, question: str):
    """The council asked (as the CLI asks it: stored as it runs) in a thread of its own; returns its future."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from grobot.core.store.council_run import run_council

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(asyncio.run, run_council(bot_id, question, asked_by="alice", platform="cli"))
    pool.shutdown(wait=False)
    return future


def _advisor(name: str):
    return lambda body: f"You are the {name}." in str(body["messages"][0]["content"])


def _is_synthesis(body) -> bool:
    return "You chair an advisory council" in str(body["messages"][0]["content"])


def test_a_deliberation_in_progress_shows_advisor_by_advisor(admin_page, fake_llm) -> None:
    import threading

    from tests.fakes.llm import Reply, use_fake_llm
    from tests.ui.chat import unique

    page = admin_page
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name=unique("Live")).id or 0
        council.set_council(bot_id, session=session, enabled=True)
    use_fake_llm(fake_llm, bot_id=bot_id)
    analyst, others = threading.Event(), threading.Event()  # each advisor answers when the test says so
    fake_llm.script_for(_advisor("Strategist"), Reply(text="Take the left road."), persistent=True)
    fake_llm.script_for(_advisor("Analyst"), Reply(text="The map says left.", hold=analyst), persistent=True)
    for name in ("Devil's Advocate", "Pragmatist", "Visionary"):
        fake_llm.script_for(_advisor(name), Reply(text=f"{name}: left.", hold=others), persistent=True)
    fake_llm.script_for(_is_synthesis, Reply(json={"consensus": "Left.", "disagreements": [],
                                                   "recommendation": "Go left.", "confidence": 88}), persistent=True)
    page.goto(f"/bots/{bot_id}/council")
    expect(page.get_by_text("No deliberations yet")).to_be_visible(timeout=PAGE_TIMEOUT_MS)

    done = _run_council_in_thread(bot_id, "Which road?")
    try:
        row = page.locator("[data-deliberation]")  # shows up without a reload, in progress
        expect(row.get_by_test_id("deliberation-running")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        expect(row).to_contain_text("Which road?")
        expect(row).to_contain_text("1 of 5 advisors answered")
        expect(page.get_by_text("0 deliberations · 1 in progress")).to_be_visible()
        row.get_by_role("link", name="Open deliberation").click()
        expect(page.locator('[data-advisor-answer="Strategist"]')).to_contain_text("Take the left road.",
                                                                                   timeout=PAGE_TIMEOUT_MS)
        analyst_box = page.locator('[data-advisor-answer="Analyst"]')
        expect(analyst_box).to_have_attribute("data-state", "answering")
        expect(analyst_box).to_contain_text("Answering…")
        expect(page.get_by_test_id("synthesis")).to_contain_text("In progress: 1 of 5 advisors answered")

        analyst.set()  # the page follows: the Analyst's answer, then the synthesis
        expect(analyst_box).to_contain_text("The map says left.", timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_test_id("synthesis")).to_contain_text("2 of 5 advisors answered")
        others.set()
        expect(page.get_by_test_id("synthesis")).to_contain_text("Confidence 88/100", timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_test_id("synthesis")).to_contain_text("Go left.")
        assert done.result(timeout=60)[1] is None
    finally:
        analyst.set()
        others.set()
    page.get_by_role("button", name="All deliberations").click()
    expect(row).to_contain_text("88/100", timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_text("1 deliberation", exact=True)).to_be_visible()
    assert not page.grobot_record.console_errors, page.grobot_record.console_errors


def test_a_synthesis_with_no_content_is_marked_failed_not_listed_as_made(admin_page, fake_llm) -> None:
    """A small model's synthesis of placeholders ("CONSENSUS: consensus", "1-3 sentences") has no confidence."""
    from tests.fakes.llm import Reply, use_fake_llm
    from tests.ui.chat import unique

    page = admin_page
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name=unique("Echo")).id or 0
        council.set_council(bot_id, session=session, enabled=True)
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script_for(lambda body: not _is_synthesis(body), Reply(text="Ship it on Monday."), persistent=True)
    fake_llm.script_for(_is_synthesis, Reply(json={
        "consensus": "consensus", "disagreements": ["1-3 sentences", "540-550 sentences", "1-3 sentences"],
        "recommendation": "1.0.0.0", "confidence": 0}), persistent=True)
    text, error = _run_council_in_thread(bot_id, "Ship on Friday?").result(timeout=60)
    assert error is None and "**Synthesis** could not be made" in text and "consensus" not in text.lower()

    page.goto(f"/bots/{bot_id}/council")
    row = page.locator("[data-deliberation]")
    expect(row.get_by_test_id("deliberation-failed")).to_have_text("Failed", timeout=PAGE_TIMEOUT_MS)
    expect(row).not_to_contain_text("0/100")
    expect(page.get_by_text("0 deliberations · 1 failed")).to_be_visible()  # none made
    row.get_by_role("link", name="Open deliberation").click()
    synthesis = page.get_by_test_id("synthesis")
    expect(synthesis.get_by_test_id("synthesis-error")).to_contain_text("No synthesis: ", timeout=PAGE_TIMEOUT_MS)
    expect(synthesis).not_to_contain_text("Confidence")
    expect(synthesis).not_to_contain_text("540-550")
    expect(page.locator('[data-advisor-answer="Analyst"]')).to_contain_text("Ship it on Monday.")
