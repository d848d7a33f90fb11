"""A bot's pages in a real browser against the real web app: header and tabs, Test Chat,
Logs, Settings, Files and the Knowledge Base, and what a tester may (not) see.

No bot worker process runs here: a Test Chat message is claimed as a supervisor claims it and
answered by the real Test Chat job (the agent chain, the fake LLM server, a real MCP server); only
the "no worker" and "failed run" states are written with the services a worker uses.
"""

from __future__ import annotations

import logging
import re
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import AgentEvent, Bot, BotFile, BotStatus, LogEntry, Role, Supervisor
from grobot.core.services import bots, conversations, discord_users, files, llm_settings, mcp_servers, tester_chat, user_notes, users
from tests.fakes.llm import Reply, use_fake_llm
from tests.helpers import make_token
from tests.ui.auth import PAGE_TIMEOUT_MS, create_ui_user, sign_in
from tests.ui.chat import add_bot, claim, fresh_heartbeat, run_real_job, stdio_server, unique
from tests.ui.screens import NARROW, PHONE, WIDE, assert_fits_the_width, screenshot, sized_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

LIVE_TIMEOUT_MS = 15_000


def open_tab(page, bot_id: int, tab: str) -> None:
    page.goto(f"/bots/{bot_id}/{tab}")
    expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)


def test_admin_opens_a_bot_from_the_list_and_sees_its_header_and_tabs(admin_page) -> None:
    page = admin_page
    name = unique("Header")
    bot_id = add_bot(name, token=make_token(223344556677889900))
    with session_scope() as session:
        status = session.get(BotStatus, bot_id)
        status.state, status.detail, status.discord_user_name, status.guild_count = "online", "connected", "hdr-bot", 4
        status.heartbeat_at = fresh_heartbeat()  # a live bot's heartbeat (an old one reads as offline)
        session.add(status)

    page.goto("/")
    page.get_by_role("table").get_by_role("link", name=name, exact=True).click()
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/chat$"), timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    header = page.get_by_test_id("bot-status")
    expect(header).to_contain_text("Online")
    expect(header).to_contain_text("hdr-bot")
    expect(header).to_contain_text("4 guilds")
    tabs = page.get_by_role("navigation", name="Bot sections").get_by_role("link")
    expect(tabs).to_have_text(["Test Chat", "Logs", "Settings", "Schedules", "Files", "Knowledge Base", "Memory", "Conversations",
                                 "Council"])
    sidebar_bot = page.get_by_role("navigation", name="Main navigation").locator(f'[data-bot-id="{bot_id}"]')
    expect(sidebar_bot).to_contain_text(name)
    expect(sidebar_bot.locator('[data-status="online"]')).to_have_count(1)

    # The status is live, in the header and the sidebar.
    with session_scope() as session:
        status = session.get(BotStatus, bot_id)
        status.state, status.detail = "error", "Discord refused the token"
        session.add(status)
    expect(header).to_contain_text("Discord refused the token", timeout=LIVE_TIMEOUT_MS)
    expect(sidebar_bot.locator('[data-status="error"]')).to_have_count(1, timeout=LIVE_TIMEOUT_MS)

    # An admin disables the bot from the header.
    page.get_by_role("switch", name="Bot enabled").click()
    expect(page.get_by_text("Disabled", exact=True)).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert session.get(Bot, bot_id).enabled is False


def test_a_tester_sees_only_the_granted_bot_and_only_its_test_chat(page, ui_env) -> None:
    granted_name, hidden_name = unique("Granted"), unique("Hidden")
    granted, hidden = add_bot(granted_name), add_bot(hidden_name)
    tester = create_ui_user(unique("tester"), Role.TESTER)
    with session_scope() as session:
        users.grant_bot(users.get_user(tester.id, session=session), granted, session=session)
    sign_in(page, tester)

    open_tab(page, granted, "chat")
    expect(page.get_by_role("heading", name=granted_name, exact=True)).to_be_visible()
    tabs = page.get_by_role("navigation", name="Bot sections").get_by_role("link")
    expect(tabs).to_have_text(["Test Chat"])
    expect(page.get_by_role("switch", name="Bot enabled")).to_have_count(0)
    sidebar = page.get_by_role("navigation", name="Main navigation")
    expect(sidebar.locator(f'[data-bot-id="{granted}"]')).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect(sidebar.locator(f'[data-bot-id="{hidden}"]')).to_have_count(0)

    page.goto(f"/bots/{granted}/settings")
    expect(page.get_by_test_id("access-error")).to_have_text(re.compile("Only administrators"), timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_text("Personality")).to_have_count(0)

    page.goto(f"/bots/{hidden}/chat")
    expect(page.get_by_test_id("access-error")).to_have_text(re.compile("does not exist, or you are not allowed"),
                                                             timeout=PAGE_TIMEOUT_MS)
    assert hidden_name not in page.content()


def test_admin_handlers_refuse_a_tester_on_the_server(ui_env) -> None:
    """What the Settings, Logs, Files and Knowledge Base handlers call checks the role itself."""
    from grobot.core.errors import NotFoundError, PermissionDenied
    from grobot.pages import bot_files_state as bot_files
    from grobot.pages import bot_knowledge_state, tester_chat_runs
    from grobot.pages import bot_logs_state as bot_logs
    from grobot.pages import bot_memory_state as bot_memory
    from grobot.pages import bot_settings_state as bot_settings

    bot_id, other = add_bot(unique("Guarded")), add_bot(unique("Other"))
    tester = create_ui_user(unique("tester"), Role.TESTER)
    with session_scope() as session:
        user = users.get_user(tester.id, session=session)
        users.grant_bot(user, bot_id, session=session)
        token = users.start_session(user)
    for call in (lambda: bot_settings.load_settings(token, bot_id),
                 lambda: bot_logs.load_logs(token, bot_id, "ALL", "", 10),
                 lambda: bot_files.load_files(token, bot_id),
                 lambda: bot_knowledge_state.load_users(token, bot_id, ""),
                 lambda: bot_knowledge_state.forget(token, bot_id, "123"),
                 lambda: bot_memory.load_page(token, bot_id, "", 10),
                 lambda: bot_memory.add(token, bot_id, "a fact", ""),
                 lambda: bot_memory.delete_user(token, bot_id, "123")):
        with pytest.raises(PermissionDenied):
            call()
    assert tester_chat_runs.load_chat(token, bot_id).turns == []  # the Test Chat is theirs
    with pytest.raises(NotFoundError):
        tester_chat_runs.send_message(token, other, "hello")  # not a granted bot


def _events(run_id: int, *events: tuple[str, dict]) -> None:
    with session_scope() as session:
        last = max((e.seq for e in conversations.run_events(session=session, run_id=run_id)), default=0)
        for offset, (kind, data) in enumerate(events, start=1):
            session.add(AgentEvent(run_id=run_id, seq=last + offset, kind=kind, data=data))


def test_test_chat_answers_through_the_real_job_and_its_tool_steps_fold_out(admin_page, fake_llm) -> None:
    page = admin_page
    bot_id = add_bot(unique("Chatty"), agent_mode="native")  # the output model calls the tools itself
    use_fake_llm(fake_llm, bot_id=bot_id)
    server = stdio_server(bot_id, "flaky", "weather", "--timeout", "1", "--fallback", "forecast=backup_forecast")
    forecast, backup = f"{server}__forecast", f"{server}__backup_forecast"
    open_tab(page, bot_id, "chat")
    expect(page.get_by_text("Say hello")).to_be_visible()

    box = page.get_by_role("textbox", name="Message")
    box.fill("Weather in Bern?")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_test_id("user-message").last).to_have_text("Weather in Bern?")
    expect(box).to_have_value("")
    expect(page.get_by_test_id("waiting-for-worker")).to_contain_text("waiting for the bot worker",
                                                                     timeout=LIVE_TIMEOUT_MS)

    # The real job answers it, outside any worker (no runner streams it: the page shows the run once it
    # ends; tests/ui/test_chat_live.py follows answers streamed by a worker): the model asks for the
    # forecast, which never answers (tried 3 times), so its fallback answers.
    fake_llm.script(Reply(tool_calls=[{"name": forecast, "arguments": {"city": "Bern"}}]),
                    Reply(text="Rain in Bern, says the backup forecast.", chunks=3, chunk_delay=1.0))
    with ThreadPoolExecutor(max_workers=1) as pool:
        job = pool.submit(run_real_job, claim(unique("sup")), bot_id)
        expect(page.get_by_test_id("waiting-for-worker")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
        assert job.result(timeout=90) is None
    answer = page.get_by_test_id("bot-answer").last
    expect(answer).to_contain_text("Rain in Bern, says the backup forecast.", timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_role("button", name="Send")).to_be_enabled()

    steps = answer.get_by_test_id("chain-steps")
    steps.get_by_text(re.compile(r"^Steps \(\d+\)$")).click()
    for text in (f"Calls {forecast}", f"Retrying {forecast} (attempt 2)", f"Retrying {forecast} (attempt 3)",
                 f"Executor: {forecast} failed after 3 tries; trying its fallback {backup}"):
        expect(steps.get_by_text(text, exact=True)).to_be_visible()
    steps.get_by_text(re.compile(rf"^{forecast} answered in \d+\.\d s$")).click()
    expect(steps).to_contain_text(f"(answered by the fallback tool {backup})")
    expect(steps).to_contain_text("Backup forecast: rain in Bern")
    steps.get_by_text(f"Calls {forecast}", exact=True).click()
    expect(steps).to_contain_text('"city": "Bern"')

    # A run that fails says so in plain words.
    supervisor_id = unique("sup")
    with session_scope() as session:
        session.add(Supervisor(id=supervisor_id, hostname="test", pid=1))
    try:
        box.fill("And tomorrow?")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_test_id("user-message").last).to_have_text("And tomorrow?")
        run_id = claim(supervisor_id)
        error = "the output model is unreachable (connection refused at http://127.0.0.1:9)"
        _events(run_id, ("error", {"message": error}))
        with session_scope() as session:
            tester_chat.fail(run_id, error, session=session)
        # In plain words; the error itself behind "Details" (for admins).
        expect(page.get_by_test_id("answer-error").last).to_have_text(
            "The bot could not answer: the output model is unreachable", timeout=LIVE_TIMEOUT_MS)
        details = page.get_by_test_id("technical-details").last
        details.locator("summary").click()
        expect(details).to_contain_text(error)
    finally:
        with session_scope() as session:
            supervisor = session.get(Supervisor, supervisor_id)
            if supervisor is not None:
                session.delete(supervisor)

    # The real job answers the next message without tools (the fake answers "Echo: <the message>").
    box.fill("Ping")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_test_id("user-message").last).to_have_text("Ping")
    run_real_job(claim(unique("sup")), bot_id)
    expect(page.get_by_test_id("bot-answer").last).to_contain_text("Echo: Ping", timeout=LIVE_TIMEOUT_MS)

    # After a reload the history is still there; "Reset conversation" forgets it.
    page.reload()
    expect(page.get_by_test_id("bot-answer").first).to_contain_text("Rain in Bern", timeout=PAGE_TIMEOUT_MS)
    page.get_by_role("button", name="Reset conversation").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Reset").click()
    expect(page.get_by_text("Say hello")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert tester_chat.recent_messages(tester_chat.latest_session(bot_id, _admin_id(session), session=session).id,
                                         session=session) == []


def _admin_id(session) -> int:
    return users.get_user("ui-admin", session=session).id or 0


def test_logs_filter_by_level_and_text(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Logged"))
    with session_scope() as session:
        for level, message in [("INFO", "connected to the gateway"), ("WARNING", "rate limited for 2 s"),
                               ("ERROR", "gateway connection lost"), ("DEBUG", "heartbeat acknowledged")]:
            session.add(LogEntry(bot_id=bot_id, level=level, logger="bot_worker.bot_process", message=message))
    open_tab(page, bot_id, "logs")
    rows = page.get_by_role("table").locator("tbody tr")
    expect(rows).to_have_count(4, timeout=PAGE_TIMEOUT_MS)
    expect(rows.first).to_contain_text("heartbeat acknowledged")  # newest first

    page.get_by_role("combobox", name="Level").click()
    page.get_by_role("option", name="WARNING").click()
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("gateway connection lost")
    expect(rows.nth(1)).to_contain_text("rate limited")

    page.get_by_role("textbox", name="Search").fill("gateway")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("ERROR")

    # Live tail: a new matching entry shows up without a reload.
    with session_scope() as session:
        session.add(LogEntry(bot_id=bot_id, level="ERROR", logger="bot_worker.bot_process",
                             message="gateway closed with code 4004"))
    expect(rows.first).to_contain_text("code 4004", timeout=LIVE_TIMEOUT_MS)


def test_settings_save_show_errors_in_place_and_never_send_secrets(admin_page, fake_llm) -> None:
    page = admin_page
    token = make_token(334455667788990011)
    bot_id = add_bot(unique("Settled"), token=token, personality="Be brief.")
    mcp_name = unique("weather")
    with session_scope() as session:
        server_id = mcp_servers.create_server(session=session, name=mcp_name, command="python", args=["-m", "w"]).id
        mcp_servers.record_tools(session=session, server_id=server_id, tools=[{"name": "forecast"}, {"name": "alerts"}])
    open_tab(page, bot_id, "settings")
    personality = page.get_by_role("textbox", name="Personality")
    expect(personality).to_have_value("Be brief.", timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_test_id("token-state")).to_have_text("set")
    save = page.get_by_role("button", name="Save changes")
    expect(page.get_by_test_id("save-bar")).to_have_count(0)  # nothing to save yet: no bar
    expect(save).to_have_count(0)

    personality.fill("You are a patient librarian.")
    expect(save).to_be_enabled()
    page.get_by_role("textbox", name="Keywords").fill("books, library")
    page.get_by_role("spinbutton", name="Max tool rounds").fill("99")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_test_id("settings-error")).to_contain_text(
        "Nothing was saved. Please correct: Max tool rounds must be between 0 and 20.")
    expect(page.get_by_role("alert").filter(has_text="must be between 0 and 20")).to_be_visible()
    expect(personality).to_have_value("You are a patient librarian.")  # nothing typed is lost
    with session_scope(readonly=True) as session:
        assert session.get(Bot, bot_id).personality == "Be brief."

    page.get_by_role("spinbutton", name="Max tool rounds").fill("3")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_test_id("save-bar")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)  # saved: the bar is gone
    with session_scope(readonly=True) as session:
        bot = session.get(Bot, bot_id)
        assert (bot.personality, bot.keywords, bot.max_tool_rounds) == ("You are a patient librarian.",
                                                                       ["books", "library"], 3)

    # An LLM override of the output category, with an API key that never comes back.
    api_key = "sk-test-" + uuid.uuid4().hex
    card = page.locator('[data-category="output"]')
    card.get_by_role("combobox", name="Model", exact=True).fill("qwen2.5:7b")
    card.get_by_role("textbox", name="Base URL").fill(fake_llm.url)
    card.get_by_role("spinbutton", name="Temperature").fill("0.3")
    card.get_by_role("textbox", name="API key").fill(api_key)
    card.get_by_role("button", name="Save output").click()
    expect(card).to_contain_text("Set for this bot", timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="output", bot_id=bot_id)
        assert (llm.source, llm.model, llm.temperature, llm.api_key) == ("bot", "qwen2.5:7b", 0.3, api_key)
    expect(card.get_by_text("set", exact=True)).to_be_visible()
    card.get_by_role("button", name="Check connection").click()  # asks the server in the card (the fake)
    expect(card.get_by_test_id("llm-check")).to_contain_text(f"Connected to Ollama at {fake_llm.url}: 2 models available",
                                                          timeout=LIVE_TIMEOUT_MS)
    expect(card.locator("datalist option")).to_have_count(2)
    card.get_by_role("spinbutton", name="Temperature").fill("7")
    card.get_by_role("button", name="Save output").click()
    expect(card.get_by_test_id("llm-error")).to_contain_text("Temperature must be between 0 and 2.")
    expect(card.get_by_role("combobox", name="Model", exact=True)).to_have_value("qwen2.5:7b")

    # An MCP server for this bot, limited to one of its tools; an unknown tool is refused.
    server = page.locator(f'[data-server="{mcp_name}"]')
    server.get_by_role("checkbox").click()
    server.get_by_role("textbox", name="Allowed tools").fill("forecast, teleport")
    server.get_by_role("spinbutton", name="Timeout (s)").fill("10")
    server.get_by_role("button", name="Save").click()
    expect(server).to_contain_text("has no tool named teleport")
    server.get_by_role("textbox", name="Allowed tools").fill("forecast")
    server.get_by_role("button", name="Save").click()
    expect(server).not_to_contain_text("teleport", timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        links = mcp_servers.bot_links(session=session, bot_id=bot_id)
        assert [(s.name, link.allowed_tools, link.timeout_seconds) for link, s in links] == [(mcp_name, ["forecast"], 10.0)]

    # A bad token is refused with the service's words; the stored one stays.
    page.get_by_label("New Discord token").fill("not-a-token")
    page.get_by_role("button", name="Replace token").click()
    expect(page.get_by_text("does not look like a Discord bot token")).to_be_visible()

    html = page.content()
    frames = "\n".join(page.grobot_record.frames)
    for secret in (token, api_key):
        assert secret not in html
        assert secret not in frames
    assert "discord_token_enc" not in frames and "api_key_enc" not in frames
    with session_scope(readonly=True) as session:
        assert bots.get_token(session.get(Bot, bot_id)) == token


def test_settings_mcp_tools_get_a_fallback_and_a_read_write_setting(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Tooled"))
    mcp_name = unique("weather")
    with session_scope() as session:
        server_id = mcp_servers.create_server(session=session, name=mcp_name, command="python", args=["-m", "w"]).id
        mcp_servers.record_tools(session=session, server_id=server_id,
                                 tools=[{"name": "forecast"}, {"name": "alerts"}, {"name": "purge", "writes": True}])
    open_tab(page, bot_id, "settings")
    server = page.locator(f'[data-server="{mcp_name}"]')
    server.get_by_role("checkbox").click()
    server.get_by_role("textbox", name="Allowed tools").fill("forecast")

    # Per tool: the fallback to call when it fails, and whether its calls change things.
    fallback = server.get_by_role("textbox", name="Fallback of forecast")
    expect(server.get_by_label("Calls of forecast")).to_have_value("auto")
    expect(server.get_by_label("Calls of forecast")).to_contain_text("Auto: not annotated, in parallel")
    expect(server.get_by_label("Calls of purge")).to_contain_text("Auto: writes (annotated)")
    fallback.fill("forecast")
    server.get_by_role("button", name="Save").click()
    expect(server.get_by_role("alert")).to_have_text("A tool cannot be its own fallback ('forecast')")
    fallback.fill("alerts")
    server.get_by_role("button", name="Save").click()
    expect(server.get_by_role("alert")).to_contain_text(
        f"The fallback 'alerts' of 'forecast' is not among this bot's allowed tools of '{mcp_name}'")
    server.get_by_role("textbox", name="Allowed tools").fill("")
    server.get_by_label("Calls of alerts").select_option("writes")
    server.get_by_role("button", name="Save").click()
    expect(server.get_by_role("alert")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    expect(server.get_by_role("textbox", name="Fallback of forecast")).to_have_value("alerts")  # as saved
    expect(server.get_by_label("Calls of alerts")).to_have_value("writes")
    with session_scope(readonly=True) as session:
        [(link, _)] = mcp_servers.bot_links(session=session, bot_id=bot_id)
        assert (link.allowed_tools, link.tool_settings) == (None, {"alerts": {"access": "writes"},
                                                                   "forecast": {"fallback": "alerts"}})


def test_delete_a_bot_after_typing_its_name(admin_page) -> None:
    page = admin_page
    name = unique("Doomed")
    bot_id = add_bot(name)
    open_tab(page, bot_id, "settings")
    page.get_by_role("button", name="Delete this bot").click()
    dialog = page.get_by_role("alertdialog")
    confirm = dialog.get_by_role("button", name="Delete bot")
    expect(confirm).to_be_disabled()
    dialog.get_by_role("textbox", name="Bot name to confirm").fill(name)
    confirm.click()
    expect(page).to_have_url(re.compile(r"/$"), timeout=PAGE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert session.get(Bot, bot_id) is None


def test_files_upload_list_download_and_delete(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Filer"))
    open_tab(page, bot_id, "files")
    expect(page.get_by_text("No files yet")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    chooser = page.locator("#bot-files-upload input[type=file]")

    page.get_by_role("textbox", name="Folder (optional)").fill("docs")
    expect(page.get_by_test_id("upload-target")).to_contain_text("docs/")
    chooser.set_input_files([{"name": "faq.md", "mimeType": "text/markdown", "buffer": b"# FAQ\nOpen 9-17.\n"}])
    row = page.locator('[data-path="docs/faq.md"]')
    expect(row).to_contain_text("17 bytes", timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert [f.path for f in session.exec(select(BotFile).where(BotFile.bot_id == bot_id)).all()] == ["docs/faq.md"]

    with page.expect_download() as download:
        row.get_by_role("button", name="Download docs/faq.md").click()
    assert download.value.suggested_filename == "faq.md"
    assert open(download.value.path(), "rb").read() == b"# FAQ\nOpen 9-17.\n"

    # A folder that leaves the bot's folder: the service's error, nothing stored.
    page.get_by_role("textbox", name="Folder (optional)").fill("../escape")
    expect(page.get_by_test_id("upload-target")).to_have_text(  # said before any upload, not "Files go into"
        "'../escape' goes outside the bot's folder ('..' is not allowed).")
    chooser.set_input_files([{"name": "x.txt", "mimeType": "text/plain", "buffer": b"x"}])
    expect(page.get_by_test_id("upload-error")).to_contain_text("outside the bot's folder", timeout=LIVE_TIMEOUT_MS)

    row.get_by_role("button", name="Delete docs/faq.md").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_text("No files yet")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert session.exec(select(BotFile).where(BotFile.bot_id == bot_id)).all() == []


def test_choosing_the_same_file_again_uploads_it_again(admin_page, tmp_path) -> None:
    """Choosing a file of the same name again (after an upload refused for its folder, or a new
    version of it) did nothing: no upload, no message, the old version stayed. (The file is chosen
    from the disk, as in the browser's file chooser, which reports no change for the same file.)"""
    page = admin_page
    bot_id = add_bot(unique("Reloader"))
    open_tab(page, bot_id, "files")
    expect(page.get_by_text("No files yet")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    chooser = page.locator("#bot-files-upload input[type=file]")
    folder = page.get_by_role("textbox", name="Folder (optional)")
    local = tmp_path / "prices.md"
    local.write_bytes(b"v1")

    folder.fill("../escape")
    expect(page.get_by_test_id("upload-target")).to_contain_text("goes outside the bot's folder")
    chooser.set_input_files(local)
    expect(page.get_by_test_id("upload-error")).to_contain_text("outside the bot's folder", timeout=LIVE_TIMEOUT_MS)

    folder.fill("docs")  # the folder fixed, the same file chosen again
    expect(page.get_by_test_id("upload-target")).to_contain_text("docs/")
    chooser.set_input_files(local)
    row = page.locator('[data-path="docs/prices.md"]')
    expect(row).to_contain_text("2 bytes", timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_test_id("upload-error")).to_have_count(0)

    local.write_bytes(b"version 2")  # a new version of the file, chosen again: replaced once the admin says so
    chooser.set_input_files(local)
    page.get_by_role("alertdialog").get_by_role("button", name="Replace").click()
    expect(row).to_contain_text("9 bytes", timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert files.read_bytes(session=session, bot_id=bot_id, path="docs/prices.md") == b"version 2"


def test_a_same_name_upload_asks_first_and_files_show_by_folder_with_a_text_preview(admin_page) -> None:
    """Files overwrote a same-name upload silently (55 -> 63 bytes, "Uploaded 1 file."), showed no folders
    and no preview. Now the admin chooses (cancel, keep both, replace, each saying the sizes), the files
    are grouped under their folders, and a text file opens in a preview."""
    page = admin_page
    page.set_viewport_size(WIDE)
    bot_id = add_bot(unique("Shelves"))
    old, new = b"# FAQ\n" + b"Open from nine to five, Monday to Friday.\n" + b"-" * 7, b"# FAQ\n" + b"x" * 57
    assert (len(old), len(new)) == (55, 63)
    with session_scope() as session:
        for path, data in (("faq.md", old), ("logo.png", b"\x89PNG\r\n\x1a\n\0\0"), ("docs/manual.md", b"# Manual\n"),
                           ("docs/old/notes.txt", b"first line\nsecond line\n")):
            files.write_file(session=session, bot_id=bot_id, path=path, data=data)
    open_tab(page, bot_id, "files")
    folders = page.locator("[data-folder]")
    expect(folders).to_have_count(3, timeout=PAGE_TIMEOUT_MS)
    expect(folders).to_contain_text(["Top folder2 files, 65 bytes", "docs/1 file, 9 bytes",
                                     "docs/old/1 file, 23 bytes"])
    expect(page.locator('[data-path="docs/old/notes.txt"]').get_by_role("rowheader")).to_have_accessible_name(
        re.compile(r"^notes\.txt( |$)"))  # under its folder's heading (then its state in the document index)
    screenshot(page, "files-by-folder")

    chooser = page.locator("#bot-files-upload input[type=file]")
    dialog = page.get_by_role("alertdialog")

    def upload_faq(now: str = "55 bytes") -> None:
        chooser.set_input_files([{"name": "faq.md", "mimeType": "text/markdown", "buffer": new}])
        expect(dialog.get_by_role("heading")).to_have_text("Replace a file of the same name?", timeout=LIVE_TIMEOUT_MS)
        expect(dialog.get_by_test_id("replace-file")).to_have_text([f"faq.md{now} → 63 bytes"])

    def stored() -> dict[str, bytes]:
        with session_scope(readonly=True) as session:
            return {f.path: files.read_bytes(session=session, bot_id=bot_id, path=f.path)
                    for f in files.list_files(session=session, bot_id=bot_id) if f.path.startswith("faq")}

    upload_faq()
    screenshot(page, "files-replace")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    assert stored() == {"faq.md": old}  # nothing of the upload is stored

    upload_faq()
    dialog.get_by_role("button", name="Keep both").click()
    expect(page.locator('[data-path="faq (2).md"]')).to_contain_text("63 bytes", timeout=LIVE_TIMEOUT_MS)
    assert stored() == {"faq.md": old, "faq (2).md": new}

    upload_faq()
    dialog.get_by_role("button", name="Replace").click()
    expect(page.get_by_text("Replaced faq.md (55 bytes → 63 bytes).")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect(page.locator('[data-path="faq.md"]')).to_contain_text("63 bytes")
    assert stored() == {"faq.md": new, "faq (2).md": new}

    # A folder's "Upload here" puts the next upload into it.
    page.get_by_role("button", name="Upload into docs/old/").click()
    expect(page.get_by_role("textbox", name="Folder (optional)")).to_have_value("docs/old")
    expect(page.get_by_test_id("upload-target")).to_contain_text("docs/old/")

    # A text file's first characters; no preview for an image.
    expect(page.get_by_role("button", name="Preview logo.png")).to_have_count(0)
    page.get_by_role("button", name="Preview docs/old/notes.txt").click()
    preview = page.get_by_role("dialog")
    expect(preview.get_by_test_id("file-preview")).to_have_text("first line\nsecond line\n", timeout=LIVE_TIMEOUT_MS)
    screenshot(page, "files-preview")
    preview.get_by_role("button", name="Close the preview").click()
    expect(page.get_by_role("dialog")).to_have_count(0)

    page.set_viewport_size(NARROW)
    screenshot(page, "files-by-folder")
    page.get_by_role("button", name="Upload into the top folder").click()
    expect(page.get_by_role("textbox", name="Folder (optional)")).to_have_value("")
    upload_faq(now="63 bytes")
    screenshot(page, "files-replace")
    dialog.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Preview faq.md").click()
    expect(page.get_by_role("dialog").get_by_test_id("file-preview")).to_contain_text("# FAQ")
    screenshot(page, "files-preview")
    assert page.grobot_record.console_errors == []


def test_files_fit_a_phone_with_the_name_readable_and_the_actions_at_hand(browser, web_app, ui_admin) -> None:
    bot_id = add_bot(unique("Pocket"))
    name = "docs/a-rather-long-manual-file-name-for-a-phone.md"
    with session_scope() as session:
        files.write_file(session=session, bot_id=bot_id, path=name, data=b"# Manual\n", content_type="text/markdown")
    with sized_page(browser, web_app.url, PHONE, ui_admin) as page:
        open_tab(page, bot_id, "files")
        row = page.locator(f'[data-path="{name}"]')
        expect(row).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        # The name keeps most of the line, the actions stay on screen, the size and date go under the name.
        row.scroll_into_view_if_needed()  # under its folder's heading
        screenshot(page, "files-phone")
        name_box = row.get_by_text(name.removeprefix("docs/")).bounding_box()
        assert name_box and name_box["width"] >= 150, f"the name gets {name_box} on a phone"
        for action in (f"Download {name}", f"Delete {name}"):
            expect(row.get_by_role("button", name=action)).to_be_in_viewport()
        expect(row.get_by_test_id("file-details")).to_contain_text("9 bytes")
        hint = page.get_by_test_id("upload-target")
        hint_box = hint.bounding_box()
        assert hint_box and hint_box["width"] >= 200, f"the upload hint is squeezed: {hint_box}"
        assert_fits_the_width(page, "the Files tab")


def test_conversations_tab_without_conversations_asks_to_pick_none(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Quiet"))
    open_tab(page, bot_id, "conversations")
    expect(page.get_by_text("No Discord conversations yet", exact=False)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_text("Nothing to read yet")).to_be_visible()
    expect(page.get_by_text("Pick a conversation")).to_have_count(0)


def test_knowledge_base_directives_notes_and_forgetting(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Knower"))
    with session_scope() as session:
        discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id="4242", directives="Be formal.",
                                     display_name="Ada")
        user_notes.add_note(session=session, bot_id=bot_id, discord_user_id="4242", note="Writes compilers",
                            reliability=0.9, source="archivist")
    open_tab(page, bot_id, "knowledge")
    page.locator('[data-user="4242"]').click()
    directives = page.get_by_role("textbox", name="Directives")
    expect(directives).to_have_value("Be formal.", timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_text("Writes compilers")).to_be_visible()
    expect(page.locator("[data-note]").first).to_contain_text("90%")

    directives.fill("Be formal. Answer in English.")
    page.get_by_role("button", name="Save directives").click()
    expect(page.get_by_role("button", name="Save directives")).to_be_disabled(timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert discord_users.get_directives(session=session, bot_id=bot_id, discord_user_id="4242") == \
            "Be formal. Answer in English."

    page.get_by_role("textbox", name="New note").fill("Lives in London")
    page.get_by_role("button", name="Add note").click()
    expect(page.get_by_text("Lives in London")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        notes = {n.note: n for n in user_notes.list_notes(session=session, bot_id=bot_id, discord_user_id="4242")}
        assert notes["Lives in London"].reliability == 0.8 and notes["Lives in London"].source == "admin"
    page.locator(f'[data-note="{notes["Writes compilers"].id}"]').get_by_role("button", name="Delete note").click()
    expect(page.get_by_text("Writes compilers")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)

    page.get_by_role("button", name="Forget this user").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Forget user").click()
    # No bot worker runs in these tests: the profile and notes go, and the admin learns the memories did not.
    expect(page.get_by_text("their memories were not deleted")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_text("Pick a user")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect(page.locator('[data-user="4242"]')).to_have_count(0)
    with session_scope(readonly=True) as session:
        assert discord_users.known_users(session=session, bot_id=bot_id) == []


def test_settings_daily_limits_persist_and_today_shows_the_usage(admin_page) -> None:
    from grobot.core.models import UsageDaily, UserUsageDaily
    from grobot.core.services import app_settings
    from grobot.core.services.usage_accounting import utc_day

    page = admin_page
    bot_id = add_bot(unique("Budgeted"))
    day = utc_day()
    with session_scope() as session:
        session.add(UsageDaily(bot_id=bot_id, day=day, calls=12, tokens_in=1000, tokens_out=234))
        session.add(UserUsageDaily(bot_id=bot_id, day=day, discord_user_id="42", messages=5))
        session.add(UserUsageDaily(bot_id=bot_id, day=day, discord_user_id="43", messages=1))
        default_calls = app_settings.get_values(("daily_call_limit",), session=session)["daily_call_limit"]
    open_tab(page, bot_id, "settings")
    tokens = page.get_by_role("textbox", name="Tokens per day")
    expect(tokens).to_have_value("", timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_text(f"Empty: the global default ({f'{default_calls:,}' if default_calls else 'unlimited'})")
           .first).to_be_visible()
    expect(page.get_by_test_id("today-tokens")).to_contain_text("1,234 / ")

    # A bad value: an error in place, nothing saved.
    tokens.fill("lots")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_test_id("settings-error")).to_contain_text("Tokens per day")
    with session_scope(readonly=True) as session:
        assert session.get(Bot, bot_id).daily_token_limit is None

    tokens.fill("5000")
    page.get_by_role("textbox", name="LLM calls per day").fill("unlimited")
    page.get_by_role("textbox", name="Messages per user per day").fill("5")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_test_id("save-bar")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        bot = session.get(Bot, bot_id)
        assert (bot.daily_token_limit, bot.daily_call_limit, bot.user_daily_message_limit) == (5000, 0, 5)
    today = page.get_by_test_id("today-usage")
    expect(today.get_by_test_id("today-tokens")).to_have_text("1,234 / 5,000")
    expect(today.get_by_test_id("today-calls")).to_have_text("12 / unlimited")
    expect(today.get_by_test_id("today-users")).to_have_text("1 user at their limit of 5 messages today.")

    # The monthly budgets and the daily cost are set on the same page (not only from the CLI).
    budgets = page.get_by_test_id("bot-budgets")
    expect(budgets.get_by_text("Empty: the global default").first).to_be_visible()
    page.get_by_role("textbox", name="Cost per month").fill("12.5")
    page.get_by_role("textbox", name="Tokens per month").fill("100000")
    page.get_by_role("textbox", name="LLM calls per month").fill("-3")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_test_id("settings-error")).to_contain_text("LLM calls per month")
    page.get_by_role("textbox", name="LLM calls per month").fill("")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_test_id("save-bar")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        bot = session.get(Bot, bot_id)
        assert (bot.monthly_cost_limit, bot.monthly_token_limit, bot.monthly_call_limit) == (12.5, 100000, None)

    page.reload()
    expect(page.get_by_role("textbox", name="Tokens per day")).to_have_value("5000", timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_role("textbox", name="LLM calls per day")).to_have_value("0")
    expect(page.get_by_role("textbox", name="Messages per user per day")).to_have_value("5")
    expect(page.get_by_role("textbox", name="Cost per month")).to_have_value("12.5")
    expect(page.get_by_role("textbox", name="Tokens per month")).to_have_value("100000")
