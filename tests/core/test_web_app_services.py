"""The service functions the web app's bot pages read through: logs, known users, Test Chat sessions, access."""

from __future__ import annotations

import logging

import pytest

from grobot.core.db import session_scope
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import LogEntry, Role
from grobot.core.services import bots, discord_users, log_entries, tester_chat, user_notes, users

logger = logging.getLogger(__name__)


def test_recent_logs_filter_by_level_and_text_newest_first(any_db_env) -> None:
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="Logger")
        other = bots.create_bot(session=session, name="Other")
        for level, message in [("DEBUG", "tick"), ("INFO", "connected to 100% of guilds"), ("WARNING", "slow reply"),
                               ("ERROR", "gateway lost"), ("INFO", "reconnected")]:
            session.add(LogEntry(bot_id=bot.id, level=level, logger="bot.gateway", message=message))
        session.add(LogEntry(bot_id=other.id, level="ERROR", logger="x", message="gateway of another bot"))
        session.flush()
        bot_id = bot.id
    with session_scope(readonly=True) as session:
        every = log_entries.recent_logs(session=session, bot_id=bot_id)
        assert [line.message for line in every] == ["reconnected", "gateway lost", "slow reply",
                                                    "connected to 100% of guilds", "tick"]
        warnings = log_entries.recent_logs(session=session, bot_id=bot_id, min_level="warning")
        assert [line.level for line in warnings] == ["ERROR", "WARNING"]
        assert [line.message for line in log_entries.recent_logs(session=session, bot_id=bot_id, search="GATEWAY")] == [
            "reconnected", "gateway lost", "slow reply", "connected to 100% of guilds", "tick"]  # the logger matches
        assert [line.message for line in log_entries.recent_logs(session=session, bot_id=bot_id, search="100%")] == [
            "connected to 100% of guilds"]
        assert [line.message for line in log_entries.recent_logs(session=session, bot_id=bot_id, search="%")] == [
            "connected to 100% of guilds"]  # a literal percent sign, not a wildcard
        page = log_entries.recent_logs(session=session, bot_id=bot_id, limit=2)
        older = log_entries.recent_logs(session=session, bot_id=bot_id, limit=2, before_id=page[-1].id)
        assert [line.message for line in page + older] == [line.message for line in every[:4]]
        with pytest.raises(ValidationError, match="unknown log level"):
            log_entries.recent_logs(session=session, bot_id=bot_id, min_level="LOUD")


def test_known_users_aggregate_profiles_and_notes(grobot_env) -> None:
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Knower").id
        discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id="111", directives="Be formal",
                                     display_name="Ann")
        for note in ("likes tea", "lives in Oslo"):
            user_notes.add_note(session=session, bot_id=bot_id, discord_user_id="222", note=note, reliability=0.8,
                                source="admin")
        user_notes.add_note(session=session, bot_id=bot_id, discord_user_id="111", note="is a teacher",
                            reliability=0.5, source="archivist")
    with session_scope(readonly=True) as session:
        known = {u.discord_user_id: u for u in discord_users.known_users(session=session, bot_id=bot_id)}
        assert set(known) == {"111", "222"}
        assert (known["111"].display_name, known["111"].has_directives, known["111"].note_count) == ("Ann", True, 1)
        assert (known["222"].has_directives, known["222"].note_count) == (False, 2)
        assert [u.discord_user_id for u in discord_users.known_users(session=session, bot_id=bot_id, search="ann")] == ["111"]


def test_test_chat_session_per_user_and_bot_access(grobot_env) -> None:
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Chatty").id
        hidden_id = bots.create_bot(session=session, name="Hidden").id
        tester = users.create_user(session=session, username="tess", password="password123", role=Role.TESTER.value)
        users.grant_bot(tester, bot_id, session=session)
        first = tester_chat.open_session(bot_id, tester.id, session=session)
        assert tester_chat.open_session(bot_id, tester.id, session=session).id == first.id
        message = tester_chat.submit(first.id, "hello", session=session)
        assert tester_chat.run_status(message.id, session=session) == ("pending", "")
        assert [m.content for m in tester_chat.recent_messages(first.id, session=session)] == ["hello"]
        assert users.visible_bot(tester, bot_id, session=session).name == "Chatty"
        with pytest.raises(NotFoundError, match="may not see it"):
            users.visible_bot(tester, hidden_id, session=session)
        with pytest.raises(NotFoundError):
            users.visible_bot(tester, 9999, session=session)
