"""The Memory tab in a real browser against the real web app and a REAL memory (the
supervisor's link serving its store over Chroma and the MiniLM embedder, run in a thread of the test
process and advertised in the database like a supervisor does)."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.link_client import withdraw
from grobot.core.services import bots, fleet, memories
from tests.memory_helpers import ServiceThread
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.screens import PHONE, WIDE, assert_fits_the_width, sized_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SUPERVISOR_ID = "ui-memory-supervisor"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def add_bot(name: str) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name).id or 0


def open_memory_tab(page, bot_id: int) -> None:
    page.goto(f"/bots/{bot_id}/memory")
    expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)


@pytest.fixture
def memory_worker(ui_env) -> Iterator[ServiceThread]:
    """A live supervisor link serving memory, found by the web app; afterwards no supervisor is left registered
    (the other UI tests expect no worker to run)."""
    service = ServiceThread(SUPERVISOR_ID).start()
    try:
        yield service
    finally:
        with session_scope() as session:
            withdraw(SUPERVISOR_ID, session=session)
            fleet.remove_supervisor(SUPERVISOR_ID, session=session)
        service.stop()


def stored_texts(bot_id: int, user_id: str | None = None) -> list[str]:
    with session_scope(readonly=True) as session:
        return [m.text for m in memories.list_memories(bot_id, session=session, user_id=user_id).items]


def test_without_a_worker_the_tab_says_how_to_start_it(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Forgetful"))
    open_memory_tab(page, bot_id)
    callout = page.get_by_test_id("memory-unavailable")
    expect(callout).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(callout).to_contain_text("The memory service runs in the bot worker: start it with python -m grobot worker")
    tabs = page.get_by_role("navigation", name="Bot sections").get_by_role("link")
    expect(tabs).to_have_text(["Test Chat", "Logs", "Settings", "Schedules", "Files", "Knowledge Base", "Memory", "Conversations",
                                 "Council"])
    # The rest of the page still works: adding says why it cannot, with no trace.
    page.get_by_label("New memory", exact=True).fill("The server room is on floor 3")
    page.get_by_role("button", name="Add memory").click()
    expect(page.get_by_role("alert")).to_have_text(
        "Nothing was added: the bot worker, which keeps the memories, is not running.")
    expect(page.get_by_label("New memory", exact=True)).to_have_value("The server room is on floor 3")
    assert "Traceback" not in page.content()


def test_memory_tab_lists_searches_adds_and_deletes_through_the_real_service(admin_page, memory_worker) -> None:
    page = admin_page
    bot_id = add_bot(unique("Rememberer"))
    with session_scope(readonly=True) as session:
        memories.add_memory(bot_id, "Alice loves green tea", session=session, user_id="42")
        memories.add_memory(bot_id, "The deploy runs every Friday", session=session)
        memories.add_memory(bot_id, "Bob's cat is called Miso", session=session, user_id="7")

    open_memory_tab(page, bot_id)
    count = page.get_by_test_id("memory-count")
    expect(count).to_have_text("3", timeout=PAGE_TIMEOUT_MS)
    items = page.locator("[data-memory]")
    expect(items).to_have_count(3)
    expect(items.first).to_contain_text("Bob's cat is called Miso")  # newest first
    expect(items.first).to_contain_text("fact")
    expect(items.first).to_contain_text("admin")
    expect(page.get_by_test_id("memory-unavailable")).to_have_count(0)

    # Semantic search: the related memory, with its relevance.
    page.get_by_label("Search memories").fill("what does Alice like to drink?")
    page.get_by_role("button", name="Search", exact=True).click()
    results = page.get_by_test_id("search-results")
    expect(results.locator("[data-memory]")).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
    expect(results).to_contain_text("Alice loves green tea")
    expect(results.get_by_test_id("relevance")).to_have_text(re.compile(r"^\d+% relevant$"))
    page.get_by_role("button", name="Clear search").click()
    expect(results).to_have_count(0)

    # Add a memory by hand for user 42; a bad user id is refused in place.
    page.get_by_label("New memory", exact=True).fill("Alice is on holiday until June")
    page.get_by_label("Memory user id").fill("alice")
    page.get_by_role("button", name="Add memory").click()
    expect(page.get_by_role("alert")).to_contain_text("A Discord user id is a number")
    page.get_by_label("Memory user id").fill("42")
    page.get_by_role("button", name="Add memory").click()
    expect(count).to_have_text("4", timeout=PAGE_TIMEOUT_MS)
    expect(items.first).to_contain_text("Alice is on holiday until June")
    expect(page.get_by_label("New memory", exact=True)).to_have_value("")
    assert "Alice is on holiday until June" in stored_texts(bot_id, "42")

    # Filter by user 42, then delete all of their memories (confirmed).
    page.get_by_label("Filter by Discord user id").fill("42")
    page.get_by_role("button", name="Filter", exact=True).click()
    expect(count).to_have_text("2", timeout=PAGE_TIMEOUT_MS)
    expect(items).to_have_count(2)
    page.get_by_role("button", name="Delete all of this user's memories").click()
    dialog = page.get_by_role("alertdialog")
    expect(dialog).to_contain_text("Discord user 42")
    dialog.get_by_role("button", name="Delete all").click()
    expect(page.get_by_text("The bot keeps no memory of this user.")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    assert stored_texts(bot_id, "42") == []

    # Everyone again; delete one memory (Cancel keeps it, confirming deletes it).
    page.get_by_role("button", name="All users").click()
    expect(count).to_have_text("2", timeout=PAGE_TIMEOUT_MS)
    deploy = items.filter(has_text="The deploy runs every Friday")
    deploy.get_by_role("button", name="Delete memory").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("alertdialog")).to_have_count(0)
    deploy.get_by_role("button", name="Delete memory").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete memory").click()
    expect(count).to_have_text("1", timeout=PAGE_TIMEOUT_MS)
    expect(items).to_have_text([re.compile("Bob's cat is called Miso")])
    assert stored_texts(bot_id) == ["Bob's cat is called Miso"]


def test_memory_tab_pages_with_load_more(admin_page, memory_worker) -> None:
    page = admin_page
    bot_id = add_bot(unique("Chatty"))
    with session_scope(readonly=True) as session:
        memories.client(session=session).add(bot_id, [f"Fact number {n} about the weather" for n in range(55)],
                                             {"source": "archivist", "kind": "event", "channel_id": "555"})
    open_memory_tab(page, bot_id)
    expect(page.get_by_test_id("memory-count")).to_have_text("55", timeout=PAGE_TIMEOUT_MS)
    expect(page.locator("[data-memory]")).to_have_count(50)
    expect(page.get_by_text("50 of 55 shown, newest first")).to_be_visible()
    expect(page.locator("[data-memory]").first).to_contain_text("555")
    page.get_by_role("button", name="Load more").click()
    expect(page.locator("[data-memory]")).to_have_count(55, timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_role("button", name="Load more")).to_have_count(0)


def test_searching_memories_fits_a_phone(browser, web_app, ui_admin, memory_worker) -> None:
    bot_id = add_bot(unique("Pocket"))
    with session_scope(readonly=True) as session:
        memories.add_memory(bot_id, "Alice loves green tea", session=session, user_id="42")
    with sized_page(browser, web_app.url, PHONE, ui_admin) as page:
        open_memory_tab(page, bot_id)
        expect(page.get_by_test_id("memory-count")).to_have_text("1", timeout=PAGE_TIMEOUT_MS)
        expect(page.get_by_role("button", name="Search", exact=True)).to_be_in_viewport()
        assert_fits_the_width(page, "the Memory tab")
        page.get_by_label("Search memories").fill("what does Alice like to drink?")
        page.get_by_role("button", name="Search", exact=True).click()
        expect(page.get_by_test_id("search-results").locator("[data-memory]")).to_have_count(
            1, timeout=PAGE_TIMEOUT_MS)
        clear = page.get_by_role("button", name="Clear search")
        expect(clear).to_be_in_viewport()
        search, clear_box = page.get_by_role("button", name="Search", exact=True).bounding_box(), clear.bounding_box()
        assert search and clear_box
        assert (clear_box["x"] >= search["x"] + search["width"] or clear_box["y"] >= search["y"] + search["height"]), \
            f"Clear search {clear_box} overlaps Search {search}"
        assert_fits_the_width(page, "the Memory tab after a search")


# The width the input's placeholder needs (drawn in the input's font) and the width the input gives it.
PLACEHOLDER_ROOM = """input => {
    const style = getComputedStyle(input);
    const context = document.createElement('canvas').getContext('2d');
    context.font = style.font;
    const spacing = parseFloat(style.letterSpacing) || 0;
    return {needed: context.measureText(input.placeholder).width + spacing * input.placeholder.length,
            room: input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)};
}"""


@pytest.mark.parametrize("viewport", [PHONE, WIDE], ids=["phone", "wide"])
def test_the_add_memory_form_reads_in_full(browser, web_app, ui_admin, viewport) -> None:
    bot_id = add_bot(unique("Noted"))  # no worker needed: the form shows without it
    with sized_page(browser, web_app.url, viewport, ui_admin) as page:
        open_memory_tab(page, bot_id)
        user_id = page.get_by_label("Memory user id")
        add = page.get_by_role("button", name="Add memory")
        user_id.scroll_into_view_if_needed(timeout=PAGE_TIMEOUT_MS)
        expect(user_id).to_have_attribute("placeholder", "Discord user id (optional)")
        fit = user_id.evaluate(PLACEHOLDER_ROOM)
        assert fit["needed"] <= fit["room"], \
            f"the placeholder needs {fit['needed']:.0f} px, the box shows {fit['room']:.0f} px of it"
        expect(add).to_be_in_viewport(ratio=1)
        assert_fits_the_width(page, "the Memory tab's add form")
        box, button = user_id.bounding_box(), add.bounding_box()
        assert box and button
        if viewport == PHONE:  # the box takes the form's width, the button goes under it
            text = page.get_by_label("New memory", exact=True).bounding_box()
            assert text and abs(box["width"] - text["width"]) <= 4, f"user id box {box}, memory box {text}"
            assert button["y"] >= box["y"] + box["height"], f"Add memory {button} is not under the box {box}"
        else:  # the desktop look: a 16rem box with the button on its line, at the right
            assert abs(box["width"] - 256) <= 4, f"the user id box is {box['width']} px wide, not 16rem"
            middle = box["y"] + box["height"] / 2
            assert button["y"] <= middle <= button["y"] + button["height"], f"Add memory {button}, box {box}"
            assert button["x"] > box["x"] + box["width"] + 200, f"Add memory {button} is not at the right"
