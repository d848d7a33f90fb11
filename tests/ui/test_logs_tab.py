"""A bot's Logs tab in a real browser (issue 14 item 4): filters that belong to one bot, times in the
browser's time zone, a date range in that zone, pages, a download of the filtered entries, and the
budget alert banner (issue 15 item 3)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import LogEntry
from grobot.core.services import usage_accounting
from tests.ui.auth import PAGE_TIMEOUT_MS, sign_in
from tests.ui.chat import add_bot, unique
from tests.ui.screens import PHONE, assert_fits_the_width, sized_page
from tests.ui.webapp import WebApp

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

ZONE = "Asia/Kolkata"  # UTC+05:30 all year: a day there is not the UTC day


def open_logs(page, bot_id: int) -> None:
    page.goto(f"/bots/{bot_id}/logs")
    expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)


def add_logs(bot_id: int, entries: list[tuple[datetime, str, str]]) -> None:
    with session_scope() as session:
        for created_at, level, message in entries:
            session.add(LogEntry(bot_id=bot_id, created_at=created_at, level=level, logger="bot_worker.bot_process",
                                 message=message))


def test_the_search_of_one_bot_does_not_carry_over_to_the_next(admin_page) -> None:
    page = admin_page
    now = datetime.now(UTC)
    first, second = add_bot(unique("LogsA")), add_bot(unique("LogsB"))
    add_logs(first, [(now, "INFO", "gateway connected"), (now, "ERROR", "gateway lost")])
    add_logs(second, [(now, "INFO", "ready"), (now, "WARNING", "slow answer"), (now, "INFO", "answered")])
    open_logs(page, first)
    rows = page.get_by_role("table").locator("tbody tr")
    expect(rows).to_have_count(2, timeout=PAGE_TIMEOUT_MS)
    page.get_by_role("textbox", name="Search").fill("lost")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(rows).to_have_count(1)

    open_logs(page, second)
    expect(rows).to_have_count(3, timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_role("textbox", name="Search")).to_have_value("")
    expect(page.get_by_role("button", name="Clear filters")).to_have_count(0)


def test_times_in_the_browsers_zone_date_range_pages_and_download(browser, web_app: WebApp, ui_admin,
                                                                 tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=web_app.url, timezone_id=ZONE,
                                  accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    try:
        sign_in(page, ui_admin)
        bot_id = add_bot(unique("Zoned"))
        # 20 entries at 18:45 UTC on 10 January: 11 January after midnight in Kolkata; 230 entries now.
        late = datetime(2026, 1, 10, 18, 45, tzinfo=UTC)
        now = datetime.now(UTC).replace(microsecond=0)
        add_logs(bot_id, [(late + timedelta(seconds=i), "INFO", f"late night {i}") for i in range(20)]
                 + [(now - timedelta(seconds=230 - i), "INFO", f"today {i}") for i in range(230)])
        open_logs(page, bot_id)
        rows = page.get_by_role("table").locator("tbody tr")
        expect(rows).to_have_count(100, timeout=PAGE_TIMEOUT_MS)
        # (Chromium names the zone by its older alias, Asia/Calcutta.)
        expect(page.get_by_role("columnheader", name=re.compile(r"^Time \(Asia.(Kolkata|Calcutta)\)$"))).to_be_visible()
        local_now = (now - timedelta(seconds=1)).astimezone(timezone(timedelta(hours=5, minutes=30)))
        expect(rows.first.get_by_test_id("log-time")).to_have_text(local_now.strftime("%Y-%m-%d %H:%M:%S +05:30"))
        expect(rows.first).to_contain_text("today 229")

        # Pages of 100, newest first.
        pager = page.get_by_test_id("logs-page")
        expect(pager).to_have_text("Entries 1-100, newest first")
        expect(page.get_by_role("button", name="Newer")).to_be_disabled()
        page.get_by_role("button", name="Older").click()
        expect(pager).to_have_text("Entries 101-200, newest first")
        page.get_by_role("button", name="Older").click()
        expect(pager).to_have_text("Entries 201-250, newest first")
        expect(rows).to_have_count(50)
        expect(rows.last).to_contain_text("late night 0")
        expect(page.get_by_role("button", name="Older")).to_be_disabled()
        page.get_by_role("button", name="Newer").click()
        expect(pager).to_have_text("Entries 101-200, newest first")

        # A day in the browser's zone: 11 January there holds the 20 late entries (10 January in UTC).
        page.get_by_label("From date").fill("2026-01-11")
        page.get_by_label("To date").fill("2026-01-11")
        expect(rows).to_have_count(20)
        expect(pager).to_have_text("Entries 1-20, newest first")
        expect(rows.first.get_by_test_id("log-time")).to_have_text("2026-01-11 00:15:19 +05:30")
        page.get_by_label("From date").fill("2026-01-10")
        page.get_by_label("To date").fill("2026-01-10")
        expect(page.get_by_text("No entries match")).to_be_visible()
        page.get_by_label("To date").fill("2026-01-11")
        expect(rows).to_have_count(20)

        # The download holds the filtered entries (every page), with the zone's times.
        page.get_by_role("button", name="Download").click()
        with page.expect_download() as info:
            page.get_by_role("menuitem", name="CSV").click()
        download = info.value
        assert download.suggested_filename == f"bot-{bot_id}-logs.csv"
        target = tmp_path / "logs.csv"
        download.save_as(target)
        lines = target.read_text().splitlines()
        assert lines[0] == "time,level,logger,message" and len(lines) == 21
        assert lines[1] == "2026-01-11T00:15:19.000+05:30,INFO,bot_worker.bot_process,late night 19"
        page.set_viewport_size({"width": 420, "height": 900})
        assert errors == [], errors
    finally:
        context.close()


def test_a_budget_at_80_percent_shows_a_banner_on_the_logs_tab(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Budgeted"), monthly_call_limit=100)
    open_logs(page, bot_id)
    expect(page.get_by_text("No log entries yet")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_test_id("budget-alert")).to_have_count(0)
    with session_scope() as session:
        usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=85, tokens_in=1, tokens_out=1, errors=0)
    page.reload()
    banner = page.get_by_test_id("budget-alert")
    expect(banner).to_contain_text(re.compile(r"85 % of the monthly LLM calls budget used \(85 of 100, \d{4}-\d{2}\)"),
                                   timeout=PAGE_TIMEOUT_MS)


def test_on_a_phone_the_message_gets_the_line_and_time_and_level_go_above_it(browser, web_app: WebApp,
                                                                           ui_admin) -> None:
    bot_id = add_bot(unique("Pocket"))
    message = "Connected to gateway shard 2 after a reconnect, resuming the session where it stopped"
    add_logs(bot_id, [(datetime(2026, 1, 10, 18, 45, tzinfo=UTC), "WARNING", message)])
    with sized_page(browser, web_app.url, PHONE, ui_admin, timezone_id="UTC") as page:
        open_logs(page, bot_id)
        row = page.get_by_role("table").locator("tbody tr").first
        expect(row).to_contain_text(message, timeout=PAGE_TIMEOUT_MS)
        text_box = row.get_by_text(message).bounding_box()
        assert text_box and text_box["width"] >= 250, f"the message gets {text_box} on a phone"
        when = row.get_by_test_id("log-when")
        expect(when).to_have_text("WARNING2026-01-10 18:45:00")
        when_box = when.bounding_box()
        assert when_box and when_box["y"] + when_box["height"] <= text_box["y"], "time and level are not above"
        assert_fits_the_width(page, "the Logs tab")
