"""The settings forms in a real browser (issue 14 items 1 and 3, issue 15 items 4 and 7): what each Save
saves, no edit lost without "Discard unsaved changes?" (the browser's Back button too), destructive actions confirmed, "Check connection"
of what is typed (per bot too), overrides that store only what was set and say where the rest comes
from, API keys checked with the provider before they are saved, and another configured provider named
when a server cannot be reached.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect
from sqlalchemy import delete
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.llm import embedded
from grobot.core.models import Bot, LLMSetting, Role
from grobot.core.services import costs, llm_settings, mcp_servers, users
from grobot.pages import bot_knowledge_state  # noqa: F401  (imported here: the replay client's barrier is one of its events)
from grobot.pages.bot_settings import BotSettingsState
from grobot.pages.settings import SettingsState
from grobot.state.bot_page import BotPageState
from tests.fakes.llm import use_fake_llm
from tests.helpers import make_token
from tests.security.replay import Sent, replay
from tests.ui.auth import PAGE_TIMEOUT_MS, create_ui_user
from tests.ui.chat import add_bot, unique
from tests.ui.screens import NARROW, PHONE, WIDE, screenshot
from tests.ui.webapp import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

LIVE_TIMEOUT_MS = 15_000
DISCARD = "Discard unsaved changes?"
GOOD_KEY = "sk-good-5f4e3d2c1b"


class Dialogs:
    """Answers the page's dialogs (``accept`` or not) and keeps what they said."""

    def __init__(self, page) -> None:
        self.seen: list[tuple[str, str]] = []
        self.accept = False
        page.on("dialog", self._answer)

    def _answer(self, dialog) -> None:
        self.seen.append((dialog.type, dialog.message))
        if self.accept:
            dialog.accept()
        else:
            dialog.dismiss()

    def take(self) -> list[tuple[str, str]]:
        seen, self.seen = self.seen, []
        return seen


@pytest.fixture
def llm_rows_restored(ui_env):
    """The other modules share the database: the LLM settings this module stores are removed afterwards."""
    yield
    with session_scope() as session:
        session.exec(delete(LLMSetting))


def open_tab(page, bot_id: int, tab: str) -> None:
    page.goto(f"/bots/{bot_id}/{tab}")
    expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def bot_rows(bot_id: int) -> dict[str, LLMSetting]:
    with session_scope(readonly=True) as session:
        return {r.category: r for r in session.exec(select(LLMSetting).where(LLMSetting.bot_id == bot_id)).all()}


# --------------------------------------------------------------------------- Bot Settings: saves and the guard


def _new_bot_settings(page, prefix: str) -> tuple[int, Dialogs, Any]:
    """A new bot ("Be brief.") with its Settings open: its id, the page's dialogs, its Personality field."""
    bot_id = add_bot(unique(prefix), personality="Be brief.")
    open_tab(page, bot_id, "settings")
    dialogs = Dialogs(page)
    personality = page.get_by_role("textbox", name="Personality")
    expect(personality).to_have_value("Be brief.", timeout=PAGE_TIMEOUT_MS)
    return bot_id, dialogs, personality


def test_leaving_bot_settings_with_unsaved_edits_asks_first(admin_page, llm_rows_restored) -> None:
    page = admin_page
    bot_id, dialogs, personality = _new_bot_settings(page, "Careful")

    # Nothing edited: a tab switch asks nothing.
    page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Logs").click()
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/logs$"), timeout=PAGE_TIMEOUT_MS)
    assert dialogs.take() == []
    open_tab(page, bot_id, "settings")

    # The personality edited: the bot's tabs and the sidebar ask, and staying keeps the edit.
    personality = page.get_by_role("textbox", name="Personality")
    expect(personality).to_have_value("Be brief.", timeout=PAGE_TIMEOUT_MS)
    personality.fill("You are a patient librarian.")
    expect(page.get_by_text("Unsaved changes")).to_be_visible()
    page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Logs").click()
    assert dialogs.take() == [("confirm", DISCARD)]
    page.get_by_role("link", name="Usage", exact=True).click()
    assert dialogs.take() == [("confirm", DISCARD)]
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/settings$"))
    expect(personality).to_have_value("You are a patient librarian.")

    # Closing the tab asks too (the browser's own words); staying keeps the page.
    with page.expect_event("dialog"):
        page.close(run_before_unload=True)
    assert [kind for kind, _ in dialogs.take()] == ["beforeunload"]
    expect(page.get_by_role("textbox", name="Personality")).to_have_value("You are a patient librarian.")

    # A card's own form counts too: saved fields, then a typed model of the output card.
    expect(page.get_by_text("Unsaved changes")).to_be_visible()
    page.get_by_role("button", name="Save changes").click()  # the app is still connected: the edit is saved
    expect(page.get_by_test_id("save-bar")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Logs").click()
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/logs$"), timeout=PAGE_TIMEOUT_MS)
    assert dialogs.take() == []
    open_tab(page, bot_id, "settings")
    card = page.locator('[data-category="output"]')
    card.get_by_role("combobox", name="Model", exact=True).fill("qwen2.5:7b")
    page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Files").click()
    assert dialogs.take() == [("confirm", DISCARD)]

    # Discarding leaves, and the edit is gone (as the admin chose).
    dialogs.accept = True
    page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Files").click()
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/files$"), timeout=PAGE_TIMEOUT_MS)
    assert dialogs.take() == [("confirm", DISCARD)]
    with session_scope(readonly=True) as session:
        assert session.get(Bot, bot_id).personality == "You are a patient librarian."
    assert bot_rows(bot_id) == {}


def test_leaving_right_after_typing_asks_too(admin_page) -> None:
    """A tab clicked right after typing in a bot's Settings (before the server had heard of the edit)
    left the page without asking, and the edit was lost."""
    page = admin_page
    bot_id, dialogs, personality = _new_bot_settings(page, "Hasty")
    logs = page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Logs")
    personality.fill("You are a hasty librarian.")
    logs.click()  # at once: no waiting for "Unsaved changes"
    assert dialogs.take() == [("confirm", DISCARD)]
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/settings$"))
    expect(personality).to_have_value("You are a hasty librarian.")

    # Saved, then leaving at once asks nothing.
    expect(page.get_by_text("Unsaved changes")).to_be_visible()
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_test_id("save-bar")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    logs.click()
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/logs$"), timeout=PAGE_TIMEOUT_MS)
    assert dialogs.take() == []


def test_the_back_button_asks_before_unsaved_edits_are_lost(admin_page, llm_rows_restored) -> None:
    page = admin_page
    bot_id = add_bot(unique("Backward"), personality="Be brief.")
    open_tab(page, bot_id, "logs")
    page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Settings").click()
    settings_url, logs_url = re.compile(rf"/bots/{bot_id}/settings$"), re.compile(rf"/bots/{bot_id}/logs$")
    expect(page).to_have_url(settings_url, timeout=PAGE_TIMEOUT_MS)
    dialogs = Dialogs(page)
    personality = page.get_by_role("textbox", name="Personality")
    expect(personality).to_have_value("Be brief.", timeout=PAGE_TIMEOUT_MS)
    personality.fill("You are a patient librarian.")
    expect(page.get_by_text("Unsaved changes")).to_be_visible()

    # Back with an edit asks; staying keeps the page and the edit, and the next Back asks again.
    for _ in range(2):
        with page.expect_event("dialog"):
            page.go_back()
        assert dialogs.take() == [("confirm", DISCARD)]
        expect(page).to_have_url(settings_url)
        expect(personality).to_have_value("You are a patient librarian.")
        expect(page.get_by_text("Unsaved changes")).to_be_visible()

    # Saved, there is nothing to lose: one Back goes back, without a question.
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_test_id("save-bar")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    page.go_back()
    expect(page).to_have_url(logs_url, timeout=PAGE_TIMEOUT_MS)
    assert dialogs.take() == []

    # Discarding goes on back, and the edit is gone as the admin chose.
    page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Settings").click()
    expect(personality).to_have_value("You are a patient librarian.", timeout=PAGE_TIMEOUT_MS)
    personality.fill("You are a pirate.")
    expect(page.get_by_text("Unsaved changes")).to_be_visible()
    dialogs.accept = True
    with page.expect_event("dialog"):
        page.go_back()
    expect(page).to_have_url(logs_url, timeout=PAGE_TIMEOUT_MS)
    assert dialogs.take() == [("confirm", DISCARD)]
    with session_scope(readonly=True) as session:
        assert session.get(Bot, bot_id).personality == "You are a patient librarian."

    # Left by a link (edit discarded), the page is one step of history as before: Back, Back.
    page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Settings").click()
    expect(personality).to_have_value("You are a patient librarian.", timeout=PAGE_TIMEOUT_MS)
    personality.fill("You are a knight.")
    expect(page.get_by_text("Unsaved changes")).to_be_visible()
    page.get_by_role("navigation", name="Bot sections").get_by_role("link", name="Files").click()
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/files$"), timeout=PAGE_TIMEOUT_MS)
    assert dialogs.take() == [("confirm", DISCARD)]
    page.go_back()
    expect(page).to_have_url(settings_url, timeout=PAGE_TIMEOUT_MS)
    expect(personality).to_have_value("You are a patient librarian.", timeout=PAGE_TIMEOUT_MS)
    page.go_back()
    expect(page).to_have_url(logs_url, timeout=PAGE_TIMEOUT_MS)
    assert dialogs.take() == []


def test_bot_settings_say_what_each_save_saves_and_confirm_destructive_actions(admin_page, fake_llm,
                                                                             llm_rows_restored) -> None:
    page = admin_page
    token = make_token(556677889900112233)
    bot_id = add_bot(unique("Clear"), token=token)
    mcp_name = unique("clock")
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="tools", bot_id=bot_id, provider="ollama",
                             base_url=fake_llm.url, api_key="ollama-key")
        server = mcp_servers.create_server(session=session, name=mcp_name, command="python", args=["-m", "c"])
        mcp_servers.record_tools(session=session, server_id=server.id, tools=[{"name": "now"}])
        mcp_servers.enable_for_bot(session=session, bot_id=bot_id, server=server)
    open_tab(page, bot_id, "settings")
    dialogs = Dialogs(page)
    expect(page.get_by_test_id("bar-save")).to_have_count(8, timeout=PAGE_TIMEOUT_MS)  # one per section the bar saves
    expect(page.get_by_test_id("save-bar")).to_have_count(0)  # nothing unsaved: no bar
    keywords = page.get_by_role("textbox", name="Keywords")
    keywords.fill("books")
    expect(page.get_by_test_id("bar-scope")).to_have_text(
        "Saves General, Reply rules, Who may use the bot, Moderation, Limits, Web search, Usage limits and budgets, "
        "Discord connection. The cards below save on their own.")
    keywords.fill("")
    expect(page.get_by_test_id("save-bar")).to_have_count(0)
    expect(page.get_by_test_id("own-save")).to_have_text(["Saves on its own: Replace token",
                                                          "Each model saves on its own",
                                                          "Saves on its own: Save channel persona",
                                                          "Each server saves on its own"])

    # A card's save keeps what is typed in another card.
    decision = page.locator('[data-category="decision"]')
    decision.get_by_role("combobox", name="Model", exact=True).fill("typed-but-not-saved")
    output = page.locator('[data-category="output"]')
    output.get_by_role("spinbutton", name="Temperature").fill("0.4")
    output.get_by_role("button", name="Save output").click()
    expect(output.get_by_test_id("llm-source")).to_have_text("Set for this bot", timeout=LIVE_TIMEOUT_MS)
    expect(decision.get_by_role("combobox", name="Model", exact=True)).to_have_value("typed-but-not-saved")

    # Removing the token asks first; Cancel keeps it.
    page.get_by_role("button", name="Remove the token").click()
    confirm = page.get_by_role("alertdialog")
    expect(confirm).to_contain_text("Remove the Discord token?")
    confirm.get_by_role("button", name="Cancel").click()
    expect(page.get_by_test_id("token-state")).to_have_text("set")
    page.get_by_role("button", name="Remove the token").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Remove token").click()
    expect(page.get_by_test_id("token-state")).to_have_text("not set", timeout=LIVE_TIMEOUT_MS)

    # Removing a bot's API key asks in the browser; refusing sends nothing.
    tools = page.locator('[data-category="tools"]')
    tools.get_by_role("checkbox", name="Remove the key").click()
    tools.get_by_role("button", name="Save tools").click()
    assert dialogs.take() == [("confirm", "Remove the API key of the tools model?")]
    assert bot_rows(bot_id)["tools"].api_key_enc is not None

    # Stopping the use of an MCP server asks in the browser; refusing keeps it.
    mcp = page.locator(f'[data-server="{mcp_name}"]')
    mcp.get_by_role("checkbox").first.click()
    mcp.get_by_role("button", name="Save").click()
    assert dialogs.take() == [("confirm", f"Stop using {mcp_name} for this bot?")]
    with session_scope(readonly=True) as session:
        assert [link.enabled for link, _ in mcp_servers.bot_links(session=session, bot_id=bot_id)] == [True]

    # Back to the global default asks first.
    page.get_by_role("button", name="Use global default").first.click()
    confirm = page.get_by_role("alertdialog")
    expect(confirm).to_contain_text("Use the global default for")
    confirm.get_by_role("button", name="Cancel").click()
    assert set(bot_rows(bot_id)) == {"tools", "output"}
    page.set_viewport_size({"width": 420, "height": 900})
    page.get_by_role("heading", name="Reply rules").scroll_into_view_if_needed()
    output.scroll_into_view_if_needed()
    dialogs.accept = True  # leave without the unsaved decision model


# --------------------------------------------------------------------------- Bot Settings: the LLM cards


def test_a_bot_llm_card_checks_what_is_typed_and_stores_only_what_was_set(admin_page, fake_llm,
                                                                        llm_rows_restored) -> None:
    page = admin_page
    bot_id = add_bot(unique("Checked"))
    open_tab(page, bot_id, "settings")
    dialogs = Dialogs(page)
    dialogs.accept = True
    card = page.locator('[data-category="output"]')
    # Nothing set for the bot: each value says what it inherits, and from where.
    expect(card.get_by_test_id("llm-hint")).to_have_text(
        ["From the built-in default."] * 5 + ["From the provider's default."], timeout=PAGE_TIMEOUT_MS)
    expect(card.get_by_role("combobox", name="Provider")).to_have_text("Inherit (ollama)")
    base_url = card.get_by_role("textbox", name="Base URL")
    expect(base_url).to_have_attribute("placeholder", "Inherit (http://localhost:11434)")
    expect(base_url).to_have_value("")  # the effective URL is not copied into the form

    # The check asks the server typed in the card, not the saved one.
    dead = dead_url()
    base_url.fill(dead)
    card.get_by_role("button", name="Check connection").click()
    result = card.get_by_test_id("llm-check")
    expect(result).to_have_text(f"Ollama at {dead} cannot be reached", timeout=LIVE_TIMEOUT_MS)
    base_url.fill(fake_llm.url)
    expect(result).to_have_count(0)  # a changed form: the old result is gone
    card.get_by_role("button", name="Check connection").click()
    expect(result).to_contain_text(f"Connected to Ollama at {fake_llm.url}: 2 models available",
                                   timeout=LIVE_TIMEOUT_MS)
    expect(card.locator("datalist option")).to_have_count(2)
    assert bot_rows(bot_id) == {}  # a check saves nothing
    page.reload()
    expect(page.locator('[data-category="output"]').get_by_test_id("llm-hint").first).to_be_visible(
        timeout=PAGE_TIMEOUT_MS)
    expect(page.locator('[data-category="output"]').get_by_test_id("llm-check")).to_have_count(0)

    # Only the model is set: nothing else is copied into the bot's row.
    card = page.locator('[data-category="output"]')
    card.get_by_role("combobox", name="Model", exact=True).fill("fake-model")
    card.get_by_role("button", name="Save output").click()
    expect(card.get_by_test_id("llm-source")).to_have_text("Set for this bot", timeout=LIVE_TIMEOUT_MS)
    row = bot_rows(bot_id)["output"]
    assert (row.provider, row.base_url, row.model, row.context_window, row.temperature) == (
        "ollama", "", "fake-model", None, None)
    expect(card.get_by_test_id("llm-hint")).to_have_text([
        "Set for this bot.", "Set for this bot.", "From the built-in default.", "From the built-in default.",
        "From the built-in default.", "From the provider's default."])
    expect(card.get_by_role("combobox", name="Provider")).to_have_text("ollama")


def test_a_bot_llm_card_shows_what_it_inherits_and_check_refuses_what_save_refuses(admin_page, fake_llm,
                                                                                   llm_rows_restored) -> None:
    """The card said empty fields inherit, yet showed the inherited provider as chosen; with only a Base URL
    typed (the inherited provider being llamacpp, which runs a GGUF file here), Save said "Base URL must be
    empty for the llamacpp provider... Model is required" while "Check connection" said OK for the same
    input. Now the provider reads "Inherit (llamacpp)", each empty field what it inherits for the provider
    chosen, and Check refuses what Save refuses, in the same words."""
    page = admin_page
    page.set_viewport_size(WIDE)
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="output", provider="llamacpp", model=embedded.DEMO_MODEL)
    bot_id = add_bot(unique("Inheriting"))
    open_tab(page, bot_id, "settings")
    Dialogs(page).accept = True
    card = page.locator('[data-category="output"]')
    provider = card.get_by_role("combobox", name="Provider")
    model = card.get_by_role("combobox", name="Model", exact=True)
    base_url = card.get_by_role("textbox", name="Base URL")
    expect(provider).to_have_text("Inherit (llamacpp)", timeout=PAGE_TIMEOUT_MS)
    expect(model).to_have_attribute("placeholder", f"Inherit ({embedded.DEMO_MODEL})")
    expect(card.get_by_test_id("llm-hint")).to_have_text([
        "From the global setting.", "From the global setting.", "The bot worker runs the model file.",
        "From the global setting.", "From the global setting.", "From the built-in default."])
    screenshot(page, "llm-card-inherits")

    base_url.fill(fake_llm.url)  # only a Base URL: the inherited llamacpp takes none
    refusal = ("Base URL cannot be used with llamacpp, the provider inherited from the global setting: it runs a "
               "GGUF file on this machine. Choose the provider of the server at this URL (ollama, openai, ...).")
    card.get_by_role("button", name="Save output").click()
    expect(card.get_by_test_id("llm-error")).to_have_text(refusal, timeout=LIVE_TIMEOUT_MS)
    card.get_by_role("button", name="Check connection").click()
    expect(card.get_by_test_id("llm-error")).to_have_text(refusal, timeout=LIVE_TIMEOUT_MS)
    expect(card.get_by_test_id("llm-check")).to_have_count(0)  # no "1 GGUF file on this machine"
    assert "output" not in bot_rows(bot_id)

    # The provider of that server chosen: the empty fields say what they inherit with it; Check and Save agree.
    provider.click()
    page.get_by_role("option", name="ollama", exact=True).click()
    expect(model).to_have_attribute("placeholder", "Inherit (llama3.2)")
    expect(card.get_by_test_id("llm-hint").nth(1)).to_have_text("From the provider's default.")
    card.get_by_role("button", name="Check connection").click()
    expect(card.get_by_test_id("llm-check")).to_contain_text(f"Connected to Ollama at {fake_llm.url}",
                                                          timeout=LIVE_TIMEOUT_MS)
    expect(card.get_by_test_id("llm-error")).to_have_count(0)
    card.get_by_role("button", name="Save output").click()
    expect(card.get_by_test_id("llm-source")).to_have_text("Set for this bot", timeout=LIVE_TIMEOUT_MS)
    row = bot_rows(bot_id)["output"]
    assert (row.provider, row.base_url, row.model) == ("ollama", fake_llm.url, None)
    expect(provider).to_have_text("ollama")

    # Nothing typed and the provider inherited: nothing to store.
    decision = page.locator('[data-category="decision"]')
    decision.get_by_role("button", name="Save decision").click()
    expect(page.get_by_text("Nothing to save: every value of the decision model is inherited.")).to_be_visible(
        timeout=LIVE_TIMEOUT_MS)
    assert "decision" not in bot_rows(bot_id)
    page.set_viewport_size(NARROW)
    card.scroll_into_view_if_needed()
    screenshot(page, "llm-card-inherits")
    assert page.grobot_record.console_errors == []


def test_a_bot_llm_card_checks_a_new_key_and_names_another_provider(admin_page, fake_llm, llm_rows_restored) -> None:
    page = admin_page
    bot_id = add_bot(unique("Keyed"))
    use_fake_llm(fake_llm, bot_id=bot_id, categories=("decision",))  # the bot's decision model: the fake
    fake_llm.api_keys = {GOOD_KEY}
    open_tab(page, bot_id, "settings")
    dialogs = Dialogs(page)
    dialogs.accept = True
    card = page.locator('[data-category="output"]')
    expect(card).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    card.get_by_role("combobox", name="Provider").click()
    page.get_by_role("option", name="openai", exact=True).click()
    card.get_by_role("textbox", name="Base URL").fill(fake_llm.openai_url)
    card.get_by_role("textbox", name="API key").fill("sk-typo")
    card.get_by_role("button", name="Save output").click()
    expect(card.get_by_test_id("llm-error")).to_have_text(
        f"API key rejected by OpenAI at {fake_llm.openai_url}; the key was not saved", timeout=LIVE_TIMEOUT_MS)
    assert "output" not in bot_rows(bot_id)

    # An unreachable server: said so, with the provider the bot already has; "Save anyway" saves.
    dead = dead_url() + "/v1"
    card.get_by_role("textbox", name="Base URL").fill(dead)
    card.get_by_role("textbox", name="API key").fill(GOOD_KEY)
    card.get_by_role("button", name="Check connection").click()
    expect(card.get_by_test_id("llm-check")).to_have_text(
        f"OpenAI at {dead} cannot be reached. Another configured provider could serve the output model: ollama "
        f"(fake-model at {fake_llm.url}, this bot's decision model); choose it in Settings or with "
        "`python -m grobot llm set` (GroBot does not switch by itself).", timeout=LIVE_TIMEOUT_MS)
    card.get_by_role("button", name="Save output").click()
    unverified = card.get_by_test_id("llm-unverified")
    expect(unverified).to_contain_text(f"OpenAI at {dead} cannot be reached, so the API key could not be checked",
                                       timeout=LIVE_TIMEOUT_MS)
    assert "output" not in bot_rows(bot_id)
    unverified.get_by_role("button", name="Save anyway").click()
    expect(card.get_by_test_id("llm-source")).to_have_text("Set for this bot", timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="output", bot_id=bot_id)
    assert (llm.provider, llm.base_url, llm.api_key) == ("openai", dead, GOOD_KEY)
    html, frames = page.content(), "\n".join(page.grobot_record.frames)
    assert GOOD_KEY not in html and GOOD_KEY not in frames and "sk-typo" not in frames


def test_a_save_sent_before_the_provider_choice_came_back_uses_the_provider_chosen(web_app, fake_llm,
                                                                                  llm_rows_restored) -> None:
    """The provider select shows (and submits) a new choice only after its change event's round trip: a Save
    clicked within it carries the old provider in its form. The events reach the server in order, so the
    key is checked with the provider chosen, as the admin sees it (sent here without waiting)."""
    bot_id = add_bot(unique("Quick"))
    admin = create_ui_user(unique("admin"), Role.ADMIN)
    with session_scope() as session:
        token = users.start_session(users.get_user(admin.id, session=session))
    fake_llm.api_keys = {GOOD_KEY}
    form = {"category": "output", "provider": "inherit", "base_url": fake_llm.openai_url, "api_key": "sk-typo"}
    tab = f"/bots/{bot_id}/settings"
    updates = replay(web_app.url,
                     Sent(BotPageState.open_bot, {"tab": "settings", "admin_only": True}, tab),
                     Sent(BotSettingsState.load, {}, tab),
                     Sent(BotSettingsState.choose_provider, {"category": "output", "provider": "openai"}, tab),
                     Sent(BotSettingsState.submit_llm, {"form_data": form}, tab),
                     session=token)
    said = "\n".join(map(str, updates))
    assert f"API key rejected by OpenAI at {fake_llm.openai_url}; the key was not saved" in said
    assert "output" not in bot_rows(bot_id)


# --------------------------------------------------------------------------- the global Settings page


def test_global_settings_check_what_is_typed_and_check_keys_before_saving(admin_page, fake_llm,
                                                                          llm_rows_restored) -> None:
    page = admin_page
    use_fake_llm(fake_llm, categories=("decision",))  # saved and reachable
    page.goto("/settings")
    dialogs = Dialogs(page)
    decision = page.get_by_role("form", name="Decision model")
    expect(page.locator("#llm-decision-base_url")).to_have_value(fake_llm.url, timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_text("Each card saves on its own", exact=False)).to_be_visible()
    expect(page.get_by_role("form", name="Output model")).to_contain_text(
        "Empty: http://localhost:11434 (default).")  # no OLLAMA_HOST in this web app's environment

    # An edited card: leaving asks first.
    page.locator("#llm-decision-model").fill("typed")
    dialogs.accept = False
    page.get_by_role("link", name="Usage", exact=True).click()
    assert dialogs.take() == [("confirm", DISCARD)]
    expect(page.locator("#llm-decision-model")).to_have_value("typed")
    with page.expect_event("dialog"):  # the browser's Back button too (a form typed in)
        page.go_back()
    assert dialogs.take() == [("confirm", DISCARD)]
    expect(page).to_have_url(re.compile(r"/settings/?$"))
    expect(page.locator("#llm-decision-model")).to_have_value("typed")
    page.locator("#llm-decision-model").fill("fake-model")
    dialogs.accept = True

    # A dead URL typed but not saved: the check says so (it used to check the saved, working one).
    dead = dead_url()
    page.locator("#llm-decision-base_url").fill(dead)
    decision.get_by_role("button", name="Check connection").click()
    result = decision.get_by_test_id("llm-decision-check")
    expect(result).to_have_text(f"Ollama at {dead} cannot be reached", timeout=LIVE_TIMEOUT_MS)
    page.locator("#llm-decision-base_url").fill(fake_llm.url)
    expect(result).to_have_count(0)
    decision.get_by_role("button", name="Check connection").click()
    expect(result).to_contain_text(f"Connected to Ollama at {fake_llm.url}: 2 models available",
                                   timeout=LIVE_TIMEOUT_MS)
    page.reload()
    expect(page.locator("#llm-decision-base_url")).to_have_value(fake_llm.url, timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_test_id("llm-decision-check")).to_have_count(0)  # no result survives a reload

    # A rejected key is never saved.
    fake_llm.api_keys = {GOOD_KEY}
    output = page.get_by_role("form", name="Output model")
    page.locator("#llm-output-provider").click()
    page.get_by_role("option", name="openai", exact=True).click()
    page.locator("#llm-output-model").fill("fake-model")
    page.locator("#llm-output-base_url").fill(fake_llm.openai_url)
    page.locator("#llm-output-api_key").fill("sk-typo")
    output.get_by_role("button", name="Save", exact=True).click()
    expect(output.locator('[data-field-error="llm-output-api_key"]')).to_have_text(
        f"API key rejected by OpenAI at {fake_llm.openai_url}; the key was not saved", timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert llm_settings.effective_llm(session=session, category="output").source == "builtin"
    page.locator("#llm-output-api_key").fill(GOOD_KEY)
    output.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Output model saved")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="output")
    assert (llm.provider, llm.base_url, llm.api_key) == ("openai", fake_llm.openai_url, GOOD_KEY)

    # An unreachable provider: said so, with the other provider configured; "Save anyway" saves.
    tools = page.get_by_role("form", name="Tools model")
    dead = dead_url() + "/v1"
    page.locator("#llm-tools-provider").click()
    page.get_by_role("option", name="mistral", exact=True).click()
    page.locator("#llm-tools-base_url").fill(dead)
    page.locator("#llm-tools-api_key").fill(GOOD_KEY)
    tools.get_by_role("button", name="Save", exact=True).click()
    unverified = tools.get_by_test_id("llm-tools-unverified")
    expect(unverified).to_contain_text(
        f"Mistral at {dead} cannot be reached, so the API key could not be checked. Another configured provider "
        f"could serve the tools model: ollama (fake-model at {fake_llm.url}, the global decision default)",
        timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert llm_settings.effective_llm(session=session, category="tools").source == "builtin"
    page.set_viewport_size({"width": 420, "height": 900})
    unverified.get_by_role("button", name="Save anyway").click()
    expect(page.get_by_text("Tools model saved")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        llm = llm_settings.effective_llm(session=session, category="tools")
    assert (llm.provider, llm.base_url, llm.api_key) == ("mistral", dead, GOOD_KEY)
    frames = "\n".join(page.grobot_record.frames)
    assert GOOD_KEY not in frames and "sk-typo" not in frames


# --------------------------------------------------------------------------- the server's own checks


def test_a_tester_s_replayed_llm_form_events_reach_no_server_and_change_nothing(web_app, fake_llm,
                                                                               llm_rows_restored) -> None:
    """A check or a key check makes a request to the typed URL: only for an admin, never before the role
    check (else any tester could make the server call any address)."""
    bot_id = add_bot(unique("Replayed"))
    tester = create_ui_user(unique("tester"), Role.TESTER)
    with session_scope() as session:
        user = users.get_user(tester.id, session=session)
        users.grant_bot(user, bot_id, session=session)
        token = users.start_session(user)
    form = {"category": "output", "provider": "openai", "base_url": fake_llm.openai_url, "model": "fake-model",
            "api_key": "sk-replayed", "context_window": "8192", "temperature": "0.5"}
    tab = f"/bots/{bot_id}/settings"
    replay(web_app.url,
           Sent(SettingsState.set_intent, {"category": "output", "intent": "check"}, "/settings"),
           Sent(SettingsState.submit_llm, {"form": form}, "/settings"),
           Sent(SettingsState.submit_llm, {"form": form}, "/settings"),
           Sent(BotPageState.open_bot, {"tab": "chat", "admin_only": False}, tab),  # a bot they may open
           Sent(BotSettingsState.set_intent, {"category": "output", "intent": "check"}, tab),
           Sent(BotSettingsState.submit_llm, {"form_data": form}, tab),
           Sent(BotSettingsState.submit_llm, {"form_data": form}, tab),
           session=token)
    assert fake_llm.requests == []
    with session_scope(readonly=True) as session:
        assert session.exec(select(LLMSetting)).all() == []


# --------------------------------------------------------------------------- errors at their fields, Enter saves


def test_global_settings_put_a_missing_api_key_under_the_api_key(admin_page, llm_rows_restored) -> None:
    page = admin_page
    page.goto("/settings")
    output = page.get_by_role("form", name="Output model")
    expect(output).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    page.locator("#llm-output-provider").click()
    page.get_by_role("option", name="openai", exact=True).click()
    page.locator("#llm-output-base_url").fill("")
    page.locator("#llm-output-model").fill("gpt-4o-mini")
    page.locator("#llm-output-model").press("Enter")
    expect(output.locator('[data-field-error="llm-output-api_key"]')).to_have_text(
        "API key is required for OpenAI or any OpenAI-compatible server at https://api.openai.com/v1.",
        timeout=LIVE_TIMEOUT_MS)
    expect(output.locator('[data-field-error="llm-output-model"]')).to_have_count(0)
    expect(page.get_by_text("--api-key-stdin")).to_have_count(0)
    expect(page.locator("#llm-output-model")).to_have_value("gpt-4o-mini")
    with session_scope(readonly=True) as session:
        assert llm_settings.effective_llm(session=session, category="output").source == "builtin"


def test_a_refused_price_shows_at_its_field_and_keeps_what_was_typed(admin_page) -> None:
    page = admin_page
    model = unique("priced")
    page.goto("/usage")
    fields = {"Provider": "openai", "Model": model, "Input price per million tokens": "-1",
              "Output price per million tokens": "2"}
    expect(page.get_by_label("Provider", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    try:
        for name, value in fields.items():
            page.get_by_label(name, exact=True).fill(value)
        page.get_by_role("button", name="Save price").click()
        expect(page.locator('[data-field-error="price-input"]')).to_have_text(
            "The input price must be between 0 and 10,000 per million tokens.", timeout=LIVE_TIMEOUT_MS)
        for name, value in fields.items():  # nothing typed is lost
            expect(page.get_by_label(name, exact=True)).to_have_value(value)
        expect(page.locator('[data-field-error="price-output"]')).to_have_count(0)

        page.get_by_label("Input price per million tokens", exact=True).fill("0.5")
        page.get_by_role("button", name="Save price").click()
        row = page.get_by_test_id("prices").locator(f"tr[data-price-model='{model}']")
        expect(row.get_by_role("cell")).to_have_text(["openai", "0.5", "2", "set here", ""],
                                                     timeout=LIVE_TIMEOUT_MS)
        for name in fields:  # saved: the form starts empty again
            expect(page.get_by_label(name, exact=True)).to_have_value("")
        expect(page.locator('[data-field-error="price-input"]')).to_have_count(0)
    finally:
        with session_scope() as session:
            if any(p.model == model and p.source == "admin" for p in costs.list_prices(session=session)):
                costs.delete_price("openai", model, session=session)


def _settings_beside_a_taken_name(page, prefix: str):
    """Another bot's name, and the Settings tab of a new bot (prefix ``prefix``) with its Name field."""
    taken = unique("Taken")
    add_bot(taken)
    bot_id = add_bot(unique(prefix))
    open_tab(page, bot_id, "settings")
    name = page.get_by_role("textbox", name="Name", exact=True)
    expect(name).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    return taken, bot_id, name


def test_bot_settings_save_on_enter_and_show_a_taken_name_at_the_name(admin_page) -> None:
    page = admin_page
    taken, bot_id, name = _settings_beside_a_taken_name(page, "Renamed")

    new_name = unique("Entered")
    name.fill(new_name)
    name.press("Enter")
    expect(page.get_by_test_id("save-bar")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    rounds = page.get_by_role("spinbutton", name="Max tool rounds")
    rounds.fill("7")
    rounds.press("Enter")
    expect(page.get_by_test_id("save-bar")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    page.reload()
    expect(name).to_have_value(new_name, timeout=PAGE_TIMEOUT_MS)
    expect(rounds).to_have_value("7")

    name.fill(taken)
    name.press("Enter")  # at once: the form's default button is never disabled
    expect(page.locator('[data-field-error="name"]')).to_have_text(f"A bot named '{taken}' already exists",
                                                                   timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_test_id("settings-error")).to_have_text(
        f"Nothing was saved. Please correct: Name: A bot named '{taken}' already exists.")
    expect(name).to_have_value(taken)
    with session_scope(readonly=True) as session:
        assert session.get(Bot, bot_id).name == new_name


@pytest.mark.parametrize("size", [{"width": 1400, "height": 900}, {"width": 390, "height": 844}])
def test_a_field_reached_with_tab_is_not_under_the_sticky_save_bar(admin_page, size) -> None:
    page = admin_page
    page.set_viewport_size(size)
    bot_id = add_bot(unique("Tabbed"))
    open_tab(page, bot_id, "settings")
    page.get_by_role("textbox", name="Personality").fill("Edited: the bar shows")  # the bar is there while unsaved
    bar = page.locator("#bot-settings-save-bar")
    expect(bar).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    page.wait_for_function("document.documentElement.style.scrollPaddingBottom !== ''", timeout=PAGE_TIMEOUT_MS)
    page.get_by_role("switch", name="When relevant").focus()
    page.keyboard.press("Tab")
    channels = page.get_by_role("textbox", name="Allowed channels")
    expect(channels).to_be_focused()
    field, top = channels.bounding_box(), bar.bounding_box()
    assert field is not None and top is not None
    assert field["y"] + field["height"] <= top["y"], (field, top)


def test_on_a_phone_a_refused_save_brings_the_field_with_the_error_into_view(admin_page) -> None:
    page = admin_page
    page.set_viewport_size(PHONE)
    taken, _bot_id, name = _settings_beside_a_taken_name(page, "Phone")
    page.get_by_role("textbox", name="Allowed channels").scroll_into_view_if_needed()  # further down the page

    name.fill(taken)
    page.get_by_role("button", name="Save changes").click()

    error = page.locator('[data-field-error="name"]')
    expect(error).to_have_text(f"A bot named '{taken}' already exists", timeout=LIVE_TIMEOUT_MS)
    expect(name).to_be_focused()
    bar = page.locator("#bot-settings-save-bar").bounding_box()
    shown = error.bounding_box()
    assert bar is not None and shown is not None
    assert shown["y"] >= 0 and shown["y"] + shown["height"] <= bar["y"], (shown, bar)  # above the bar, on screen
    expect(page.get_by_test_id("bar-scope")).to_be_hidden()  # the bar keeps to what matters on a phone
