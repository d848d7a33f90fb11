"""Bot services: validation, hot fields vs gateway fields, deletion of everything of a bot."""

from __future__ import annotations

import pytest
from sqlmodel import func, select

from grobot.core.db import session_scope
from grobot.core.errors import ConflictError, NotFoundError, ValidationError
from grobot.core.models import (
    AgentEvent,
    Bot,
    BotFile,
    BotStatus,
    Conversation,
    LLMCall,
    LLMSetting,
    LogEntry,
    Message,
    UserNote,
    UserProfile,
)
from grobot.core.services import bots, llm_settings
from grobot.core.services.validation import field_problems
from grobot.core.settings import get_settings
from tests.helpers import make_token


def test_names_are_unique_and_validated(grobot_env):
    with session_scope() as session:
        bots.create_bot(session=session, name="alpha")
    with pytest.raises(ConflictError, match="already exists"), session_scope() as session:
        bots.create_bot(session=session, name="alpha")
    for bad in ("", " ", "x" * 65, "bad/name", "-dash"):
        with pytest.raises(ValidationError, match="name"), session_scope() as session:
            bots.create_bot(session=session, name=bad)


def test_a_token_that_is_not_a_discord_token_is_refused(grobot_env):
    for bad in ("hello", "a.b.c", "sk-1234567890abcdefghijklmnop", make_token(222222222222222222) + " extra"):
        with pytest.raises(ValidationError, match="does not look like a Discord bot token"), session_scope() as s:
            bots.create_bot(session=s, name="t", token=bad)
    with session_scope(readonly=True) as session:
        assert session.exec(select(func.count()).select_from(Bot)).one() == 0  # nothing half-written


def test_every_problem_of_a_new_bot_is_named_at_once(grobot_env):
    """A form shows each problem next to its field: a bad token does not hide a taken or bad name."""
    with session_scope() as session:
        bots.create_bot(session=session, name="taken")
    with pytest.raises(ValidationError) as refused, session_scope() as session:
        bots.create_bot(session=session, name="taken", token="not-a-token")
    assert [key for key, _ in field_problems(str(refused.value))] == ["name", "token"]
    assert "already exists" in str(refused.value)
    with pytest.raises(ValidationError) as refused, session_scope() as session:
        bots.create_bot(session=session, name="bad/name", token="not-a-token")
    assert [key for key, _ in field_problems(str(refused.value))] == ["name", "token"]


def test_unknown_fields_and_bounds_are_refused(grobot_env):
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="b")
    with pytest.raises(ValidationError, match="unknown field"), session_scope() as session:
        bots.update_bot(bots.get_bot("b", session=session), {"colour": "red"}, session=session)
    with pytest.raises(ValidationError, match="max_tool_rounds"), session_scope() as session:
        bots.update_bot(bots.get_bot("b", session=session), {"max_tool_rounds": 99}, session=session)
    with pytest.raises(ValidationError, match="personality"), session_scope() as session:
        bots.update_bot(bots.get_bot("b", session=session), {"personality": "x" * 20_001}, session=session)
    with pytest.raises(ValidationError, match="channel id"), session_scope() as session:
        bots.update_bot(bots.get_bot("b", session=session), {"allowed_channel_ids": "12,abc"}, session=session)
    with session_scope(readonly=True) as session:
        assert session.get(Bot, bot.id).max_tool_rounds == 5


def test_only_gateway_changes_bump_the_revision(grobot_env):
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="rev", token=make_token(333333333333333333))
        start = bot.gateway_revision
        bots.update_bot(bot, {"personality": "new", "keywords": "hi, there", "agent_mode": "native"}, session=session)
        assert bot.gateway_revision == start
        assert bot.keywords == ["hi", "there"] and bot.agent_mode == "native"
        bots.set_token(bot, make_token(444444444444444444), session=session)
        assert bot.gateway_revision == start + 1
        bots.update_bot(bot, {"members_intent": True}, session=session)
        assert bot.gateway_revision == start + 2


def test_get_bot_by_id_or_name(grobot_env):
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="findme")
    with session_scope(readonly=True) as session:
        assert bots.get_bot(str(bot.id), session=session).name == "findme"
        assert bots.get_bot("findme", session=session).id == bot.id
        with pytest.raises(NotFoundError):
            bots.get_bot("nobody", session=session)


def test_deleting_a_bot_deletes_everything_of_it(any_db_env):
    with session_scope() as session:
        keep = bots.create_bot(session=session, name="keep")
        bot = bots.create_bot(session=session, name="doomed", token=make_token(555555555555555555))
        llm_settings.set_llm(session=session, bot_id=bot.id, category="output", provider="ollama", model="m")
        conv = Conversation(bot_id=bot.id, key="guild:1")
        session.add(conv)
        session.flush()
        msg = Message(conversation_id=conv.id, role="user", content="hi")
        session.add(msg)
        session.flush()
        kept_conv = Conversation(bot_id=keep.id, key="guild:1")
        session.add(kept_conv)
        session.flush()
        kept_msg = Message(conversation_id=kept_conv.id, role="user", content="hello")
        session.add(kept_msg)
        session.flush()
        kept_msg_id, doomed_id = kept_msg.id, bot.id
        session.add_all([
            AgentEvent(run_id=kept_msg.id, seq=1, kind="done"),
            AgentEvent(run_id=msg.id, seq=1, kind="done"),
            LLMCall(bot_id=bot.id, run_id=msg.id, agent_role="synthesizer", provider="ollama", model="m"),
            LogEntry(bot_id=bot.id, level="INFO", logger="x", message="m"),
            UserProfile(bot_id=bot.id, discord_user_id="9"),
            UserNote(bot_id=bot.id, discord_user_id="9", note="likes tea"),
            BotFile(bot_id=bot.id, path="a.txt"),
        ])
    folder = get_settings().bot_files_dir(bot.id)
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("hello")
    with session_scope() as session:
        bots.delete_bot(bots.get_bot("doomed", session=session), session=session)
    assert not folder.exists()
    with session_scope(readonly=True) as session:
        for model in (Conversation, LLMCall, LogEntry, UserProfile, UserNote, BotFile, BotStatus):
            assert session.exec(select(model).where(model.bot_id == doomed_id)).all() == [], model.__name__
        # Messages and their events belong to a bot through their conversation: only the kept bot's remain.
        assert [m.id for m in session.exec(select(Message)).all()] == [kept_msg_id]
        assert [e.run_id for e in session.exec(select(AgentEvent)).all()] == [kept_msg_id]
        assert [c.bot_id for c in session.exec(select(Conversation)).all()] == [keep.id]
        assert session.exec(select(LLMSetting).where(LLMSetting.bot_id == bot.id)).first() is None
        assert session.get(BotStatus, keep.id) is not None


def test_effective_llm_prefers_bot_override_then_global(grobot_env):
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="llm")
        assert llm_settings.effective_llm(session=session, category="tools", bot_id=bot.id).source == "builtin"
        llm_settings.set_llm(session=session, category="tools", provider="openai", base_url="http://g/v1",
                             model="global-model", api_key="sk-global")
        llm_settings.set_llm(session=session, category="tools", bot_id=bot.id, provider="ollama", model="bot-model")
    with session_scope(readonly=True) as session:
        mine = llm_settings.effective_llm(session=session, category="tools", bot_id=bot.id)
        glob = llm_settings.effective_llm(session=session, category="tools")
        every = llm_settings.effective_llms(session=session, bot_id=bot.id)
    assert (mine.model, mine.source) == ("bot-model", "bot")
    assert (glob.model, glob.api_key, glob.source) == ("global-model", "sk-global", "global")
    assert every["tools"].model == "bot-model" and every["output"].source == "builtin"
    assert glob.public()["api_key"] == "set"
    with pytest.raises(ValidationError, match="unknown provider"), session_scope() as session:
        llm_settings.set_llm(session=session, category="output", provider="skynet", model="x")


def _set_status(bot_id: int, **fields: object) -> None:
    with session_scope() as session:
        status = session.get(BotStatus, bot_id)
        for key, value in fields.items():
            setattr(status, key, value)
        session.add(status)


def test_a_live_state_without_a_recent_heartbeat_is_shown_offline(grobot_env):
    """No worker runs to mark them (killed, crashed): the lists say offline, and why."""
    from datetime import timedelta

    from grobot.core.models import utcnow
    from grobot.core.services import fleet

    limit = fleet.stale_heartbeat_after(get_settings().worker.heartbeat_seconds)
    assert bots.stale_after_seconds() == limit  # the supervisor's own limit, not a second one
    now = utcnow()
    three_hours_ago = now - timedelta(hours=3)
    with session_scope() as session:
        ids = {name: bots.create_bot(session=session, name=name, token=make_token(100000000000000000 + i)).id
               for i, name in enumerate(("fresh", "stale", "starting", "never", "broken", "off"))}
        bots.set_enabled(bots.get_bot("off", session=session), False, session=session)
    _set_status(ids["fresh"], state="online", heartbeat_at=now - timedelta(seconds=limit - 5), guild_count=12,
                discord_user_name="fresh-bot")
    _set_status(ids["stale"], state="online", heartbeat_at=three_hours_ago, guild_count=12, discord_user_name="stale-bot")
    _set_status(ids["starting"], state="starting", detail="connecting to Discord",
                heartbeat_at=now - timedelta(seconds=limit + 5))
    _set_status(ids["never"], state="online", heartbeat_at=None)
    _set_status(ids["broken"], state="error", detail="Discord refused the token", heartbeat_at=three_hours_ago)
    _set_status(ids["off"], state="online", heartbeat_at=three_hours_ago)

    with session_scope(readonly=True) as session:
        shown = {summary.name: summary for summary in bots.list_bots(session=session)}
        header = bots.bot_details(bots.get_bot("stale", session=session), session=session)
    assert (shown["fresh"].status, shown["fresh"].status_detail) == ("online", "")
    since = three_hours_ago.strftime("%H:%M UTC") if three_hours_ago.date() == now.date() \
        else three_hours_ago.strftime("%Y-%m-%d %H:%M UTC")
    assert (shown["stale"].status, shown["stale"].status_detail) == (
        "offline", f"no heartbeat since {since}; is the bot worker running?")
    assert (header["status"], header["status_detail"]) == ("offline", shown["stale"].status_detail)  # the bot's header
    assert shown["starting"].status == "offline"
    assert shown["starting"].status_detail.startswith("no heartbeat since ")
    assert (shown["never"].status, shown["never"].status_detail) == (
        "offline", "no heartbeat received; is the bot worker running?")
    assert (shown["broken"].status, shown["broken"].status_detail) == ("error", "Discord refused the token")
    assert (shown["off"].status, shown["off"].status_detail) == ("stopped", "disabled")
    assert sum(summary.status == "online" for summary in shown.values()) == 1  # "6 bots · 1 online"


def test_the_first_names_of_a_testers_bots_and_their_count(any_db_env):
    """The Users table lists a few names per tester and a count, read with a limit."""
    from grobot.core.models import Role
    from grobot.core.services import users

    with session_scope() as session:
        ids = [bots.create_bot(session=session, name=f"bot {i:02d}").id for i in range(34)]
        many = users.create_user(session=session, username="many", password="p" * 12, role=Role.TESTER.value)
        two = users.create_user(session=session, username="two", password="p" * 12, role=Role.TESTER.value)
        users.create_user(session=session, username="none", password="p" * 12, role=Role.TESTER.value)
        users.set_granted_bots(many, set(ids), session=session)
        users.set_granted_bots(two, {ids[20], ids[5]}, session=session)
        many_id, two_id = many.id, two.id
    with session_scope(readonly=True) as session:
        names = bots.granted_bot_names(session=session, per_user=3)
        assert bots.bot_names(session=session, limit=2) == [(ids[0], "bot 00"), (ids[1], "bot 01")]
    assert names == {many_id: (["bot 00", "bot 01", "bot 02"], 34), two_id: (["bot 05", "bot 20"], 2)}
