"""``kill -9`` of the bot worker while a Test Chat answer streams (issue 17, item 4): after a
restart the page shows the message as failed (no run stays ``running``) and the next message is
answered. A worker frozen mid-answer (SIGSTOP) ends the answer on the page too; a live worker's
silent answer (a slow model) is never ended. A real supervisor (``python -m bot_worker``) runs the
chain against the fake LLM."""

from __future__ import annotations

import logging
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import expect
from sqlmodel import select, update

from grobot.core import tester_chat_link
from grobot.core.db import session_scope
from grobot.core.models import Bot, Message, Supervisor
from grobot.core.services.fleet import stale_after_seconds
from grobot.core.services.tester_chat import ABANDONED_ERROR
from grobot.pages.tester_chat_state import abandon_check_seconds
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
    bot_id = chat_bot(fake_llm, "Crashy")  # only this test's bot runs (the others have no real Discord)
    tell_a_long_story(fake_llm)
    log_path = tmp_path / "worker.log"
    worker = start_worker(ui_env, fake_llm, log_path)
    try:
        send(page, bot_id, "Tell me a long story")
        live = page.get_by_test_id("live-answer")
        expect(live).to_contain_text("word0", timeout=LIVE_TIMEOUT_MS)  # the answer is streaming
        assert running_messages(), "the message is not running"

        worker.send_signal(signal.SIGKILL)  # kill -9: no chance to clean up
        worker.wait(10)
        worker = start_worker(ui_env, fake_llm, log_path)

        expect_ended_as_abandoned(page, timeout=LIVE_TIMEOUT_MS)

        page.get_by_role("textbox", name="Message").fill("Ping")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_test_id("bot-answer").last).to_contain_text("Echo: Ping", timeout=LIVE_TIMEOUT_MS)
        wait_for(lambda: running_messages() == [], timeout=10, message="no message left running")
    finally:
        stop_worker(worker)


def test_a_worker_killed_mid_answer_and_not_restarted_ends_the_answer_on_the_page(
        admin_page, fake_llm, ui_env, tmp_path) -> None:
    page = admin_page
    bot_id = chat_bot(fake_llm, "Orphan")
    tell_a_long_story(fake_llm)
    worker = start_worker(ui_env, fake_llm, tmp_path / "worker.log")
    try:
        send(page, bot_id, "Tell me a long story")
        expect(page.get_by_test_id("live-answer")).to_contain_text("word0", timeout=LIVE_TIMEOUT_MS)

        worker.send_signal(signal.SIGKILL)  # and no worker starts again
        worker.wait(10)

        # Once the worker is known to be gone (silent for stale_after_seconds()), the page ends the answer itself.
        expect_ended_as_abandoned(page)
    finally:
        stop_worker(worker)


def tell_a_long_story(fake_llm) -> None:
    """"Tell me a long story" is answered slowly: 30 pieces, one every 0.5 s."""
    fake_llm.script_for(lambda body: _last_user_text(body.get("messages") or []) == "Tell me a long story",
                        Reply(text=" ".join(f"word{i}" for i in range(60)), chunks=30, chunk_delay=0.5))


def expect_ended_as_abandoned(page, timeout: float = 60_000) -> None:
    """The page ended the answer of a worker that stopped: the error shows, nothing is left running, Send works."""
    error = page.get_by_test_id("answer-error").last
    expect(error).to_contain_text(f"The bot could not answer: {ABANDONED_ERROR}", timeout=timeout)
    assert running_messages() == []
    expect(page.get_by_role("button", name="Send")).to_be_enabled()


def chat_bot(fake_llm, name: str) -> int:
    """A new bot answered by the fake LLM (the global default too: no embedded model is started), the only
    one a worker runs (the others have no real Discord)."""
    with session_scope() as session:
        session.execute(update(Bot).values(enabled=False))
    bot_id = add_bot(unique(name))
    use_fake_llm(fake_llm)
    use_fake_llm(fake_llm, bot_id=bot_id)
    return bot_id


def send(page, bot_id: int, text: str) -> None:
    """Open the bot's Test Chat and send ``text``."""
    page.goto(f"/bots/{bot_id}/chat")
    expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    page.get_by_role("textbox", name="Message").fill(text)
    page.get_by_role("button", name="Send").click()


def runner_advertised(pid: int) -> bool:
    """Whether the supervisor of process ``pid`` advertises its Test Chat runner (the page follows runs there)."""
    with session_scope(readonly=True) as session:
        ids = set(session.exec(select(Supervisor.id).where(Supervisor.pid == pid)).all())
        return any(runner.supervisor_id in ids for runner in tester_chat_link.live_runners(session=session))


def start_runner(ui_env, fake_llm, log_path: Path) -> subprocess.Popen[bytes]:
    """A real bot worker whose Test Chat runner is advertised: the page follows its runs there, live."""
    worker = start_worker(ui_env, fake_llm, log_path)
    wait_for(lambda: runner_advertised(worker.pid), timeout=30, message="the worker's Test Chat runner")
    return worker


def process_state(pid: int) -> str:
    """The state letter of ``/proc/<pid>/stat`` (``T``: stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def database_writable(db_path: Path) -> bool:
    """Whether a writer gets SQLite's write lock within a second (a process frozen mid-write holds it)."""
    connection = sqlite3.connect(db_path, timeout=1.0)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.rollback()
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        connection.close()


def freeze(worker: subprocess.Popen[bytes], db_path: Path, timeout: float = 30.0) -> None:
    """SIGSTOP the worker's supervisor at a moment it holds no write lock of the database (frozen in
    the middle of a write, on SQLite, it would block every writer: the page's end of the run too).

    The test takes the write lock itself first, so the worker cannot be inside a write when it stops."""
    connection = sqlite3.connect(db_path, timeout=timeout)
    try:
        connection.execute("BEGIN IMMEDIATE")  # waits for the worker's write to end
        worker.send_signal(signal.SIGSTOP)
        wait_for(lambda: process_state(worker.pid) == "T", timeout=5, message="the worker to stop")
        connection.rollback()
    finally:
        connection.close()
    assert database_writable(db_path), "the frozen worker holds the database's write lock"


def thaw_and_stop(worker: subprocess.Popen[bytes]) -> None:
    """SIGCONT a frozen worker (a stopped process does not act on SIGTERM), then stop it."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGCONT)
    stop_worker(worker)


def test_a_worker_frozen_mid_answer_ends_the_answer_on_the_page(admin_page, fake_llm, ui_env, tmp_path) -> None:
    page = admin_page
    bot_id = chat_bot(fake_llm, "Frozen")
    tell_a_long_story(fake_llm)
    worker = start_runner(ui_env, fake_llm, tmp_path / "worker.log")
    try:
        send(page, bot_id, "Tell me a long story")
        expect(page.get_by_test_id("live-answer")).to_contain_text("word0", timeout=LIVE_TIMEOUT_MS)

        # Alive but frozen (SIGSTOP, a deadlocked loop): the page's line to it stays open and silent.
        freeze(worker, ui_env.data_dir / "grobot.db")

        # Once the silent worker is known to be gone (silent for stale_after_seconds()), the page ends the answer.
        expect_ended_as_abandoned(page)
    finally:
        thaw_and_stop(worker)


def test_a_slow_model_s_silent_answer_is_not_ended_while_its_worker_runs(admin_page, fake_llm, ui_env, tmp_path) -> None:
    page = admin_page
    bot_id = chat_bot(fake_llm, "Slow")
    # A slow model: silent long enough for the page to check its worker after the point where a
    # stopped worker's run is ended.
    silence = stale_after_seconds() + 2 * abandon_check_seconds()
    fake_llm.script_for(lambda body: _last_user_text(body.get("messages") or []) == "Think it over",
                        Reply(text="Thought it over at length", delay=silence))
    worker = start_runner(ui_env, fake_llm, tmp_path / "worker.log")
    try:
        send(page, bot_id, "Think it over")
        expect(page.get_by_test_id("answer-progress")).to_contain_text("Thinking", timeout=LIVE_TIMEOUT_MS)

        answer = page.get_by_test_id("bot-answer").last
        expect(answer).to_contain_text("Thought it over at length", timeout=int((silence + 30) * 1000))
        expect(page.get_by_test_id("answer-error")).to_have_count(0)
        wait_for(lambda: running_messages() == [], timeout=10, message="the answer stored as done")
    finally:
        stop_worker(worker)


def test_a_message_stopped_while_its_worker_is_frozen_ends_on_the_page(admin_page, fake_llm, ui_env, tmp_path) -> None:
    page = admin_page
    bot_id = chat_bot(fake_llm, "Stuck")
    worker = start_runner(ui_env, fake_llm, tmp_path / "worker.log")
    try:
        freeze(worker, ui_env.data_dir / "grobot.db")  # still advertised: the page asks it to claim the message

        send(page, bot_id, "Ping")
        expect(page.get_by_test_id("answer-progress")).to_contain_text("Waiting for the bot worker",
                                                                       timeout=LIVE_TIMEOUT_MS)
        page.get_by_role("button", name="Stop").click()

        expect(page.get_by_test_id("answer-stopped").last).to_have_text(
            "Stopped: the run was cancelled (stopped by ui-admin)", timeout=LIVE_TIMEOUT_MS)
        expect(page.get_by_role("button", name="Send")).to_be_enabled()
    finally:
        thaw_and_stop(worker)
