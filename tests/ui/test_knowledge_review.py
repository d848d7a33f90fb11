"""The Knowledge Base in a real browser: everyone who talked is listed, suggested notes are
accepted (also edited) or dismissed, the approval switch is saved, a note is edited."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.services import bots, conversations, user_notes
from tests.ui.auth import PAGE_TIMEOUT_MS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

LIVE_TIMEOUT_MS = 15_000


def test_admin_reviews_suggested_notes_and_edits_a_note(admin_page) -> None:
    page = admin_page
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name=f"Reviewer-{uuid.uuid4().hex[:6]}", notes_need_approval=True).id
        conv = conversations.get_or_create_conversation(session=session, bot_id=bot_id, key="guild:700", title="#general")
        conversations.insert_user_message(session=session, conversation_id=conv.id, content="hi bot", author_id="5151",
                                          author_name="quiet-quinn")
        ids = {}
        for text in ("Quinn lives in Porto", "Quinn is a nurse", "Quinn hates cats"):
            ids[text] = user_notes.add_note(session=session, bot_id=bot_id, discord_user_id="5151", note=text,
                                            reliability=0.9, source="archivist", status=user_notes.SUGGESTED).id

    page.goto(f"/bots/{bot_id}/knowledge")
    expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    quinn = page.locator('[data-user="5151"]')  # only wrote to the bot: no profile, no note yet
    expect(quinn).to_contain_text("quiet-quinn", timeout=LIVE_TIMEOUT_MS)
    expect(quinn).to_contain_text("1 message")
    expect(quinn).to_contain_text("3 suggested")
    switch = page.get_by_role("switch", name="Notes wait for approval")
    expect(switch).to_be_checked()

    page.locator(f'[data-suggestion="{ids["Quinn lives in Porto"]}"]').get_by_role("button", name="Accept note", exact=True).click()
    expect(page.locator(f'[data-suggestion="{ids["Quinn lives in Porto"]}"]')).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    nurse = page.locator(f'[data-suggestion="{ids["Quinn is a nurse"]}"]')
    nurse.get_by_role("button", name="Edit and accept note").click()
    nurse.get_by_role("textbox", name="Edit note").fill("Quinn is a night-shift nurse")
    nurse.get_by_role("button", name="Accept edited").click()
    expect(nurse).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    page.locator(f'[data-suggestion="{ids["Quinn hates cats"]}"]').get_by_role("button", name="Dismiss note").click()
    expect(page.locator("[data-suggestion]")).to_have_count(0, timeout=LIVE_TIMEOUT_MS)

    quinn.click()
    expect(page.locator("[data-note]")).to_have_count(2, timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_text("Quinn is a night-shift nurse")).to_be_visible()
    porto = page.locator(f'[data-note="{ids["Quinn lives in Porto"]}"]')
    porto.get_by_role("button", name="Edit note", exact=True).click()
    porto.get_by_role("textbox", name="Edit note").fill("Quinn lives in Porto, Portugal")
    porto.get_by_role("button", name="Save", exact=True).click()
    expect(porto).to_contain_text("Quinn lives in Porto, Portugal", timeout=LIVE_TIMEOUT_MS)

    switch.click()
    expect(switch).not_to_be_checked(timeout=LIVE_TIMEOUT_MS)
    with session_scope(readonly=True) as session:
        notes = sorted(n.note for n in user_notes.list_notes(session=session, bot_id=bot_id, discord_user_id="5151"))
        assert notes == ["Quinn is a night-shift nurse", "Quinn lives in Porto, Portugal"]
        assert user_notes.suggestions(session=session, bot_id=bot_id) == []
        assert user_notes.get_note(session=session, note_id=ids["Quinn hates cats"]).status == user_notes.DISMISSED
        assert bots.get_bot(bot_id, session=session).notes_need_approval is False


def test_review_handlers_refuse_a_tester_on_the_server(ui_env) -> None:
    """Loading the suggestions and changing them check the admin role themselves."""
    from grobot.core.errors import PermissionDenied
    from grobot.core.models import Role
    from grobot.core.services import users
    from grobot.pages import bot_knowledge_state
    from tests.ui.auth import create_ui_user

    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name=f"Guarded-{uuid.uuid4().hex[:6]}").id
        note_id = user_notes.add_note(session=session, bot_id=bot_id, discord_user_id="1", note="A fact",
                                      reliability=0.9, source="archivist", status=user_notes.SUGGESTED).id
    tester = create_ui_user(f"tester-{uuid.uuid4().hex[:6]}", Role.TESTER)
    with session_scope() as session:
        user = users.get_user(tester.id, session=session)
        users.grant_bot(user, bot_id, session=session)
        token = users.start_session(user)

    def accept(session, bot) -> None:
        user_notes.accept_suggestion(session=session, bot_id=bot.id, note_id=note_id)

    for call in (lambda: bot_knowledge_state.load_review(token, bot_id),
                 lambda: bot_knowledge_state.change_review(token, bot_id, accept)):
        with pytest.raises(PermissionDenied):
            call()
    with session_scope(readonly=True) as session:
        assert user_notes.get_note(session=session, note_id=note_id).status == user_notes.SUGGESTED
