"""The fleet-wide admin pages (Settings, MCP servers, Users, Usage) in a real browser against
the real web app: what an admin changes is stored, bad input shows an error next to its
field and loses nothing, secrets never reach the browser, and testers never get in.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging
import re
from types import SimpleNamespace

import pytest
from playwright.sync_api import expect
from sqlalchemy import delete

from grobot.core.db import session_scope
from grobot.core.models import AppUser, LLMSetting, Setting
from grobot.core.services import app_settings, bots, llm_calls, llm_settings, mcp_servers, users
from tests.ui.auth import PAGE_TIMEOUT_MS, UiUser, home_url_pattern, sign_in
from tests.ui.webapp import free_port

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

ADMIN_ROUTES = ("/settings", "/mcp", "/users", "/usage")


def assert_never_sent(page, *secrets: str) -> None:
    """None of ``secrets`` is in the page's HTML nor in any state update it received."""
    html = page.content()
    frames = page.grobot_record.frames
    assert frames, "the state updates were not recorded"
    for secret in secrets:
        assert secret not in html
        assert not any(secret in frame for frame in frames)


def open_admin_page(page, route: str, heading: str) -> None:
    page.goto(route)
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)


# --------------------------------------------------------------------------- Settings


@pytest.fixture
def global_settings_restored(ui_env):
    """The other modules share the database: the global defaults are put back afterwards."""
    yield
    with session_scope() as session:
        session.exec(delete(LLMSetting).where(LLMSetting.bot_id.is_(None)))
        session.exec(delete(Setting).where(Setting.key.in_(app_settings.DEFAULTS)))


def test_settings_change_the_llm_defaults_and_fleet_settings(admin_page, global_settings_restored) -> None:
    page = admin_page
    secret_key = "sk-test-9f8e7d6c5b4a"
    open_admin_page(page, "/settings", "Settings")
    form = page.get_by_role("form", name="Decision model")
    expect(form.get_by_test_id("llm-decision-api-key-state")).to_have_text("not set")

    # Save a model, a base URL and an API key.
    page.locator("#llm-decision-model").fill("qwen2.5:3b")
    page.locator("#llm-decision-base_url").fill("http://127.0.0.1:9/")
    page.locator("#llm-decision-context_window").fill("16384")
    page.locator("#llm-decision-api_key").fill(secret_key)
    form.get_by_role("button", name="Save", exact=True).click()
    # The key is checked with the (dead) server first: it cannot be, so the admin chooses to save anyway.
    expect(form.get_by_test_id("llm-decision-unverified")).to_contain_text(
        "Ollama at http://127.0.0.1:9 cannot be reached, so the API key could not be checked")
    with session_scope(readonly=True) as session:
        assert llm_settings.effective_llm(session=session, category="decision").source == "builtin"
    form.get_by_role("button", name="Save anyway").click()
    expect(page.get_by_text("Decision model saved")).to_be_visible()
    expect(form.get_by_test_id("llm-decision-api-key-state")).to_have_text("set")
    expect(page.locator("#llm-decision-api_key")).to_have_value("")
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="decision")
    assert (llm.source, llm.model, llm.base_url, llm.context_window, llm.api_key) == (
        "global", "qwen2.5:3b", "http://127.0.0.1:9", 16384, secret_key,
    )  # fmt: skip

    # A bad value: the error shows next to its field, the typed values stay, nothing is stored.
    page.locator("#llm-decision-model").fill("llama3.1:8b")
    page.locator("#llm-decision-temperature").fill("5")
    form.get_by_role("button", name="Save", exact=True).click()
    expect(form.locator('[data-field-error="llm-decision-temperature"]')).to_contain_text("must be between 0 and 2")
    expect(page.locator("#llm-decision-model")).to_have_value("llama3.1:8b")
    expect(page.locator("#llm-decision-temperature")).to_have_value("5")
    with session_scope(readonly=True) as session:
        assert llm_settings.effective_llm(session=session, category="decision").model == "qwen2.5:3b"

    # "Check connection" refuses what Save refuses, in the same words under the same field.
    form.get_by_role("button", name="Check connection").click()
    expect(page.get_by_text("Not checked: correct the highlighted fields first")).to_be_visible()
    expect(form.locator('[data-field-error="llm-decision-temperature"]')).to_contain_text("must be between 0 and 2")
    expect(form.get_by_test_id("llm-decision-check")).to_have_count(0)

    # "Check connection" asks the (dead) server for its models and says it cannot be reached.
    page.locator("#llm-decision-temperature").fill("0.5")
    form.get_by_role("button", name="Check connection").click()
    check = form.get_by_test_id("llm-decision-check")
    expect(check).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(check).not_to_contain_text("Connected")

    # Fleet settings: a good value is stored; an out-of-range one is refused next to its field.
    fleet = page.get_by_role("form", name="Fleet settings")
    page.locator("#app-log_retention_days").fill("45")
    fleet.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("Settings saved")).to_be_visible()
    page.locator("#app-tool_timeout_seconds").fill("0")
    page.locator("#app-event_retention_days").fill("60")
    fleet.get_by_role("button", name="Save settings").click()
    expect(fleet.locator('[data-field-error="app-tool_timeout_seconds"]')).to_contain_text("must be between 1 and 600")
    expect(page.locator("#app-event_retention_days")).to_have_value("60")
    with session_scope(readonly=True) as session:
        stored = app_settings.get_values(("log_retention_days", "event_retention_days", "tool_timeout_seconds"), session=session)
    assert stored == {"log_retention_days": 45, "event_retention_days": 30, "tool_timeout_seconds": 30.0}

    page.once("dialog", lambda dialog: dialog.accept())  # the fleet form has unsaved edits: discard them
    page.reload()
    expect(page.locator("#app-log_retention_days")).to_have_value("45", timeout=PAGE_TIMEOUT_MS)
    expect(page.locator("#llm-decision-model")).to_have_value("qwen2.5:3b")

    # The stored API key can be removed; what is typed in another form is not lost meanwhile.
    form = page.get_by_role("form", name="Decision model")
    page.locator("#app-event_retention_days").fill("99")
    form.get_by_role("checkbox", name="Remove the stored key").click()
    page.once("dialog", lambda dialog: dialog.accept())  # "Remove the stored API key of the decision model?"
    form.get_by_role("button", name="Save", exact=True).click()
    expect(form.get_by_test_id("llm-decision-api-key-state")).to_have_text("not set")
    expect(page.locator("#app-event_retention_days")).to_have_value("99")
    with session_scope(readonly=True) as session:
        assert llm_settings.effective_llm(session=session, category="decision").api_key is None
    assert_never_sent(page, secret_key)


# --------------------------------------------------------------------------- MCP servers


def server_row(page, name: str):
    return page.get_by_role("table").get_by_role("row").filter(has=page.get_by_role("rowheader").get_by_text(name, exact=True))


def test_mcp_servers_add_list_tools_and_delete(admin_page, ui_env) -> None:
    page = admin_page
    secret = "mcp-env-secret-4c3b2a"
    with session_scope() as session:
        for server in mcp_servers.list_servers(session=session):
            mcp_servers.delete_server(server, session=session)
    open_admin_page(page, "/mcp", "MCP servers")
    expect(page.get_by_role("heading", name="No MCP servers yet")).to_be_visible()

    page.get_by_role("button", name="Add server").click()
    dialog = page.get_by_role("dialog")
    page.locator("#mcp-name").fill("bad name!")
    page.locator("#mcp-command").fill("uvx")
    page.locator("#mcp-args").fill("mcp-server-time\n--local-timezone=UTC")
    page.locator("#mcp-env").fill(f"API_TOKEN={secret}")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog.locator('[data-field-error="mcp-name"]')).to_contain_text("1-32 characters")
    expect(page.locator("#mcp-env")).to_have_value(f"API_TOKEN={secret}")  # nothing lost
    page.locator("#mcp-name").fill("clock")
    dialog.get_by_role("button", name="Save").click()
    expect(page.get_by_role("dialog")).to_have_count(0)

    row = server_row(page, "clock")
    expect(row).to_contain_text("uvx mcp-server-time --local-timezone=UTC")
    expect(row).to_contain_text("env: API_TOKEN")
    # Tested when saved: the uvx command runs the mcp-server-time installed here (no uv needed).
    expect(row).to_contain_text("OK: 2 tools (get_current_time, convert_time)", timeout=20_000)
    expect(row).to_contain_text("no bot")
    with session_scope(readonly=True) as session:
        config = mcp_servers.server_config(mcp_servers.get_server("clock", session=session))
    assert (config.transport, config.command, config.args, config.env) == (
        "stdio", "uvx", ("mcp-server-time", "--local-timezone=UTC"), {"API_TOKEN": secret},
    )  # fmt: skip

    # The worker stores the tool list (and a bot uses the server): the page shows them.
    with session_scope() as session:
        server = mcp_servers.get_server("clock", session=session)
        tools = [{"name": "get_current_time", "description": "Current time in a timezone"},
                 {"name": "convert_time", "description": "Convert between timezones"}]  # fmt: skip
        mcp_servers.record_tools(session=session, server_id=server.id, tools=tools)
        bot = bots.create_bot(session=session, name=f"McpUser{free_port()}")
        mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=server)
        bot_name = bot.name
    page.get_by_role("button", name="Refresh").click()
    expect(row).to_contain_text("2 tools")
    expect(row).to_contain_text(bot_name)
    row.get_by_text("2 tools", exact=True).click()
    tools_dialog = page.get_by_role("dialog")
    expect(tools_dialog).to_contain_text("Tools of clock")
    expect(tools_dialog).to_contain_text("get_current_time")
    expect(tools_dialog).to_contain_text("Convert between timezones")
    tools_dialog.get_by_role("button", name="Close").click()

    # Disable it, then edit: the stored env is only "set", and an empty box keeps it.
    row.get_by_role("switch", name="Enabled").click()
    expect(row.get_by_role("switch", name="Enabled")).not_to_be_checked()
    row.get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_test_id("mcp-env-state")).to_have_text("set")
    expect(page.locator("#mcp-env")).to_have_value("")
    dialog.get_by_role("button", name="Cancel").click()
    with session_scope(readonly=True) as session:
        server = mcp_servers.get_server("clock", session=session)
        assert server.enabled is False
        assert mcp_servers.server_config(server).env == {"API_TOKEN": secret}

    # Move it to streamable HTTP with a secret header.
    header_secret = "hdr-secret-8d7c6b"
    row.get_by_role("button", name="Edit").click()
    page.locator("#mcp-transport").click()
    page.get_by_role("option", name="streamable_http").click()
    page.locator("#mcp-url").fill("http://127.0.0.1:9/mcp")
    page.locator("#mcp-headers").fill(f"Authorization=Bearer {header_secret}")
    page.get_by_role("dialog").get_by_role("button", name="Save").click()
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(row).to_contain_text("http://127.0.0.1:9/mcp")
    expect(row).to_contain_text("HTTP")
    expect(row).to_contain_text("headers: Authorization")
    with session_scope(readonly=True) as session:
        config = mcp_servers.server_config(mcp_servers.get_server("clock", session=session))
    assert (config.transport, config.url, config.command) == ("streamable_http", "http://127.0.0.1:9/mcp", None)
    assert config.headers == {"Authorization": f"Bearer {header_secret}"}
    assert_never_sent(page, secret, header_secret)

    row.get_by_role("button", name="Delete").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_text("MCP server clock deleted")).to_be_visible()
    expect(page.get_by_role("heading", name="No MCP servers yet")).to_be_visible()
    with session_scope(readonly=True) as session:
        assert mcp_servers.list_servers(session=session) == []


# --------------------------------------------------------------------------- Users


def test_admin_adds_a_tester_who_sees_only_the_granted_bot(admin_page, browser, web_app, ui_env) -> None:
    page = admin_page
    suffix = free_port()
    shared, hidden, username = f"Shared{suffix}", f"Hidden{suffix}", f"tester{suffix}"
    with session_scope() as session:
        shared_id = bots.create_bot(session=session, name=shared).id
        bots.create_bot(session=session, name=hidden)
    open_admin_page(page, "/users", "Users")
    page.get_by_role("button", name="Add user").click()
    dialog = page.get_by_role("dialog")
    page.locator("#new-username").fill(username)
    dialog.get_by_role("button", name="Add user").click()
    # No password typed: one is generated and shown once.
    shown = page.get_by_role("dialog").locator("#shown-once-password")
    expect(shown).not_to_have_value("", timeout=PAGE_TIMEOUT_MS)
    password = shown.input_value()
    assert len(password) >= users.MIN_PASSWORD
    page.get_by_role("button", name="Done").click()

    row = page.get_by_role("table").get_by_role("row").filter(has=page.get_by_text(username, exact=True))
    expect(row).to_contain_text("Tester")
    expect(row).to_contain_text("none yet")
    expect(row).to_contain_text("never")
    row.get_by_role("button", name="Bots").click()
    access = page.get_by_role("dialog")
    access.get_by_text(shared, exact=True).click()
    expect(access.get_by_role("checkbox", name=shared)).to_be_checked()
    access.get_by_role("button", name="Save access").click()
    expect(row).to_contain_text(shared)
    with session_scope(readonly=True) as session:
        account = users.get_user(username, session=session)
        assert users.visible_bot_ids(account, session=session) == {shared_id}

    # The tester signs in: only the granted bot, no admin page, and admin URLs send them home.
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=web_app.url)
    try:
        tester_page = context.new_page()
        frames: list[str] = []
        tester_page.on("websocket", lambda ws: ws.on(
            "framereceived", lambda f: frames.append(f if isinstance(f, str) else f.decode("utf-8", "replace"))))
        sign_in(tester_page, UiUser(id=account.id or 0, username=username, password=password, role="tester"))
        headers = tester_page.get_by_role("table").get_by_role("rowheader")
        expect(headers).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
        expect(headers.first).to_contain_text(shared)
        nav = tester_page.get_by_role("navigation", name="Main navigation")
        for label in ("Settings", "Users", "MCP servers", "Usage"):
            expect(nav.get_by_role("link", name=label, exact=True)).to_have_count(0)
        for route in ADMIN_ROUTES:
            tester_page.goto(route)
            expect(tester_page).to_have_url(home_url_pattern(), timeout=PAGE_TIMEOUT_MS)
            expect(tester_page.get_by_role("heading", name="Bots", exact=True)).to_be_visible()
        # The server sent the tester nothing of the admin pages (no accounts, no other bot).
        assert any(shared in frame for frame in frames), "the state updates were not recorded"
        assert not any("ui-admin" in frame or hidden in frame for frame in frames)
    finally:
        context.close()

    # The admin disables the account: it cannot sign in any more.
    row.get_by_role("button", name="More actions").click()
    page.get_by_role("menuitem", name="Disable").click()
    confirm = page.get_by_role("alertdialog")
    expect(confirm).to_contain_text(f"Disable {username}?")  # names who it is about
    confirm.get_by_role("button", name="Disable user").click()
    expect(row).to_contain_text("Disabled")
    with session_scope(readonly=True) as session:
        assert session.get(AppUser, account.id).disabled is True


# --------------------------------------------------------------------------- Usage


def test_usage_page_shows_the_llm_calls_per_bot_and_role(admin_page, ui_env) -> None:
    page = admin_page
    name = f"Usage{free_port()}"

    def call(role: str, tokens_in: int, tokens_out: int, latency: float, error: str = "") -> SimpleNamespace:
        return SimpleNamespace(role=role, provider="ollama", model="llama3.2", tokens_in=tokens_in,
                               tokens_out=tokens_out, ttft_ms=None, latency_ms=latency, error=error)  # fmt: skip

    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name=name).id
        records = [call("gatekeeper", 1200, 3, 100.0), call("synthesizer", 2000, 400, 900.0),
                   call("synthesizer", 1000, 0, 200.0, error="timeout")]  # fmt: skip
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None, records=records)
    open_admin_page(page, "/usage", "Usage")
    table = page.get_by_test_id("usage-by-bot")
    row = table.get_by_role("row").filter(has=page.get_by_role("rowheader").get_by_text(name, exact=True))
    expect(row.get_by_role("cell")).to_have_text(["3", "4,200", "403", re.compile(r"1 \(33\.3 %\)"), "400 ms",
                                                  re.compile(r"^[A-Z]{3} 0\.00$")])  # ollama: free
    roles = page.get_by_test_id("usage-by-role")
    expect(roles).to_contain_text("Synthesizer")
    expect(roles).to_contain_text("Gatekeeper")
    page.get_by_role("radio", name="24 h").click()
    expect(page.get_by_text("LLM calls of the fleet over the last 24 hours")).to_be_visible()
    expect(row).to_contain_text("4,200")


def test_your_own_account_s_delete_looks_as_disabled_as_its_disable(admin_page) -> None:
    page = admin_page
    open_admin_page(page, "/users", "Users")
    row = page.get_by_role("table").get_by_role("row").filter(has=page.get_by_text("ui-admin", exact=True))
    row.get_by_role("button", name="More actions").click()
    disable, delete_ = (page.get_by_role("menuitem", name=name) for name in ("Disable", "Delete"))
    expect(delete_).to_be_visible()
    for item in (disable, delete_):
        expect(item).to_have_attribute("aria-disabled", "true")
    # Greyed out alike: the red of Delete does not make it look clickable.
    colors = [item.evaluate("el => getComputedStyle(el).color") for item in (disable, delete_)]
    assert colors[0] == colors[1], f"Disable is {colors[0]}, Delete is {colors[1]}"
    page.keyboard.press("Escape")


def test_every_global_limit_says_0_is_unlimited(admin_page) -> None:
    page = admin_page
    open_admin_page(page, "/settings", "Settings")
    body = page.locator("body")
    for text in ("Per UTC month; 0 = unlimited.", "Estimated, per UTC month; 0 = unlimited.",
                 "0 = unlimited. An alert at 80 %"):
        expect(body).to_contain_text(text)
    expect(body).not_to_contain_text("0 = none")
