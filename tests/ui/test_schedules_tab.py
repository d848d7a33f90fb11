"""The Schedules tab of a bot, in a real browser: an admin adds a schedule (its next run shown in its own
time zone), a cron that cannot be read is refused in plain words, edits, pauses, asks "Run now", tries a
prompt in Test Chat (sent there, nothing posted) and deletes it.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import BotSchedule, Conversation, Message
from grobot.core.services import conversations, schedules
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, unique
from tests.ui.screens import NARROW, WIDE, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CHANNEL = "123456789012345678"


def _stored(bot_id: int) -> list[BotSchedule]:
    with session_scope(readonly=True) as session:
        rows = schedules.list_schedules(bot_id, session=session)
        for row in rows:
            session.expunge(row)
        return rows


def test_an_admin_schedules_posts_on_the_schedules_tab(admin_page) -> None:
    page = admin_page
    bot_id = add_bot(unique("Herald"))
    with session_scope() as session:  # a channel the bot has talked in: shown by its name
        conversations.get_or_create_conversation(session=session, bot_id=bot_id, key=f"guild:{CHANNEL}",
                                                 title="#general", channel_id=CHANNEL)
    page.goto(f"/bots/{bot_id}/schedules")
    expect(page.get_by_text("No schedules yet")).to_be_visible(timeout=PAGE_TIMEOUT_MS)

    page.get_by_role("button", name="Add schedule").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Name").fill("Weekly summary")
    dialog.get_by_label("Channel id").fill(CHANNEL)
    dialog.get_by_label("What the bot posts").select_option("prompt")
    dialog.get_by_label("Text or prompt").fill("Summarise this week's open questions.")
    dialog.get_by_label("Cron").fill("every monday")
    dialog.get_by_label("Time zone").fill("Europe/Paris")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog.get_by_role("alert")).to_contain_text("is not a cron of five fields", timeout=PAGE_TIMEOUT_MS)
    screenshot(page, "schedules-dialog")
    assert _stored(bot_id) == []

    dialog.get_by_label("Cron").fill("0 9 * * mon")
    dialog.get_by_role("button", name="Save").click()
    card = page.get_by_test_id("schedule")
    expect(card).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
    expect(card).to_contain_text("Weekly summary")
    expect(card).to_contain_text("cron 0 9 * * mon, Europe/Paris · #general")
    # The next run in the schedule's zone: a Monday at 09:00 Paris time.
    expect(card.get_by_test_id("schedule-next-run")).to_have_text(re.compile(r"Next run: \S+ 09:00:00 CES?T"))
    [row] = _stored(bot_id)
    assert (row.kind, row.channel_id, row.timezone, row.enabled) == ("prompt", CHANNEL, "Europe/Paris", True)
    for size in (WIDE, NARROW):
        page.set_viewport_size(size)
        screenshot(page, "schedules")
    page.set_viewport_size(WIDE)

    # Edited to an interval; paused; "Run now" asked of the worker.
    card.get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_label("Name")).to_have_value("Weekly summary")
    dialog.get_by_label("Repeat").select_option("interval")
    dialog.get_by_label("Every (seconds)").fill("7200")
    dialog.get_by_role("button", name="Save").click()
    expect(card).to_contain_text("every 2 hours, Europe/Paris", timeout=PAGE_TIMEOUT_MS)
    card.get_by_role("button", name="Pause").click()
    expect(card.get_by_text("paused", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    expect(card.get_by_test_id("schedule-next-run")).to_have_text("Next run: —")
    card.get_by_role("button", name="Run now").click()
    expect(page.get_by_text("The bot posts it within a second or two")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    [row] = _stored(bot_id)
    assert (row.interval_seconds, row.cron, row.enabled, row.run_requested) == (7200, "", False, True)
    screenshot(page, "schedules-paused")

    # Tried in Test Chat: the prompt is sent there (the bot answers it there), nothing is posted.
    card.get_by_role("button", name="Try in Test Chat").click()
    expect(page).to_have_url(re.compile(rf"/bots/{bot_id}/chat$"), timeout=PAGE_TIMEOUT_MS)
    expect(page.get_by_text("Summarise this week's open questions.")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        sent = session.exec(select(Message.content, Message.as_channel_id).join(Conversation)
                            .where(Conversation.bot_id == bot_id)).all()
    assert [tuple(m) for m in sent] == [("Summarise this week's open questions.", CHANNEL)]  # as in its channel

    page.goto(f"/bots/{bot_id}/schedules")
    card = page.get_by_test_id("schedule")
    card.get_by_role("button", name="Delete").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_text("No schedules yet")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    assert _stored(bot_id) == []
