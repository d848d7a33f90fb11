"""Discord users by name, and a bot's Discord conversations as the admin reads them (issue 14 item 7),
on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from grobot.core.db import session_scope
from grobot.core.errors import NotFoundError
from grobot.core.services import bots, conversation_list, conversations, discord_users, tester_chat, user_notes


def _say(session, bot_id: int, key: str, title: str, author_id: str, author_name: str, text: str,
         answer: str = "") -> int:
    conv = conversations.get_or_create_conversation(session=session, bot_id=bot_id, key=key, title=title)
    conversations.insert_user_message(session=session, conversation_id=conv.id, content=text, author_id=author_id,
                                      author_name=author_name)
    if answer:
        conversations.append_run_messages(session=session, conversation_id=conv.id, author_name="helper",
                                          messages=[{"role": "assistant", "content": answer}])
    return conv.id or 0


@pytest.fixture
def world(any_db_env):
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="helper").id or 0
        other = bots.create_bot(session=session, name="other").id or 0
        general = _say(session, bot, "guild:100", "#general", "11", "Alice", "hi all", "hello Alice")
        _say(session, bot, "guild:100", "#general", "22", "bob_old", "yo")
        _say(session, bot, "guild:100", "#general", "22", "Bob", "me again", "hi Bob")
        dm = _say(session, bot, "dm:300", "Bob", "22", "Bob", "psst", "yes?")
        _say(session, other, "guild:100", "#general", "33", "Carol", "not for helper")
        user_notes.add_note(session=session, bot_id=bot, discord_user_id="44", note="Likes tea", reliability=0.8,
                            source="admin")
        discord_users.set_directives(session=session, bot_id=bot, discord_user_id="55", directives="Be brief",
                                     display_name="Eve")
        conv = tester_chat.create_session(bot, session=session)
        tester_chat.submit(conv.id or 0, "from the web", session=session, author_id="app-user:1", author_name="tess")
    return bot, general, dm


def test_names_come_from_the_profile_or_the_last_message_in_one_query(world) -> None:
    bot, _general, _dm = world
    with session_scope(readonly=True) as session:
        statements: list[str] = []
        listener = lambda *args: statements.append(args[2]) if args[2].lstrip().upper().startswith("SELECT") else None
        event.listen(session.get_bind(), "before_cursor_execute", listener)
        try:
            names = discord_users.display_names(session=session, bot_id=bot, user_ids=["11", "22", "33", "44", "55"])
        finally:
            event.remove(session.get_bind(), "before_cursor_execute", listener)
    assert names == {"11": "Alice", "22": "Bob", "55": "Eve"}  # 33 wrote to another bot; 44 has only a note
    assert len(statements) == 1


def test_the_discord_conversations_of_a_bot_and_of_one_user(world) -> None:
    bot, general, dm = world
    with session_scope(readonly=True) as session:
        every = conversation_list.discord_conversations(session=session, bot_id=bot)
        bobs = conversation_list.discord_conversations(session=session, bot_id=bot, user_id="22")
        alices = conversation_list.discord_conversations(session=session, bot_id=bot, user_id="11")
        summary, lines = conversation_list.conversation_lines(session=session, bot_id=bot, conversation_id=general)
        with pytest.raises(NotFoundError):
            conversation_list.conversation_lines(session=session, bot_id=bot + 1, conversation_id=general)
    assert [c.id for c in every] == [dm, general]  # the most recent first; no Test Chat
    general_row = every[1]
    assert (general_row.kind, general_row.title, general_row.messages, general_row.people) == ("guild", "#general", 5, 2)
    assert [c.id for c in bobs] == [dm, general] and [c.id for c in alices] == [general]
    assert [(line.role, line.author_name, line.content) for line in lines] == [
        ("user", "Alice", "hi all"), ("assistant", "helper", "hello Alice"), ("user", "bob_old", "yo"),
        ("user", "Bob", "me again"), ("assistant", "helper", "hi Bob")]
    assert summary is not None and summary.people == 2


def test_the_knowledge_review_names_its_suggested_users_in_a_fixed_number_of_queries(world) -> None:
    from grobot.core.models import Bot
    from grobot.pages.bot_knowledge_state import _review

    bot, _general, _dm = world

    def selects(users: list[str]) -> tuple[int, list[str]]:
        with session_scope() as session:
            for uid in users:
                user_notes.add_note(session=session, bot_id=bot, discord_user_id=uid, note=f"fact {uid}",
                                    reliability=0.5, source="archivist", status=user_notes.SUGGESTED)
        with session_scope(readonly=True) as session:
            row = session.get(Bot, bot)
            statements: list[str] = []
            listener = lambda *args: statements.append(args[2]) if args[2].lstrip().upper().startswith("SELECT") else None
            event.listen(session.get_bind(), "before_cursor_execute", listener)
            try:
                review = _review(session, row)
            finally:
                event.remove(session.get_bind(), "before_cursor_execute", listener)
        return len(statements), sorted({s.user_label for s in review.suggestions})

    one, labels = selects(["11"])
    many, labels = selects(["22", "55", "66", "77"])
    assert many == one == 2  # the suggestions, then every name at once
    assert labels == ["66", "77", "Alice", "Bob", "Eve"]  # by name where one is known
