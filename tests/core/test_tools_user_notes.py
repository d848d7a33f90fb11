"""User notes service: ordering, validation and de-duplication."""

from __future__ import annotations

import pytest

from grobot.core.db import session_scope
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.services import bots, user_notes


@pytest.fixture
def bot_id(grobot_env) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name="notes-bot").id


def test_notes_are_listed_most_reliable_first(bot_id):
    with session_scope() as s:
        user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note="likes tea", reliability=0.3, source="tool")
        user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note="lives in Paris", reliability=0.9, source="admin")
        user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="7", note="other user", reliability=1.0, source="admin")
    with session_scope(readonly=True) as s:
        notes = user_notes.list_notes(session=s, bot_id=bot_id, discord_user_id="42")
    assert [n.note for n in notes] == ["lives in Paris", "likes tea"]


def test_duplicate_note_keeps_one_row_with_the_highest_reliability(bot_id):
    with session_scope() as s:
        first = user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note="Likes tea.", reliability=0.4, source="tool")
        again = user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note="  likes   TEA ", reliability=0.8, source="tool")
        lower = user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note="likes tea", reliability=0.1, source="tool")
        assert again.id == first.id == lower.id
    with session_scope(readonly=True) as s:
        notes = user_notes.list_notes(session=s, bot_id=bot_id, discord_user_id="42")
    assert len(notes) == 1 and notes[0].reliability == pytest.approx(0.8)


def test_invalid_reliability_and_length_are_refused(bot_id):
    with session_scope() as s:
        with pytest.raises(ValidationError, match="between 0 and 1"):
            user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note="x", reliability=1.5, source="tool")
        with pytest.raises(ValidationError, match="at most"):
            user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note="x" * 5000, reliability=0.5, source="tool")
        with pytest.raises(ValidationError, match="empty"):
            user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note="  ", reliability=0.5, source="tool")


def test_update_and_delete(bot_id):
    with session_scope() as s:
        note = user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note="likes tea", reliability=0.5, source="tool")
        note_id = note.id
    with session_scope() as s:
        updated = user_notes.update_note(session=s, note_id=note_id, note="likes green tea", reliability=0.7)
        assert (updated.note, updated.reliability) == ("likes green tea", 0.7)
        with pytest.raises(ValidationError):
            user_notes.update_note(session=s, note_id=note_id, reliability=-0.1)
    with session_scope() as s:
        user_notes.delete_note(session=s, note_id=note_id)
    with session_scope() as s:
        with pytest.raises(NotFoundError):
            user_notes.delete_note(session=s, note_id=note_id)
        assert user_notes.list_notes(session=s, bot_id=bot_id, discord_user_id="42") == []


def test_a_message_reads_the_directives_and_the_active_notes_in_one_query_in_list_order(any_db_env):
    from grobot.core.services import discord_users

    with session_scope() as s:
        bot_id = bots.create_bot(session=s, name="knows").id

    with session_scope() as s:
        for note, reliability in (("likes tea", 0.3), ("lives in Paris", 0.9), ("plays chess", 0.3)):
            user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note=note, reliability=reliability,
                                source="tool")
        user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="42", note="a suggestion", reliability=1.0,
                            source="archivist", status=user_notes.SUGGESTED)
        user_notes.add_note(session=s, bot_id=bot_id, discord_user_id="7", note="other user", reliability=1.0,
                            source="admin")
    with session_scope(readonly=True) as s:
        assert user_notes.directives_and_notes(session=s, bot_id=bot_id, discord_user_id="42") == (
            "", [("lives in Paris", 0.9), ("plays chess", 0.3), ("likes tea", 0.3)])
    with session_scope() as s:
        discord_users.set_directives(session=s, bot_id=bot_id, discord_user_id="42", directives="Answer in French.")
    with session_scope(readonly=True) as s:
        directives, notes = user_notes.directives_and_notes(session=s, bot_id=bot_id, discord_user_id="42")
        assert (directives, notes) == (
            discord_users.get_directives(session=s, bot_id=bot_id, discord_user_id="42"),
            user_notes.note_pairs(session=s, bot_id=bot_id, discord_user_id="42"))
        assert directives == "Answer in French." and [n for n, _ in notes][0] == "lives in Paris"
