"""A persona per channel in a real browser: set on the bot's Settings tab (the channel chosen by the name
the bot saw it under, its overrides checked as the bot's own LLM form checks them), listed by name, and
tested in Test Chat as that channel (the real Test Chat job; a scripted fake LLM records the system
prompt and the model it was asked with), then as no channel (the bot's own).

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import ChannelPersona, Conversation
from tests.fakes.llm import FakeLLM, is_archivist_request, requested_schema, use_fake_llm
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, claim, run_real_job, unique
from tests.ui.screens import NARROW, WIDE, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RANDOM = "888888888888888888"
ADDITION = "Here you speak like a pirate."
LIVE_TIMEOUT_MS = 30_000


def _system(body: dict[str, Any]) -> str:
    return " ".join(str(m.get("content") or "") for m in body.get("messages") or [] if m.get("role") == "system")


def _answers(fake_llm, text: str) -> list[dict[str, Any]]:
    return [b for b in fake_llm.chat_requests() if requested_schema(b) is None and not is_archivist_request(b)
            and text in str(b.get("messages"))]


def _pick(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()


def _ask(page, bot_id: int, text: str) -> None:
    page.get_by_role("textbox", name="Message").fill(text)
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_test_id("user-message").last).to_have_text(text, timeout=PAGE_TIMEOUT_MS)
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(run_real_job, claim(unique("sup")), bot_id).result(timeout=120) is None


def test_a_channel_persona_on_the_settings_tab_and_in_test_chat(admin_page, fake_llm) -> None:
    with FakeLLM() as pirate_server:  # the channel's own LLM server (its base URL), as `bot channel set --base-url`
        _persona_on_settings_and_in_test_chat(admin_page, fake_llm, pirate_server)


def _persona_on_settings_and_in_test_chat(admin_page, fake_llm, pirate_server) -> None:
    page = admin_page
    bot_id = add_bot(unique("Parrot"), personality="You are Polly, a helpful parrot.")
    use_fake_llm(fake_llm, bot_id=bot_id)
    with session_scope() as session:  # a channel the bot has talked in
        session.add(Conversation(bot_id=bot_id, key=f"guild:{RANDOM}", title="#random", discord_channel_id=RANDOM))
    page.goto(f"/bots/{bot_id}/settings")
    section = page.get_by_test_id("section-persona-per-channel")
    expect(section).to_contain_text("None: the bot is the same in every channel.", timeout=PAGE_TIMEOUT_MS)

    # An override checked as the bot's own form checks it: refused in plain words, nothing saved.
    _pick(page, "Channel", "#random")
    section.get_by_role("textbox", name="Channel's addition").fill(ADDITION)
    section.get_by_role("textbox", name="Output temperature").fill("5")
    section.get_by_role("button", name="Save channel persona").click()
    expect(section.get_by_role("alert")).to_have_text("Temperature must be between 0 and 2.", timeout=PAGE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        assert session.exec(select(ChannelPersona).where(ChannelPersona.bot_id == bot_id)).all() == []

    section.get_by_role("textbox", name="Output temperature").fill("")
    section.get_by_role("textbox", name="Output model").fill("pirate-model")
    section.get_by_role("textbox", name="Output base URL").fill(pirate_server.url)
    section.get_by_role("textbox", name="Output context window").fill("4096")
    section.get_by_role("button", name="Save channel persona").click()
    row = section.get_by_test_id("channel-persona")
    expect(row).to_contain_text("#random", timeout=PAGE_TIMEOUT_MS)
    expect(row).to_contain_text(ADDITION)
    expect(row).to_contain_text(f"output: pirate-model, base url {pirate_server.url}, context window 4096")
    with session_scope(readonly=True) as session:
        stored = session.get(ChannelPersona, (bot_id, RANDOM))
        assert stored is not None and (stored.personality, stored.llms) == (
            ADDITION, {"output": {"model": "pirate-model", "base_url": pirate_server.url, "context_window": 4096}})
    # Edited again, the form shows what is stored.
    row.get_by_role("button", name="Edit").click()
    expect(section.get_by_role("textbox", name="Output base URL")).to_have_value(pirate_server.url)
    expect(section.get_by_role("textbox", name="Output context window")).to_have_value("4096")
    for size in (WIDE, NARROW):
        page.set_viewport_size(size)
        screenshot(page, "settings-channel-persona")
    page.set_viewport_size(WIDE)

    # Test Chat as #random: the persona's addition and model answer, from the channel's server, within its
    # context window.
    pirate_server.script_for(lambda b: ADDITION in _system(b) and b.get("model") == "pirate-model"
                             and requested_schema(b) is None and not is_archivist_request(b),
                             "Arr, the pirate channel answers", persistent=True)
    page.goto(f"/bots/{bot_id}/chat")
    _pick(page, "Test as channel", "As in #random")
    expect(page.get_by_test_id("chat-channel")).to_have_text("Answers as in #random, with ollama pirate-model · that "
                                                             "channel's persona")
    _ask(page, bot_id, "Who are you in random?")
    expect(page.get_by_test_id("bot-answer").last).to_contain_text("Arr, the pirate channel answers",
                                                                    timeout=LIVE_TIMEOUT_MS)
    asked = _answers(pirate_server, "Who are you in random?")
    assert asked and all(b["model"] == "pirate-model" and b["options"]["num_ctx"] == 4096 for b in asked)
    assert _answers(fake_llm, "Who are you in random?") == []
    assert "You are Polly" in _system(asked[-1]) and ADDITION in _system(asked[-1])
    for size in (WIDE, NARROW):
        page.set_viewport_size(size)
        screenshot(page, "chat-test-as-channel")
    page.set_viewport_size(WIDE)

    # As no channel: the bot's own.
    _pick(page, "Test as channel", "No channel (the bot's own)")
    expect(page.get_by_test_id("chat-model")).to_contain_text("fake-model")
    _ask(page, bot_id, "Who are you without a channel?")
    expect(page.get_by_test_id("bot-answer").last).to_contain_text("Echo:", timeout=LIVE_TIMEOUT_MS)
    own = _answers(fake_llm, "Who are you without a channel?")
    assert own and all(b["model"] == "fake-model" and ADDITION not in _system(b) for b in own)
