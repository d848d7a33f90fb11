"""MCP servers tried in place, in a real browser against the real web app (no bot worker runs):
"Test" on the MCP page and on a bot's MCP card connects now and shows the tools or the error in one
line (the real ``mcp-server-time``, and a command that does not exist); a saved server is listed
with its tools or its error within seconds; "Add from preset" adds a known server in one action.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import Role
from grobot.core.services import mcp_servers, users
from grobot.pages import bot_knowledge_state  # noqa: F401 - the replay's barrier event, registered before the replay
from grobot.pages.bot_settings import BotSettingsState
from grobot.pages.mcp_presets_state import McpPresetState
from grobot.pages.mcp_state import McpState
from tests.security.replay import Sent, replay
from tests.ui.auth import PAGE_TIMEOUT_MS, create_ui_user
from tests.ui.chat import add_bot, unique
from tests.ui.screens import screenshot

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")
TEST_TIMEOUT_MS = 20_000  # a server starts and lists its tools within this (a few seconds here)
TIME_TOOLS = "OK: 2 tools (get_current_time, convert_time)"


@pytest.fixture(autouse=True)
def _no_servers(ui_env):
    """Each test starts from an empty registry (the modules share the database)."""
    assert shutil.which(TIME_SERVER), "mcp-server-time is missing: run `make test` (requirements.txt)"

    def clear() -> None:
        with session_scope() as session:
            for server in mcp_servers.list_servers(session=session):
                mcp_servers.delete_server(server, session=session)

    clear()
    yield
    clear()


def server_row(page, name: str):
    return page.get_by_role("table").get_by_role("row").filter(
        has=page.get_by_role("rowheader").get_by_text(name, exact=True))


def open_mcp_page(page) -> None:
    page.goto("/mcp")
    expect(page.get_by_role("heading", name="MCP servers", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)


def stored(name: str) -> tuple[list[str], str]:
    with session_scope(readonly=True) as session:
        server = mcp_servers.get_server(name, session=session)
        return [t["name"] for t in server.tools_cache or []], server.last_error


def test_test_button_and_saving_show_the_tools_or_the_error_in_one_line(admin_page) -> None:
    page = admin_page
    page.set_viewport_size({"width": 1400, "height": 900})
    with session_scope() as session:  # registered from a shell: never listed yet
        mcp_servers.create_server(session=session, name="clock", command=TIME_SERVER, args=["--local-timezone=UTC"])
        mcp_servers.create_server(session=session, name="ghost", command="mcp-server-does-not-exist")
    open_mcp_page(page)
    clock, ghost = server_row(page, "clock"), server_row(page, "ghost")
    expect(clock.get_by_test_id("mcp-check")).to_have_text("not tested yet")

    clock.get_by_role("button", name="Test").click()
    expect(clock.get_by_test_id("mcp-check")).to_have_text(TIME_TOOLS, timeout=TEST_TIMEOUT_MS)
    expect(clock).to_contain_text("2 tools")
    assert stored("clock") == (["get_current_time", "convert_time"], "")

    ghost.get_by_role("button", name="Test").click()
    error = "MCP server 'ghost' could not be started: command not found: mcp-server-does-not-exist"
    expect(ghost.get_by_test_id("mcp-check")).to_have_text(error, timeout=TEST_TIMEOUT_MS)
    assert stored("ghost") == ([], error)

    # A new server is listed with its tools as soon as it is saved (no worker, no refresh).
    page.get_by_role("button", name="Add server").click()
    dialog = page.get_by_role("dialog")
    page.locator("#mcp-name").fill("tokyo")
    page.locator("#mcp-command").fill(TIME_SERVER)
    page.locator("#mcp-args").fill("--local-timezone=Asia/Tokyo")
    dialog.get_by_role("button", name="Save").click()
    expect(page.get_by_role("dialog")).to_have_count(0)
    tokyo = server_row(page, "tokyo")
    expect(tokyo.get_by_test_id("mcp-check")).to_have_text(TIME_TOOLS, timeout=TEST_TIMEOUT_MS)

    # Edited to a command that does not exist: its error replaces the tools' line at once.
    tokyo.get_by_role("button", name="Edit").click()
    page.locator("#mcp-command").fill("tokyo-clock")
    page.get_by_role("dialog").get_by_role("button", name="Save").click()
    expect(tokyo.get_by_test_id("mcp-check")).to_have_text(
        "MCP server 'tokyo' could not be started: command not found: tokyo-clock", timeout=TEST_TIMEOUT_MS)
    page.set_viewport_size({"width": 420, "height": 900})  # cards instead of the table
    card = page.locator('[data-server-card="ghost"]')
    expect(card.get_by_test_id("mcp-check")).to_have_text(error)
    expect(card.get_by_role("button", name="Test")).to_be_visible()
    assert page.grobot_record.console_errors == []


def test_add_from_preset_in_one_action(admin_page) -> None:
    page = admin_page
    page.set_viewport_size({"width": 1400, "height": 900})
    open_mcp_page(page)
    expect(page.get_by_role("heading", name="No MCP servers yet")).to_be_visible()
    page.get_by_role("button", name="Add from preset").first.click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("heading", name="No key needed")).to_be_visible()
    expect(dialog.get_by_role("heading", name="Needs a key or token")).to_be_visible()
    for title in ("Time", "Fetch", "Filesystem (the bot's folder)", "Sequential thinking", "Memory (knowledge graph)",
                  "GitHub", "Brave Search", "Slack", "Notion"):
        expect(dialog.get_by_role("button", name=f"Add {title}", exact=True)).to_be_visible()
    expect(dialog.locator('[data-preset="time"]')).to_contain_text("mcp-server-time, installed here")
    page.set_viewport_size({"width": 420, "height": 900})
    expect(dialog.get_by_role("button", name="Add Time", exact=True)).to_be_in_viewport()
    page.set_viewport_size({"width": 1400, "height": 900})

    # A keyless preset: one click adds it, and it is tested at once.
    dialog.get_by_role("button", name="Add Time", exact=True).click()
    expect(page.get_by_role("dialog")).to_have_count(0)
    time_row = server_row(page, "time")
    expect(time_row.get_by_test_id("mcp-check")).to_have_text(TIME_TOOLS, timeout=TEST_TIMEOUT_MS)
    assert stored("time") == (["get_current_time", "convert_time"], "")

    # A preset with a key asks only for it; without it nothing is added.
    secret = "bsk-" + unique("secret")
    page.get_by_role("button", name="Add from preset").first.click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_role("button", name="Add Brave Search", exact=True).click()
    expect(dialog.get_by_role("heading", name="Add Brave Search")).to_be_visible()
    key_field = dialog.get_by_label("Brave Search API key (BRAVE_API_KEY)")
    expect(key_field).to_have_attribute("type", "password")
    dialog.get_by_role("button", name="Add", exact=True).click()
    expect(dialog.get_by_role("alert")).to_have_text(
        "The brave-search preset needs BRAVE_API_KEY (Brave Search API key)")
    key_field.fill(secret)
    dialog.get_by_role("button", name="Add", exact=True).click()
    expect(page.get_by_role("dialog")).to_have_count(0)
    brave = server_row(page, "brave-search")
    expect(brave).to_contain_text("env: BRAVE_API_KEY")
    expect(brave.get_by_test_id("mcp-check")).to_have_text("not tested yet")  # npx would download it: not now
    with session_scope(readonly=True) as session:
        config = mcp_servers.server_config(mcp_servers.get_server("brave-search", session=session))
    assert config.env == {"BRAVE_API_KEY": secret}
    assert config.args[-4:] == ("-y", "@brave/brave-search-mcp-server", "--transport", "stdio")  # through npx

    # The same keyless preset again gets a name of its own.
    page.get_by_role("button", name="Add from preset").first.click()
    page.get_by_role("dialog").get_by_role("button", name="Add Time", exact=True).click()
    expect(server_row(page, "time-2").get_by_test_id("mcp-check")).to_have_text(TIME_TOOLS, timeout=TEST_TIMEOUT_MS)
    html = page.content()
    frames = page.grobot_record.frames
    assert secret not in html and not any(secret in frame for frame in frames)
    assert page.grobot_record.console_errors == []


def test_a_bots_mcp_card_tests_the_server_in_place(admin_page) -> None:
    page = admin_page
    page.set_viewport_size({"width": 1400, "height": 900})
    bot_id = add_bot(unique("Clocked"))
    with session_scope() as session:
        for name, command in (("clock", TIME_SERVER), ("ghost", "mcp-server-does-not-exist")):
            server = mcp_servers.create_server(session=session, name=name, command=command)
            mcp_servers.enable_for_bot(session=session, bot_id=bot_id, server=server)
    page.goto(f"/bots/{bot_id}/settings")
    clock = page.locator('[data-server="clock"]')
    expect(clock.get_by_test_id("mcp-check")).to_have_text("Not tested yet: Test connects and lists its tools.",
                                                           timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_text("python -m grobot mcp test")).to_have_count(0)
    clock.get_by_role("spinbutton", name="Timeout (s)").fill("12")  # typed, not saved yet

    clock.get_by_role("button", name="Test").click()
    expect(clock.get_by_test_id("mcp-check")).to_have_text("OK: get_current_time, convert_time",
                                                           timeout=TEST_TIMEOUT_MS)
    expect(clock.get_by_test_id("mcp-tool-name")).to_have_text(["get_current_time", "convert_time"])
    expect(clock.get_by_role("spinbutton", name="Timeout (s)")).to_have_value("12")  # nothing typed is lost

    ghost = page.locator('[data-server="ghost"]')
    ghost.get_by_role("button", name="Test").click()
    expect(ghost.get_by_test_id("mcp-check")).to_have_text(
        "MCP server 'ghost' could not be started: command not found: mcp-server-does-not-exist",
        timeout=TEST_TIMEOUT_MS)
    page.set_viewport_size({"width": 420, "height": 900})
    ghost.scroll_into_view_if_needed()
    assert page.grobot_record.console_errors == []


def test_a_testers_replayed_mcp_events_start_nothing_and_add_nothing(web_app, tmp_path) -> None:
    """A tester's session sends the admin events straight over the websocket: no server is started
    (its command would leave a file), no preset is added, nothing is stored."""
    marker = tmp_path / "started"
    bot_id = add_bot(unique("Guarded"))
    tester = create_ui_user(unique("tester"), Role.TESTER)
    with session_scope() as session:
        user = users.get_user(tester.id, session=session)
        users.grant_bot(user, bot_id, session=session)
        token = users.start_session(user)
        server = mcp_servers.create_server(session=session, name="trap", command=sys.executable,
                                           args=["-c", f"open({str(marker)!r}, 'w')"])
        mcp_servers.enable_for_bot(session=session, bot_id=bot_id, server=server)
        server_id = server.id
    replay(
        web_app.url,
        Sent(McpState.test_server, {"server_id": server_id}, "/mcp"),
        Sent(McpPresetState.open_presets, {}, "/mcp"),
        Sent(McpPresetState.choose, {"name": "time"}, "/mcp"),
        Sent(McpPresetState.submit_secrets, {"form": {"secret:BRAVE_API_KEY": "x"}}, "/mcp"),
        Sent(BotSettingsState.test_mcp, {"server_id": server_id}, f"/bots/{bot_id}/settings"),
        session=token,
    )
    assert not marker.exists(), "a tester's event started an MCP server"
    with session_scope(readonly=True) as session:
        assert [s.name for s in mcp_servers.list_servers(session=session)] == ["trap"]
        assert stored("trap") == ([], "")


def test_a_preset_added_before_its_package_was_installed_runs_it_once_installed(admin_page) -> None:
    """The Time preset added while mcp-server-time was not installed is stored as ``uvx mcp-server-time``;
    uv is not installed either: Test said "command not found: uvx" even after the package was installed
    (only deleting and adding the preset again helped). Now Test runs the installed program, and a
    package that is still missing says how to install it."""
    if shutil.which("uvx"):
        pytest.skip("uv is installed here: its uvx would download the packages")
    page = admin_page
    page.set_viewport_size({"width": 1400, "height": 900})
    with session_scope() as session:  # as "Add from preset" stored them before the packages were installed
        mcp_servers.create_server(session=session, name="time", command="uvx",
                                  args=["mcp-server-time", "--local-timezone=UTC"])
        mcp_servers.create_server(session=session, name="weather", command="uvx", args=["mcp-server-not-installed"])
    open_mcp_page(page)
    time_row, weather = server_row(page, "time"), server_row(page, "weather")
    time_row.get_by_role("button", name="Test").click()
    expect(time_row.get_by_test_id("mcp-check")).to_have_text(TIME_TOOLS, timeout=TEST_TIMEOUT_MS)
    assert stored("time") == (["get_current_time", "convert_time"], "")

    weather.get_by_role("button", name="Test").click()
    expect(weather.get_by_test_id("mcp-check")).to_have_text(
        "MCP server 'weather' could not be started: command not found: uvx. mcp-server-not-installed is not "
        "installed here (uvx, which would download it, is not either). Install it, then test the server again: "
        f"{sys.executable} -m pip install mcp-server-not-installed", timeout=TEST_TIMEOUT_MS)
    screenshot(page, "mcp-preset-installed")
    page.set_viewport_size({"width": 420, "height": 900})
    card = page.locator('[data-server-card="weather"]')
    expect(card.get_by_test_id("mcp-check")).to_contain_text("Install it, then test the server again")
    screenshot(page, "mcp-preset-installed")
    assert page.grobot_record.console_errors == []
