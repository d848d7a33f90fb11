"""Images out and in, end to end: an image-generation MCP server (a real one over stdio, returning a
PNG) used by a bot through a real bot worker; the PNG reaches the fake Discord as an attachment of
the bot's reply, and Test Chat in a real browser shows it under the answer, loaded from the web app
itself. A model marked "Reads images" gets the image a tester attaches in Test Chat; for one that is
not, Test Chat says so plainly."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect
from sqlmodel import update

from grobot.core import tester_chat_link
from grobot.core.db import session_scope
from grobot.core.models import Bot
from grobot.core.services import bots
from tests.fakes.discord import FakeDiscord
from tests.fakes.llm import FakeLLM, Reply, use_fake_llm
from tests.fakes.mcp_servers import png
from tests.helpers import wait_for
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import start_worker, stdio_server, stop_worker, unique
from tests.ui.screens import NARROW, WIDE, assert_fits_the_width, sized_page

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

LIVE_TIMEOUT_MS = 60_000
DRAW = "Draw an image of a cat"


@pytest.fixture(scope="module")
def world(ui_env, tmp_path_factory) -> Iterator[tuple[FakeDiscord, FakeLLM]]:
    """The fake Discord, the fake LLM and one real worker for the module (only this module's bots enabled)."""
    discord = FakeDiscord().start()
    llm = FakeLLM().start()
    with session_scope() as session:
        session.execute(update(Bot).values(enabled=False))
    proc = start_worker(ui_env, tmp_path_factory.mktemp("worker") / "worker.log", **discord.env())

    def ready() -> bool:
        with session_scope(readonly=True) as session:
            return bool(tester_chat_link.live_runners(session=session))

    try:
        wait_for(ready, timeout=90, interval=0.1, message="the worker's Test Chat service")
        yield discord, llm
    finally:
        stop_worker(proc)
        discord.stop()
        llm.stop()


def painter(discord: FakeDiscord, llm: FakeLLM) -> tuple[int, int]:
    """A bot on the fake Discord with the image server's draw_image; the tools model picks it for DRAW."""
    token, discord_id = discord.new_bot_token(unique("painter"))
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name=unique("Painter"), token=token, user_cooldown_seconds=0).id or 0
    use_fake_llm(llm, bot_id=bot_id)
    tool = f"{stdio_server(bot_id, 'images', 'painter', '--tools', 'draw_image')}__draw_image"
    choice = Reply(json={"reason": "a picture", "tools": [{"name": tool, "arguments": {"prompt": "a cat"}}]})

    def schema(body: dict) -> str:
        return json.dumps(body.get("format") or body.get("response_format") or {})

    # The Tool Identifier (asked when the Router is unsure), and the Parameter Extractor (when it is sure).
    llm.script_for(lambda body: tool in schema(body), choice, persistent=True)
    llm.script_for(lambda body: '"missing"' in schema(body) and '"prompt"' in schema(body),
                   Reply(json={"arguments": {"prompt": "a cat"}}), persistent=True)
    return bot_id, discord_id


def test_a_png_from_an_mcp_tool_reaches_discord_and_test_chat(world, browser, web_app, ui_admin) -> None:
    discord, llm = world
    bot_id, discord_id = painter(discord, llm)

    # Discord: the bot's reply comes with the PNG as an attachment.
    wait_for(lambda: discord.session_of(discord_id), timeout=90, message="the painter bot online on the fake Discord")
    asked = discord.send_message(discord.channel_id, f"<@{discord_id}> {DRAW}", mentions=[discord_id])

    def with_image() -> dict | None:
        return next((m for m in discord.replies_to(asked["id"]) if m.get("attachments")), None)

    reply = wait_for(with_image, timeout=90, message="a reply with the image")
    attachment = reply["attachments"][0]
    assert attachment["filename"] == "image.png" and attachment["content_type"] == "image/png"
    assert discord.attachments[attachment["id"]][0] == png()

    # Test Chat: the same image under the answer, served by the web app itself.
    for viewport in (WIDE, NARROW):
        with sized_page(browser, web_app.url, viewport, ui_admin) as page:
            page.goto(f"/bots/{bot_id}/chat")
            expect(page.get_by_role("textbox", name="Message")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
            page.get_by_role("textbox", name="Message").fill(DRAW)
            page.get_by_role("button", name="Send").click()
            image = page.get_by_test_id("bot-answer").last.get_by_test_id("answer-image")
            expect(image).to_be_visible(timeout=LIVE_TIMEOUT_MS)
            assert image.get_attribute("src").startswith("/_grobot/images/")
            page.wait_for_function("(img) => img.complete && img.naturalWidth === 64 && img.naturalHeight === 48",
                                   arg=image.element_handle(), timeout=LIVE_TIMEOUT_MS)
            assert_fits_the_width(page, f"Test Chat with an image at {viewport['width']} px")
            page.screenshot(path=str(web_app.log_path.parent / f"chat-image-{viewport['width']}.png"))
            assert not page.grobot_errors, page.grobot_errors
            # Another user's browser (no session cookie) gets nothing at that address.
            src = image.get_attribute("src")
            assert page.request.get(src).body() == png()
            assert browser.new_context(base_url=web_app.url).request.get(src).status == 404


def test_an_image_goes_to_a_model_that_reads_images_and_is_refused_plainly_otherwise(world, admin_page) -> None:
    discord, llm = world
    page = admin_page
    with session_scope() as session:
        reader = bots.create_bot(session=session, name=unique("Reader"), user_cooldown_seconds=0).id or 0
        blind = bots.create_bot(session=session, name=unique("Blind"), user_cooldown_seconds=0).id or 0
    use_fake_llm(llm, bot_id=reader, supports_images=True)
    use_fake_llm(llm, bot_id=blind)
    photo = png(32, 32, (200, 30, 30))
    llm.script_for(lambda body: any(base64.b64encode(photo).decode() in json.dumps(m) for m in body.get("messages", [])),
                   Reply(text="A red square."), persistent=True)

    page.goto(f"/bots/{blind}/chat")
    page.get_by_role("button", name="Attach an image").click(timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_test_id("image-refused")).to_have_text(
        'This bot\'s model does not read images: an admin can mark a model that does with "Reads images" in the '
        "bot's LLM settings.")

    page.goto(f"/bots/{reader}/chat")
    expect(page.get_by_role("textbox", name="Message")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    page.locator("input[type=file]").set_input_files(
        [{"name": "red.png", "mimeType": "image/png", "buffer": photo}])
    expect(page.get_by_test_id("attached-image")).to_contain_text("red.png", timeout=PAGE_TIMEOUT_MS)
    page.get_by_role("textbox", name="Message").fill("What colour is this?")
    page.get_by_role("button", name="Send").click()

    expect(page.get_by_test_id("bot-answer").last).to_contain_text("A red square.", timeout=LIVE_TIMEOUT_MS)
    sent = page.get_by_test_id("user-message").last.get_by_test_id("sent-image")
    expect(sent).to_be_visible()
    page.wait_for_function("(img) => img.complete && img.naturalWidth === 32", arg=sent.element_handle(),
                           timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_test_id("attached-image")).to_have_count(0)
    # A file that is not an image is refused in plain words, and nothing is kept for the next message.
    page.locator("input[type=file]").set_input_files(
        [{"name": "notes.png", "mimeType": "image/png", "buffer": b"just some text"}])
    expect(page.get_by_test_id("image-refused")).to_have_text(
        "notes.png cannot be sent: it is not a PNG, JPEG, GIF or WebP image.", timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_test_id("attached-image")).to_have_count(0)
