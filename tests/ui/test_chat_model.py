"""Test Chat says which model answers, above the chat, in a real browser: the provider and model of the bot's
output category with where the setting comes from; for the tiny demo model a plain notice, with where an admin
sets another (a tester is told an admin can)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.llm import embedded
from grobot.core.models import Role
from grobot.core.services import llm_settings, users
from tests.ui.auth import PAGE_TIMEOUT_MS, create_ui_user, sign_in
from tests.ui.chat import add_bot, unique
from tests.ui.screens import NARROW, WIDE, assert_fits_the_width, sized_page

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _demo_bot(name: str) -> int:
    """A bot whose answers come from the embedded demo model (its own output setting)."""
    bot_id = add_bot(name)
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="output", bot_id=bot_id, provider=embedded.PROVIDER,
                             model=embedded.DEMO_MODEL)
    return bot_id


def test_test_chat_names_the_model_and_says_plainly_when_it_is_the_demo_model(browser, web_app, ui_admin) -> None:
    plain, demo = add_bot(unique("Plain")), _demo_bot(unique("Tiny"))
    with sized_page(browser, web_app.url, WIDE, ui_admin) as page:
        page.goto(f"/bots/{plain}/chat")
        line = page.get_by_test_id("chat-model")
        # No setting anywhere (these tests run without the embedded model): Ollama, GroBot's built-in default.
        expect(line).to_have_text("Answers with ollama llama3.2 · the built-in default", timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_test_id("chat-demo-model")).to_have_count(0)
        assert line.bounding_box()["y"] < page.get_by_test_id("chat-history").bounding_box()["y"]  # above the chat

        page.goto(f"/bots/{demo}/chat")
        expect(line).to_have_text("Answers with llamacpp SmolLM2-135M-Instruct (tiny demo model) · this bot's setting",
                                  timeout=PAGE_TIMEOUT_MS)
        notice = page.get_by_test_id("chat-demo-model")
        expect(notice).to_contain_text("tiny demo model")
        expect(notice).to_contain_text("its answers are poor")
        expect(notice.get_by_role("link", name="Settings page")).to_have_attribute("href", "/settings")
        page.set_viewport_size(NARROW)
        expect(notice).to_be_visible()
        assert_fits_the_width(page, "the Test Chat with the demo model's notice")
        page.set_viewport_size(WIDE)
        notice.get_by_role("link", name="this bot's Settings").click()
        expect(page).to_have_url(re.compile(rf"/bots/{demo}/settings$"), timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_text("Language models")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        assert page.grobot_errors == []


def test_a_tester_is_told_an_admin_can_set_another_model(page, ui_env) -> None:
    demo = _demo_bot(unique("TinyToo"))
    tester = create_ui_user(unique("tester"), Role.TESTER)
    with session_scope() as session:
        users.grant_bot(users.get_user(tester.id, session=session), demo, session=session)
    sign_in(page, tester)
    page.goto(f"/bots/{demo}/chat")
    notice = page.get_by_test_id("chat-demo-model")
    expect(notice).to_contain_text("An admin can set another model for this bot.", timeout=PAGE_TIMEOUT_MS)
    expect(notice.get_by_role("link")).to_have_count(0)  # the settings pages are not theirs
