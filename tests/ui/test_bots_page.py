"""The Bots page, in a real browser against the real web app: what an admin sees.

One web app (``reflex run --env prod``) serves the whole ``tests/ui`` package; the tests
share its database, so each test sets up the bots it looks at. Each test signs in as an
admin first (``admin_page``): without a session the app shows only the login page.
"""

from __future__ import annotations

import logging
import re
import uuid
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import BotStatus, Supervisor, utcnow
from grobot.core.services import bots
from tests.helpers import make_token
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import fresh_heartbeat
from tests.ui.screens import WIDE, sized_page

logger = logging.getLogger(__name__)

# The first start on a fresh machine installs the frontend packages and builds them.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

LIVE_TIMEOUT_MS = 15_000  # the page refreshes every 2 s


def delete_all_bots() -> None:
    with session_scope() as session:
        for summary in bots.list_bots(session=session):
            bots.delete_bot(bots.get_bot(summary.id, session=session), session=session)


def add_bot(name: str, *, token: str | None = None, enabled: bool = True) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name, token=token, enabled=enabled).id


def set_status(bot_id: int, **fields: object) -> None:
    with session_scope() as session:
        status = session.get(BotStatus, bot_id)
        for key, value in fields.items():
            setattr(status, key, value)
        status.updated_at = utcnow()
        session.add(status)


def bot_row(page, name: str):
    """The table row of the bot called ``name``."""
    return page.get_by_role("table").get_by_role("row").filter(
        has=page.get_by_role("rowheader").get_by_text(name, exact=True)
    )


def guilds_cell(row):
    """The "Guilds" cell of a row (after Status and Discord account)."""
    return row.get_by_role("cell").nth(2)


def test_without_bots_the_page_says_how_to_add_one(admin_page, ui_env) -> None:
    page = admin_page
    delete_all_bots()
    page.goto("/")
    expect(page.get_by_role("heading", name="Bots", exact=True)).to_be_visible(timeout=30_000)
    expect(page.get_by_role("heading", name="No bots yet")).to_be_visible()
    expect(page.get_by_text("python -m grobot bot add --name NAME --token-stdin")).to_be_visible()
    expect(page.get_by_role("button", name="Add bot")).to_be_visible()
    expect(page).to_have_title("Bots · GroBot")


def test_the_page_lists_the_bots_with_their_live_status(admin_page, ui_env) -> None:
    page = admin_page
    delete_all_bots()
    token = make_token(112233445566778899)
    alpha = add_bot("Alpha", token=token)
    add_bot("Beta")
    add_bot("Gamma", enabled=False)
    delta = add_bot("Delta", token=make_token(998877665544332211))
    set_status(alpha, state="online", detail="connected", discord_user_name="alpha-bot", guild_count=3, heartbeat_at=fresh_heartbeat())
    set_status(delta, state="error", detail="Discord refused the token (401 Unauthorized)")

    page.goto("/")
    table = page.get_by_role("table")
    expect(table).to_be_visible(timeout=30_000)
    expect(page.get_by_text("4 bots · 1 online")).to_be_visible()

    alpha_row = bot_row(page, "Alpha")
    expect(alpha_row).to_contain_text("Online")
    expect(alpha_row).to_contain_text("connected")
    expect(alpha_row).to_contain_text("alpha-bot")
    expect(guilds_cell(alpha_row)).to_have_text("3")
    expect(alpha_row).to_contain_text("Enabled")
    expect(bot_row(page, "Beta")).to_contain_text("Stopped")
    expect(bot_row(page, "Beta")).to_contain_text("no Discord token set")
    expect(bot_row(page, "Gamma")).to_contain_text("Stopped")
    expect(bot_row(page, "Gamma")).to_contain_text("Disabled")
    expect(bot_row(page, "Delta")).to_contain_text("Error")
    expect(bot_row(page, "Delta")).to_contain_text("Discord refused the token (401 Unauthorized)")
    # Sorted by name, as the service lists them.
    expect(table.get_by_role("rowheader")).to_contain_text(["Alpha", "Beta", "Delta", "Gamma"])

    # The bot process reports a new state: the open page shows it without a reload.
    set_status(delta, state="starting", detail="connecting to the gateway", heartbeat_at=fresh_heartbeat())
    set_status(alpha, state="offline", detail="gateway connection lost")
    expect(bot_row(page, "Delta")).to_contain_text("Starting", timeout=LIVE_TIMEOUT_MS)
    expect(bot_row(page, "Delta")).to_contain_text("connecting to the gateway")
    expect(bot_row(page, "Alpha")).to_contain_text("Offline")
    expect(bot_row(page, "Alpha")).not_to_contain_text("Online")

    set_status(delta, state="online", detail="connected", discord_user_name="delta-bot", guild_count=12,
               heartbeat_at=fresh_heartbeat())
    expect(bot_row(page, "Delta")).to_contain_text("Online", timeout=LIVE_TIMEOUT_MS)
    expect(bot_row(page, "Delta")).to_contain_text("delta-bot")
    expect(guilds_cell(bot_row(page, "Delta"))).to_have_text("12")
    expect(page.get_by_text("4 bots · 1 online")).to_be_visible()

    # A bot added from the command line appears too.
    add_bot("Epsilon")
    expect(bot_row(page, "Epsilon")).to_contain_text("Stopped", timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_text("5 bots · 1 online")).to_be_visible()

    # Tokens never reach the browser: not in the page, not in any state update.
    assert token not in page.content()
    frames = page.grobot_record.frames
    assert any("Epsilon" in frame for frame in frames), "the state updates were not recorded"
    assert not any(token in frame for frame in frames)
    assert not any("discord_token" in frame for frame in frames)


def test_admin_adds_a_bot_from_the_web_app(admin_page, ui_env) -> None:
    page = admin_page
    existing = f"Existing-{uuid.uuid4().hex[:6]}"
    add_bot(existing)
    name = f"Added-{uuid.uuid4().hex[:6]}"
    token = make_token(334455667788990011)
    page.goto("/")
    page.get_by_role("button", name="Add bot").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("heading", name="Add a bot")).to_be_visible(timeout=PAGE_TIMEOUT_MS)

    # Errors stay in the dialog, next to their field, with what was typed.
    dialog.get_by_label("Name").fill(existing)
    dialog.get_by_label("Discord token").fill("not-a-token")
    dialog.get_by_label("Personality").fill("A cheerful helper")
    dialog.get_by_role("button", name="Add bot").click()
    expect(dialog.locator('[data-field-error="new-bot-token"]')).to_contain_text(
        "does not look like a Discord bot token")
    expect(dialog.locator('[data-field-error="new-bot-name"]')).to_contain_text("already exists")  # both at once
    dialog.get_by_label("Discord token").fill(token)
    dialog.get_by_role("button", name="Add bot").click()
    expect(dialog.locator('[data-field-error="new-bot-name"]')).to_contain_text("already exists")
    expect(dialog.locator('[data-field-error="new-bot-token"]')).to_have_count(0)
    expect(dialog.get_by_label("Personality")).to_have_value("A cheerful helper")

    dialog.get_by_label("Name").fill(name)
    dialog.get_by_role("button", name="Add bot").click()
    expect(page).to_have_url(re.compile(r"/bots/\d+/settings$"), timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_test_id("token-state")).to_have_text("set", timeout=PAGE_TIMEOUT_MS)
    bot_id = int(page.url.rstrip("/").split("/")[-2])
    sidebar = page.get_by_role("navigation", name="Main navigation")
    expect(sidebar.locator(f'[data-bot-id="{bot_id}"]')).to_contain_text(name, timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        bot = bots.get_bot(bot_id, session=session)
        assert bot.personality == "A cheerful helper" and bot.enabled is True
        assert bots.get_token(bot) == token
    html = page.content()
    assert token not in html and not any(token in frame for frame in page.grobot_record.frames)


@pytest.fixture
def running_worker(ui_env):
    """A bot worker's supervisor with a fresh heartbeat (dated a few minutes ahead, so that a slow
    machine cannot let it go stale during the test); removed afterwards."""
    supervisor_id = f"sup-{uuid.uuid4().hex[:6]}"

    def start() -> None:
        with session_scope() as session:
            session.add(Supervisor(id=supervisor_id, hostname="test", pid=1, heartbeat_at=utcnow() + timedelta(minutes=5)))

    yield start
    with session_scope() as session:
        row = session.get(Supervisor, supervisor_id)
        if row is not None:
            session.delete(row)


def test_a_bot_silent_for_hours_is_offline_and_the_page_says_no_worker_runs(admin_page, running_worker) -> None:
    """A worker killed with its bots "online" left their rows so: the page says offline, and why."""
    page = admin_page
    delete_all_bots()
    name = f"Silent-{uuid.uuid4().hex[:6]}"
    silent = add_bot(name, token=make_token(445566778899001122))
    three_hours_ago = utcnow() - timedelta(hours=3)
    set_status(silent, state="online", detail="", discord_user_name="silent-bot", guild_count=12,
               heartbeat_at=three_hours_ago)

    page.goto("/")
    row = bot_row(page, name)
    expect(row).to_contain_text("Offline", timeout=30_000)
    expect(row).not_to_contain_text("Online")
    # The time alone when it was today (UTC), else with its date (three hours before 01:00 was yesterday).
    shown = three_hours_ago.strftime("%H:%M UTC" if three_hours_ago.date() == utcnow().date() else "%Y-%m-%d %H:%M UTC")
    expect(row).to_contain_text(f"no heartbeat since {shown}")
    expect(row).to_contain_text("is the bot worker running?")
    expect(guilds_cell(row)).to_have_text("—")
    expect(row.locator('[data-status]').first).to_have_attribute("data-status", "offline")
    expect(page.get_by_text("1 bot · 0 online", exact=True)).to_be_visible()
    expect(page.locator('[data-status="online"]')).to_have_count(0)  # no green badge, no green dot
    sidebar = page.get_by_role("navigation", name="Main navigation")
    expect(sidebar.locator(f'[data-bot-id="{silent}"] [data-status]')).to_have_attribute("data-status", "offline")
    banner = page.get_by_role("alert").filter(has_text="No bot worker is running")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("make run")
    expect(banner).to_contain_text("python -m grobot worker")

    # The bot's own header says the same, above its Test Chat.
    page.goto(f"/bots/{silent}/chat")
    header = page.get_by_test_id("bot-status")
    expect(header).to_contain_text("Offline", timeout=PAGE_TIMEOUT_MS)
    expect(header).to_contain_text("is the bot worker running?")
    expect(header).to_contain_text("silent-bot")
    expect(header).not_to_contain_text("12 guilds")

    # A worker starts: the banner goes, without a reload.
    running_worker()
    page.goto("/")
    expect(bot_row(page, name)).to_be_visible(timeout=30_000)
    expect(page.get_by_role("alert").filter(has_text="No bot worker is running")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    # Its bot beats again: online, with its guilds.
    set_status(silent, state="online", heartbeat_at=fresh_heartbeat())
    expect(bot_row(page, name)).to_contain_text("Online", timeout=LIVE_TIMEOUT_MS)
    expect(guilds_cell(bot_row(page, name))).to_have_text("12")


def test_the_open_bot_is_scrolled_into_the_sidebar_and_a_long_name_ends_in_an_ellipsis(browser, web_app,
                                                                                        ui_admin) -> None:
    delete_all_bots()
    long_name = "support_bot_for_the_customer_service_team_eu_west_1"  # no spaces to break at
    ids = [add_bot(f"Bot {i:02d}") for i in range(1, 36)]
    long_id = add_bot(long_name)
    with sized_page(browser, web_app.url, WIDE, ui_admin) as page:
        page.goto(f"/bots/{ids[30]}/chat")  # "Bot 31": far below the fold of a 900 px high window
        expect(page.get_by_role("heading", name="Bot 31", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        nav = page.get_by_role("navigation", name="Main navigation")
        link = nav.locator(f'a[data-bot-id="{ids[30]}"]')
        expect(link).to_have_attribute("aria-current", "page")
        # Within the bot list's visible box (the list scrolled to it; no sleep: a deadline).
        page.wait_for_function(
            """(id) => {
                const link = document.querySelector(`[data-sidebar] a[data-bot-id="${id}"]`);
                const list = link && link.closest('[data-bot-list]');
                if (!list) return false;
                const box = list.getBoundingClientRect(), row = link.getBoundingClientRect();
                return row.top >= box.top - 1 && row.bottom <= box.bottom + 1;
            }""",
            arg=ids[30],
            timeout=PAGE_TIMEOUT_MS,
        )

        long_link = nav.locator(f'a[data-bot-id="{long_id}"]')
        expect(long_link).to_have_attribute("title", long_name)
        text = long_link.get_by_text(long_name, exact=True)
        cut = text.evaluate(
            """(el) => {
                const style = getComputedStyle(el), link = el.closest('a').getBoundingClientRect();
                return {overflow: style.textOverflow, cut: el.scrollWidth > el.clientWidth,
                        inside: el.getBoundingClientRect().right <= link.right + 0.5};
            }"""
        )
        assert cut == {"overflow": "ellipsis", "cut": True, "inside": True}, cut
    delete_all_bots()
