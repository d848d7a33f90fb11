"""What the web app says, in a real browser: sentences instead of validator text, sizes that
differ when they differ, helper text that follows the input, counted nouns, a toast that
tells the truth about the worker, and error banners that go once a later action succeeds.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import AppUser, BotStatus, LogEntry, McpServer, Role, Setting, Supervisor, utcnow
from grobot.core.services import app_settings, files
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, fresh_heartbeat, unique

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

LIVE_TIMEOUT_MS = 15_000
MIB = 1024 * 1024


def open_tab(page, bot_id: int, tab: str) -> None:
    page.goto(f"/bots/{bot_id}/{tab}")
    expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)


@pytest.fixture
def one_mib_files(ui_env):
    """The largest file a bot may store is 1 MiB for the test (the default afterwards)."""
    with session_scope() as session:
        assert app_settings.set_values({"max_file_bytes": str(MIB)}, session=session) == {}
    yield
    with session_scope() as session:
        row = session.get(Setting, "max_file_bytes")
        if row is not None:
            session.delete(row)


@pytest.fixture
def running_worker(ui_env):
    """A bot worker's supervisor with a fresh heartbeat (as a running worker keeps it; dated a few
    minutes ahead so that a slow machine cannot let it go stale during the test)."""
    supervisor_id = unique("sup")
    with session_scope() as session:
        session.add(Supervisor(id=supervisor_id, hostname="test", pid=1,
                               heartbeat_at=utcnow() + timedelta(minutes=5)))
    yield supervisor_id
    with session_scope() as session:
        row = session.get(Supervisor, supervisor_id)
        if row is not None:
            session.delete(row)


def test_a_validator_error_reads_as_a_sentence_naming_the_field_and_its_range(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Ranged"))
    open_tab(page, bot_id, "settings")
    rounds = page.get_by_role("spinbutton", name="Max tool rounds")
    expect(rounds).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    rounds.fill("99")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_test_id("settings-error")).to_contain_text("Max tool rounds must be between 0 and 20.",
                                                                  timeout=LIVE_TIMEOUT_MS)
    body = page.locator("body")
    expect(body).not_to_contain_text("Input should")
    expect(body).not_to_contain_text("Value error")


def test_a_file_over_the_limit_says_sizes_that_differ_and_the_banner_goes_later(admin_page, one_mib_files) -> None:
    page = admin_page
    bot_id = add_bot(unique("Sizer"))
    with session_scope() as session:
        files.write_file(session=session, bot_id=bot_id, path="small.txt", data=b"small", content_type="text/plain")
    open_tab(page, bot_id, "files")
    expect(page.get_by_test_id("upload-target")).to_contain_text("up to 1.0 MB each", timeout=PAGE_TIMEOUT_MS)
    chooser = page.locator("#bot-files-upload input[type=file]")
    chooser.set_input_files([{"name": "big.bin", "mimeType": "application/octet-stream", "buffer": b"x" * (MIB + 1)}])
    error = page.get_by_test_id("upload-error")
    expect(error).to_have_text("big.bin is 1,048,577 bytes; the limit is 1,048,576 bytes (1.0 MB).",  # its own name
                               timeout=LIVE_TIMEOUT_MS)

    # A later action (downloading another file) clears the old error.
    with page.expect_download():
        page.get_by_role("button", name="Download small.txt").click()
    expect(error).to_have_count(0)


def test_the_file_size_helper_follows_what_the_admin_types(admin_page) -> None:
    page = admin_page
    page.goto("/settings")
    field = page.locator("#app-max_file_bytes")
    expect(field).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    form = page.get_by_role("form", name="Fleet settings")
    expect(form).to_contain_text("5,242,880 bytes = 5 MiB.")
    field.fill("1048576")
    expect(form).to_contain_text("1,048,576 bytes = 1 MiB.")
    field.fill("3000000")
    expect(form).to_contain_text("3,000,000 bytes ≈ 2.9 MiB.")
    expect(form).not_to_contain_text("5,242,880 bytes")


def test_counts_of_one_are_singular(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Single"))
    with session_scope() as session:
        status = session.get(BotStatus, bot_id)
        status.state, status.discord_user_name, status.guild_count = "online", "single-bot", 1
        status.heartbeat_at = fresh_heartbeat()  # a live bot's heartbeat (an old one reads as offline)
        session.add(status)
        session.add(LogEntry(bot_id=bot_id, level="INFO", logger="bot_worker.bot_process", message="Connected"))
    open_tab(page, bot_id, "logs")
    expect(page.get_by_test_id("discord-identity")).to_contain_text("1 guild", timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_test_id("discord-identity")).not_to_contain_text("1 guilds")
    expect(page.get_by_test_id("logs-page")).to_have_text("1 entry", timeout=LIVE_TIMEOUT_MS)

    with session_scope(readonly=True) as session:
        roles = [user.role for user in session.exec(select(AppUser)).all()]
    admins, testers = roles.count(Role.ADMIN.value), roles.count(Role.TESTER.value)
    page.goto("/users")
    expected = (f"{admins} admin{'' if admins == 1 else 's'} · {testers} tester{'' if testers == 1 else 's'}")
    expect(page.get_by_text(expected, exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)


def add_bot_in_the_dialog(page, name: str) -> None:
    page.goto("/")
    page.get_by_role("button", name="Add bot").first.click()
    dialog = page.get_by_role("dialog", name="Add a bot")
    dialog.get_by_label("Name").fill(name)
    dialog.get_by_role("button", name="Add bot").click()
    expect(page).to_have_url(re.compile(r"/bots/\d+/settings$"), timeout=PAGE_TIMEOUT_MS)


def test_the_added_bot_toast_asks_to_start_the_worker_only_when_none_runs(admin_page, ui_env) -> None:
    page = admin_page
    with session_scope() as session:
        stale = list(session.exec(select(Supervisor)).all())
        for row in stale:
            session.delete(row)
    add_bot_in_the_dialog(page, unique("NoWorker"))
    expect(page.get_by_text(re.compile(r"then start the worker"))).to_be_visible(timeout=LIVE_TIMEOUT_MS)


def test_the_added_bot_toast_says_the_running_worker_starts_it(admin_page, running_worker) -> None:
    page = admin_page
    name = unique("Worker")
    add_bot_in_the_dialog(page, name)
    toast = page.get_by_text(re.compile(rf"Bot {name} added"))
    expect(toast).to_contain_text("the running worker starts it", timeout=LIVE_TIMEOUT_MS)
    expect(toast).not_to_contain_text("start the worker")


def test_the_mcp_page_names_the_worker_command_the_other_pages_name(admin_page) -> None:
    """Every page tells the admin to start the worker with ``python -m grobot worker`` (the MCP page
    said ``python -m bot_worker``, which works, but is a second name for the same thing)."""
    from grobot.core.services import mcp_servers

    with session_scope() as session:  # the note shows above a list of servers
        server_id = mcp_servers.create_server(session=session, name=unique("wording").lower(),
                                              command="mcp-server-time").id
    try:
        page = admin_page
        page.goto("/mcp")
        note = page.get_by_text("also refreshes every enabled server's tools")
        expect(note).to_contain_text("The worker (python -m grobot worker)", timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_text("python -m bot_worker")).to_have_count(0)
    finally:  # other modules look at the page without servers
        with session_scope() as session:
            mcp_servers.delete_server(session.get(McpServer, server_id), session=session)
