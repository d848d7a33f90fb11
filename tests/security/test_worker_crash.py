"""``kill -9`` of the bot worker while a Test Chat answer streams (issue 17, item 4): after a
restart the page shows the message as failed (no run stays ``running``) and the next message is
answered. A real supervisor (``python -m bot_worker``) runs the chain against the fake LLM."""

from __future__ import annotations

import logging
import signal
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import expect
from sqlmodel import select, update

from grobot.core.db import session_scope
from grobot.core.models import Bot, Message
from grobot.core.services.tester_chat import ABANDONED_ERROR
from tests.fakes.llm import Reply, _last_user_text, use_fake_llm
from tests.helpers import wait_for
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, stop_worker, unique
from tests.ui.chat import start_worker as start_bot_worker

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LIVE_TIMEOUT_MS = 30_000


def start_worker(ui_env, fake_llm, log_path: Path) -> subprocess.Popen[bytes]:
    """A real bot worker on the web app's database; Discord points nowhere (no bot has to connect)."""
    return start_bot_worker(ui_env, log_path, OLLAMA_HOST=fake_llm.url)


def running_messages() -> list[int]:
    with session_scope(readonly=True) as session:
        return list(session.exec(select(Message.id).where(Message.status == "running")).all())


def test_a_worker_killed_mid_answer_leaves_an_error_and_the_next_message_is_answered(
        admin_page, fake_llm, ui_env, tmp_path) -> None:
    page = admin_page
    with session_scope() as session:  # only this test's bot runs (the others have no real Discord)
        session.execute(update(Bot).values(enabled=False))
    bot_id = add_bot(unique("Crashy"))
    use_fake_llm(fake_llm)  # the global default too: no embedded model is started
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script_for(lambda body: _last_user_text(body.get("messages") or []) == "Tell me a long story",
                        Reply(text=" ".join(f"word{i}" for i in range(60)), chunks=30, chunk_delay=0.5))
    log_path = tmp_path / "worker.log"
    worker = start_worker(ui_env, fake_llm, log_path)
    try:
        page.goto(f"/bots/{bot_id}/chat")
        expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("textbox", name="Message").fill("Tell me a long story")
        page.get_by_role("button", name="Send").click()
        live = page.get_by_test_id("live-answer")
        expect(live).to_contain_text("word0", timeout=LIVE_TIMEOUT_MS)  # the answer is streaming
        assert running_messages(), "the message is not running"

        worker.send_signal(signal.SIGKILL)  # kill -9: no chance to clean up
        worker.wait(10)
        worker = start_worker(ui_env, fake_llm, log_path)

        error = page.get_by_test_id("answer-error").last
        expect(error).to_contain_text(f"The bot could not answer: {ABANDONED_ERROR}", timeout=LIVE_TIMEOUT_MS)
        assert running_messages() == []
        expect(page.get_by_role("button", name="Send")).to_be_enabled()

        page.get_by_role("textbox", name="Message").fill("Ping")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_test_id("bot-answer").last).to_contain_text("Echo: Ping", timeout=LIVE_TIMEOUT_MS)
        wait_for(lambda: running_messages() == [], timeout=10, message="no message left running")
    finally:
        stop_worker(worker)


def test_a_worker_killed_mid_answer_and_not_restarted_ends_the_answer_on_the_page(
        admin_page, fake_llm, ui_env, tmp_path) -> None:
    page = admin_page
    with session_scope() as session:
        session.execute(update(Bot).values(enabled=False))
    bot_id = add_bot(unique("Orphan"))
    use_fake_llm(fake_llm)
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script_for(lambda body: _last_user_text(body.get("messages") or []) == "Tell me a long story",
                        Reply(text=" ".join(f"word{i}" for i in range(60)), chunks=30, chunk_delay=0.5))
    worker = start_worker(ui_env, fake_llm, tmp_path / "worker.log")
    try:
        page.goto(f"/bots/{bot_id}/chat")
        expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("textbox", name="Message").fill("Tell me a long story")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_test_id("live-answer")).to_contain_text("word0", timeout=LIVE_TIMEOUT_MS)

        worker.send_signal(signal.SIGKILL)  # and no worker starts again
        worker.wait(10)

        # Once the worker is known to be gone (no heartbeat for 20 s), the page ends the answer itself.
        error = page.get_by_test_id("answer-error").last
        expect(error).to_contain_text(f"The bot could not answer: {ABANDONED_ERROR}", timeout=60_000)
        assert running_messages() == []
        expect(page.get_by_role("button", name="Send")).to_be_enabled()
    finally:
        stop_worker(worker)
