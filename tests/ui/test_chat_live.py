"""Test Chat against a real bot worker (``python -m bot_worker``) in a real browser: the answer
streams in as the model writes it, Stop ends the run (issue 15 item 6), Retry sends a failed
message again, the steps show each agent's model, tokens and time, the input stays in view, a
reset asks first, and a tester meets the bot's cooldown like a Discord user (issues 13 and 14)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect
from sqlmodel import select, update

from grobot.core import tester_chat_link
from grobot.core.db import session_scope
from grobot.core.models import Bot, Message
from grobot.core.services import bots, tester_chat
from tests.fakes.llm import FakeLLM, Reply, _last_user_text, use_fake_llm
from tests.helpers import wait_for
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, start_worker, stop_worker, unique
from tests.ui.screens import PHONE, WIDE, screenshot, sized_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LIVE_TIMEOUT_MS = 20_000


@pytest.fixture(scope="module")
def live_llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def worker(ui_env, live_llm, tmp_path_factory) -> Iterator[object]:
    """One real worker for the module; only this module's bots are enabled (the others have no Discord)."""
    with session_scope() as session:
        session.execute(update(Bot).values(enabled=False))
    proc = start_worker(ui_env, tmp_path_factory.mktemp("worker") / "worker.log")

    def ready() -> bool:
        with session_scope(readonly=True) as session:
            return bool(tester_chat_link.live_runners(session=session))

    try:
        wait_for(ready, timeout=60, interval=0.1, message="the worker's Test Chat service")
        yield proc
    finally:
        stop_worker(proc)


def _bot(live_llm: FakeLLM, prefix: str, **fields: object) -> int:
    bot_id = add_bot(unique(prefix), **fields)  # no Discord token: Test Chat only
    use_fake_llm(live_llm, bot_id=bot_id)
    return bot_id


def _bot_name(bot_id: int) -> str:
    with session_scope(readonly=True) as session:
        return session.get(Bot, bot_id).name


def _running() -> list[int]:
    with session_scope(readonly=True) as session:
        return list(session.exec(select(Message.id).where(Message.status == "running")).all())


def _send(page, text: str) -> None:
    page.get_by_role("textbox", name="Message").fill(text)
    page.get_by_role("button", name="Send").click()


def test_the_answer_streams_stop_ends_it_and_retry_sends_it_again(admin_page, worker, live_llm) -> None:
    page = admin_page
    bot_id = _bot(live_llm, "Streamy", user_cooldown_seconds=0)
    story = " ".join(f"word{i}" for i in range(60))
    live_llm.script_for(lambda body: _last_user_text(body.get("messages") or []) == "Tell me a long story",
                        Reply(text=story, chunks=60, chunk_delay=0.2))
    hangups = live_llm.hangups
    page.goto(f"/bots/{bot_id}/chat")
    expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    _send(page, "Tell me a long story")

    live = page.get_by_test_id("live-answer")
    expect(live).to_contain_text("word2", timeout=LIVE_TIMEOUT_MS)  # words arrive while the model writes
    assert "word59" not in live.inner_text()
    expect(live.get_by_test_id("answer-progress")).to_contain_text("Writing…")
    page.get_by_role("button", name="Stop").click()

    expect(page.get_by_test_id("answer-stopped").last).to_have_text(
        "Stopped: the run was cancelled (stopped by ui-admin)", timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_test_id("live-answer")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    answer = page.get_by_test_id("bot-answer").last
    expect(answer.get_by_test_id("answer-stopped")).to_be_visible()
    expect(answer).to_contain_text("word0 word1 word2")  # the words shown before the stop stay
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    wait_for(lambda: live_llm.hangups > hangups, timeout=10, message="the model's stream was not closed")
    assert _running() == []
    with session_scope(readonly=True) as session:
        conv = tester_chat.latest_session(bot_id, _user_id(session), session=session)
        stopped = [m for m in tester_chat.messages(conv.id, session=session) if m.role == "user"][-1]
        assert (stopped.status, stopped.error) == ("cancelled", "the run was cancelled (stopped by ui-admin)")
    # The stopped run's tokens are counted (the call cut short too): the bot has its line on the Usage page.
    page.goto("/usage")
    bot_name = _bot_name(bot_id)
    row = page.get_by_test_id("usage-by-bot").get_by_role("row").filter(
        has=page.get_by_role("rowheader").get_by_text(bot_name, exact=True))
    expect(row).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
    expect(row.get_by_role("cell").nth(2)).not_to_have_text("0")  # tokens out
    page.goto(f"/bots/{bot_id}/chat")
    expect(page.get_by_test_id("answer-stopped").last).to_be_visible(timeout=PAGE_TIMEOUT_MS)

    # Retry sends the same message again; this time the model answers quickly.
    live_llm.reset()
    live_llm.script_for(lambda body: _last_user_text(body.get("messages") or []) == "Tell me a long story",
                        Reply(text="Once upon a time, briefly."))
    page.get_by_role("button", name="Retry").click()
    expect(page.get_by_test_id("bot-answer").last).to_contain_text("Once upon a time, briefly.",
                                                                   timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_test_id("user-message")).to_have_count(1)  # in place of the stopped answer
    expect(page.get_by_test_id("answer-stopped")).to_have_count(0)
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)

    # The steps say, per agent, which model answered, with its tokens and time.
    steps = page.get_by_test_id("bot-answer").last.get_by_test_id("chain-steps")
    steps.get_by_text(re.compile(r"^Steps \(\d+\)$")).click()
    call = steps.get_by_test_id("llm-call").filter(has_text="Synthesizer")
    expect(call).to_have_count(1)
    expect(call).to_contain_text("fake-model")
    expect(call).to_contain_text(re.compile(r"\d+ → \d+ tokens"))
    expect(call).to_contain_text(re.compile(r"\d+(\.\d)? (ms|s)"))


def test_a_tester_meets_the_cooldown_and_an_error_can_be_retried(admin_page, worker, live_llm) -> None:
    page = admin_page
    bot_id = _bot(live_llm, "Cooly", user_cooldown_seconds=600)
    page.goto(f"/bots/{bot_id}/chat")
    expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    _send(page, "first")
    expect(page.get_by_test_id("bot-answer").last).to_contain_text("Echo: first", timeout=LIVE_TIMEOUT_MS)
    _send(page, "second")
    error = page.get_by_test_id("answer-error").last
    expect(error).to_contain_text("Slow down a little: please wait", timeout=LIVE_TIMEOUT_MS)
    # Without the cooldown, Retry gets the answer.
    with session_scope() as session:
        bots.update_bot(bots.get_bot(bot_id, session=session), {"user_cooldown_seconds": 0}, session=session)
    page.get_by_role("button", name="Retry").click()
    expect(page.get_by_test_id("bot-answer").last).to_contain_text("Echo: second", timeout=LIVE_TIMEOUT_MS)


def test_retry_after_a_failure_answers_in_place_and_the_cooldown_does_not_refuse_it(admin_page, worker,
                                                                                     live_llm) -> None:
    """Retry after a failed answer was refused by the user's cooldown ("Slow down a little: please wait 1 s",
    shown as a failure of the bot), and each Retry added another copy of the question."""
    page = admin_page
    page.set_viewport_size(WIDE)
    bot_id = _bot(live_llm, "Retrier", user_cooldown_seconds=600)
    question = "What is the soup of the day?"
    live_llm.script_for(lambda body: _last_user_text(body.get("messages") or []) == question,
                        Reply(status=400, error="the model is unwell"), persistent=True)
    page.goto(f"/bots/{bot_id}/chat")
    expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    _send(page, question)
    expect(page.get_by_test_id("answer-error").last).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    screenshot(page, "chat-retry-failed")

    live_llm.reset()  # the model is well again
    page.get_by_role("button", name="Retry").click()
    answer = page.get_by_test_id("bot-answer").last
    expect(answer).to_contain_text(f"Echo: {question}", timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_test_id("user-message")).to_have_count(1)
    expect(page.get_by_test_id("answer-error")).to_have_count(0)
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    screenshot(page, "chat-retry-answered")
    page.reload()  # as stored: one question, one answer
    expect(page.get_by_test_id("bot-answer").last).to_contain_text(f"Echo: {question}", timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_test_id("user-message")).to_have_count(1)
    page.set_viewport_size({"width": 420, "height": 900})
    screenshot(page, "chat-retry-answered")
    with session_scope(readonly=True) as session:
        conv = tester_chat.latest_session(bot_id, _user_id(session), session=session)
        assert [(m.role, m.status) for m in tester_chat.messages(conv.id, session=session)] == [
            ("user", "done"), ("assistant", None)]


@pytest.mark.parametrize("width,height", [(1400, 900), (420, 900)])
def test_the_input_stays_in_view_and_reset_asks_first(browser, web_app, ui_admin, worker, live_llm, width,
                                                      height) -> None:
    from tests.ui.auth import sign_in

    context = browser.new_context(viewport={"width": width, "height": height}, base_url=web_app.url)
    page = context.new_page()
    try:
        sign_in(page, ui_admin)
        bot_id = _bot(live_llm, "Longy")
        with session_scope() as session:  # a long conversation already
            conv = tester_chat.open_session(bot_id, _user_id(session), session=session)
            for i in range(25):
                msg = tester_chat.submit(conv.id or 0, f"question {i}", session=session, author_name="ui-admin")
                msg.status = "done"
                session.add(Message(conversation_id=conv.id, role="assistant", content=f"answer {i} " * 20))
        page.goto(f"/bots/{bot_id}/chat")
        expect(page.get_by_test_id("bot-answer").last).to_contain_text("answer 24", timeout=PAGE_TIMEOUT_MS)
        for name in ("Message",):
            expect(page.get_by_role("textbox", name=name)).to_be_in_viewport()
        expect(page.get_by_role("button", name="Send")).to_be_in_viewport()
        width_used = page.evaluate("document.documentElement.scrollWidth")
        assert width_used <= width, f"the page is {width_used} px wide at {width} px"

        page.get_by_role("button", name="Reset conversation").click()
        dialog = page.get_by_role("alertdialog")
        expect(dialog).to_contain_text("Reset this conversation?")
        dialog.get_by_role("button", name="Cancel").click()
        expect(page.get_by_test_id("user-message")).to_have_count(25)
        page.get_by_role("button", name="Reset conversation").click()
        page.get_by_role("alertdialog").get_by_role("button", name="Reset").click()
        expect(page.get_by_text("Say hello")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    finally:
        context.close()


# Where the newest message of the list ends against the message box (sticky at the window's bottom).
NEWEST_VS_COMPOSER = """() => {
    const answers = document.querySelectorAll('[data-testid="bot-answer"]');
    const last = answers[answers.length - 1].getBoundingClientRect();
    const box = document.querySelector('[data-testid="composer"]').getBoundingClientRect();
    return {bottom: last.bottom, composer_top: box.top, window: window.innerHeight, top: last.top};
}"""
NEWEST_SHOWN = f"() => {{ const g = ({NEWEST_VS_COMPOSER})(); return g.top >= 0 && g.bottom <= g.composer_top; }}"


def _newest_answer_shown(page) -> None:
    """The newest answer is wholly in the window, above the message box (not hidden under it)."""
    try:
        page.wait_for_function(NEWEST_SHOWN, timeout=5_000)
    except Exception:
        raise AssertionError(f"the newest answer is not wholly above the message box: "
                             f"{page.evaluate(NEWEST_VS_COMPOSER)}") from None


@pytest.mark.parametrize("viewport", [WIDE, PHONE], ids=["wide", "phone"])
def test_the_newest_answer_is_never_under_the_message_box(browser, web_app, ui_admin, worker, live_llm,
                                                          viewport) -> None:
    bot_id = _bot(live_llm, "Seen", user_cooldown_seconds=0)
    with session_scope() as session:  # a few exchanges already: the list is full
        conv = tester_chat.open_session(bot_id, _user_id(session), session=session)
        for i in range(4):
            msg = tester_chat.submit(conv.id or 0, f"question {i}", session=session, author_name="ui-admin")
            msg.status = "done"
            session.add(Message(conversation_id=conv.id, role="assistant", content=f"answer {i} " * 12))
    with sized_page(browser, web_app.url, viewport, ui_admin) as page:
        page.goto(f"/bots/{bot_id}/chat")
        expect(page.get_by_test_id("bot-answer").last).to_contain_text("answer 3", timeout=PAGE_TIMEOUT_MS)
        _newest_answer_shown(page)
        for text in ("Hello there, what can you do?", "And one more question"):
            _send(page, text)
            expect(page.get_by_test_id("bot-answer").last).to_contain_text(f"Echo: {text}",
                                                                           timeout=LIVE_TIMEOUT_MS)
            expect(page.get_by_test_id("live-answer")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
            _newest_answer_shown(page)


# Records whether the page ever said "Waiting for the bot worker" (a MutationObserver on the whole page).
WATCH_WAITING = """() => {
    window.__grobotSaidWaiting = false;
    const seen = () => { if (document.body.innerText.includes('Waiting for the bot worker')) window.__grobotSaidWaiting = true; };
    new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_a_running_worker_answers_without_a_waiting_notice(admin_page, worker, live_llm) -> None:
    """Issue 30 item 9: "Waiting for the bot worker…" flashed under every message while the worker ran (the
    message is pending for the few milliseconds before the worker claims it)."""
    page = admin_page
    bot_id = _bot(live_llm, "Prompt", user_cooldown_seconds=0)
    page.goto(f"/bots/{bot_id}/chat")
    expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    page.evaluate(WATCH_WAITING)
    for text in ("Hello there", "And again"):
        _send(page, text)
        expect(page.get_by_test_id("bot-answer").last).to_contain_text(f"Echo: {text}", timeout=LIVE_TIMEOUT_MS)
        expect(page.get_by_test_id("live-answer")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    assert page.evaluate("window.__grobotSaidWaiting") is False, "the page said it was waiting for the worker"


def _user_id(session) -> int:
    from grobot.core.services import users

    return users.get_user("ui-admin", session=session).id or 0


def test_moderation_replaces_a_streamed_answer_and_refuses_a_message(admin_page, worker, live_llm) -> None:
    page = admin_page
    bot_id = _bot(live_llm, "Moderated", user_cooldown_seconds=0, moderation_words=["forbidden"],
                  moderation_patterns=[r"secret\s+code\s+\d+"])
    story = "Here it is: " + " ".join(f"word{i}" for i in range(10)) + " and the secret code 4242 opens it, " \
        + " ".join(f"more{i}" for i in range(30))
    live_llm.script_for(lambda body: _last_user_text(body.get("messages") or []) == "What is the code?",
                        Reply(text=story, chunks=50, chunk_delay=0.15))
    page.goto(f"/bots/{bot_id}/chat")
    expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    # Whatever the page ever shows is watched: the matching words must never appear, not even for a moment.
    page.evaluate("""() => { window.leaked = false; new MutationObserver(() => {
        if (document.body.innerText.includes('4242')) window.leaked = true;
    }).observe(document.body, {subtree: true, childList: true, characterData: true}); }""")
    _send(page, "What is the code?")

    # The answer streams as usual until it matches; then what was shown is replaced by the refusal.
    expect(page.get_by_test_id("live-answer")).to_contain_text("word2", timeout=LIVE_TIMEOUT_MS)
    answer = page.get_by_test_id("bot-answer").last
    expect(answer).to_contain_text("Sorry, I can't help with that.", timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_test_id("live-answer")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    expect(answer).not_to_contain_text("word2")
    assert "4242" not in page.content() and page.evaluate("window.leaked") is False
    steps = answer.get_by_test_id("chain-steps")
    steps.get_by_text(re.compile(r"^Steps \(\d+\)$")).click()
    expect(steps).to_contain_text("Moderation: the answer matched pattern 1: it was replaced by the refusal")
    screenshot(page, "chat-moderated")

    # A message with a blocked word is refused, and the tester reads which rule it broke; no model runs.
    asked = len(live_llm.chat_requests())
    _send(page, "Tell me the FORBIDDEN thing")
    expect(page.get_by_test_id("answer-error").last).to_have_text(
        "The bot could not answer: Sorry, I can't help with that. (the message matched the word \"forbidden\" of the "
        "bot's moderation)", timeout=LIVE_TIMEOUT_MS)
    assert len(live_llm.chat_requests()) == asked
