"""The smaller points of issue 30 item 9, in a real browser: logging out says it ends every session, a
user opened by id is in the address, a tester sent away from an admin page is told why, the login page
drops an old error, the global Settings' hints follow the provider chosen, "Monthly cost per bot" points
to the bot's own field, an error names the advisor it is about, and every field error is a sentence that
names its field ("Password must ...", never "Must ..." in one dialog and "must ..." in another).

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging
import re

import pytest
from playwright.sync_api import expect

from grobot.core.models import Role
from tests.ui.auth import PAGE_TIMEOUT_MS, create_ui_user, fill_login, home_url_pattern
from tests.ui.chat import add_bot, unique
from tests.ui.screens import NARROW, WIDE, sized_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.parametrize("size", ["wide", "narrow"])
def test_logging_out_says_it_ends_every_session(browser, web_app, ui_admin, size) -> None:
    with sized_page(browser, web_app.url, WIDE if size == "wide" else NARROW, ui_admin) as page:
        button = page.get_by_role("button", name=re.compile("^Log out"))
        expect(button.locator("visible=true")).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
        shown = button.locator("visible=true")
        said = (shown.inner_text() + " " + (shown.get_attribute("aria-label") or "")
                + " " + page.locator("body").inner_text())
        assert "every device" in said or "everywhere" in said, "logging out does not say it ends every session"


def test_a_user_opened_by_id_is_in_the_address(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Lookup"))
    page.goto(f"/bots/{bot_id}/knowledge")
    page.get_by_role("textbox", name="Discord user id").fill("998877665544332211")
    page.get_by_role("button", name="Open", exact=True).click()
    expect(page.get_by_role("textbox", name="Directives")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/knowledge\?user=998877665544332211$"))
    page.reload()
    expect(page.get_by_text("Discord id 998877665544332211")).to_be_visible(timeout=PAGE_TIMEOUT_MS)


def test_a_tester_sent_away_from_an_admin_page_is_told_why(browser, web_app) -> None:
    tester = create_ui_user(unique("curious"), Role.TESTER)
    with sized_page(browser, web_app.url, WIDE, tester) as page:
        page.goto("/usage")
        expect(page).to_have_url(home_url_pattern(), timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_text("That page is for administrators only")).to_be_visible(timeout=PAGE_TIMEOUT_MS)


def test_the_login_page_drops_an_old_error(page, ui_admin) -> None:
    page.goto("/login")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    fill_login(page, ui_admin.username, "not-the-password")
    alert = page.get_by_role("alert").filter(has_text=re.compile("password", re.IGNORECASE))
    expect(alert).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    page.goto("/login")  # later, in the same tab
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_label("Username")).to_be_visible()
    expect(alert).to_have_count(0)


def test_the_global_llm_hints_follow_the_provider_chosen(admin_page) -> None:
    page = admin_page
    page.goto("/settings")
    form = page.locator("form").filter(has=page.locator("#llm-output-provider"))
    expect(form).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(form).to_contain_text("Ollama: default model llama3.2")  # the stored provider, from the start
    expect(form).not_to_contain_text("mistral, xai")
    page.locator("#llm-output-provider").click()
    page.get_by_role("option", name="mistral", exact=True).click()
    expect(form).to_contain_text("Mistral: default model mistral-small-latest; needs an API key")
    expect(form).to_contain_text("Empty: https://api.mistral.ai/v1 (provider default).")
    expect(form).not_to_contain_text("OLLAMA_HOST")
    expect(form).not_to_contain_text("localhost:11434")
    fleet = page.get_by_role("form", name="Fleet settings")
    expect(fleet).to_contain_text("Cost per month, on the bot's Settings tab")
    expect(fleet).not_to_contain_text("python -m grobot bot set")


def test_an_advisor_error_names_the_advisor(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Advised"))
    page.goto(f"/bots/{bot_id}/council")
    analyst = page.locator('[data-advisor="Analyst"]')
    model = analyst.get_by_role("textbox", name="Model of Analyst")
    expect(model).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    model.fill("m" * 201)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_test_id("council-settings-error")).to_have_text(
        "Advisor Analyst: Model must be at most 200 characters.", timeout=PAGE_TIMEOUT_MS)


def test_every_field_error_names_its_field_with_one_spelling(admin_page) -> None:
    page = admin_page
    page.goto("/users")
    page.get_by_role("button", name="Add user").first.click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Username").fill(unique("short-pw"))
    dialog.get_by_label("Password").fill("short")
    dialog.get_by_role("button", name="Add user").click()
    password_error = dialog.locator("[data-field-error]").first
    expect(password_error).to_contain_text("Password must have at least 8 characters", timeout=PAGE_TIMEOUT_MS)
    page.keyboard.press("Escape")

    page.goto("/")
    page.get_by_role("button", name="Add bot").first.click()
    dialog = page.get_by_role("dialog", name="Add a bot")
    dialog.get_by_label("Name").fill("!bad name")
    dialog.get_by_role("button", name="Add bot").click()
    expect(dialog.locator('[data-field-error="new-bot-name"]')).to_contain_text("Name must be 1-64 characters",
                                                                               timeout=PAGE_TIMEOUT_MS)
    for text in dialog.locator("[data-field-error]").all_inner_texts() + [password_error.text_content() or ""]:
        assert not re.search(r"(^|[.:]\s*)Must\b", text), f"a field error starts with 'Must': {text!r}"
