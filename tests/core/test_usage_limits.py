"""Daily usage limits: exact counters, effective limits, and runs refused over a limit (chain, Test Chat, CLI)."""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlmodel import select

from grobot.core.agents.chain import wait_for_background
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.models import AgentEvent, Bot, LLMCall, Message, UsageDaily, UserUsageDaily, utcnow
from grobot.core.services import app_settings, bots, tester_chat, usage_accounting, usage_limits
from grobot.core.store.run_store_db import load_for_run
from tests.fakes.llm import EventCollector, FakeToolCatalog, Reply, use_fake_llm
from tests.helpers import answered


def _bot(name: str = "Penny", **fields) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name, **fields).id


def _discord(bot_id: int, text: str, author: str = "42") -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key="guild:500", content=text, author_id=author,
                           author_name=f"user{author}", platform="discord", channel_id="500", guild_id="1",
                           mentions_bot=True)


def _state(bot_id: int, user: str | None = None, now=None) -> usage_limits.LimitState:
    with session_scope(readonly=True) as session:
        return usage_limits.read_state(session=session, bot=session.get(Bot, bot_id), discord_user_id=user, now=now)


async def test_counters_match_the_llm_calls_and_the_answered_discord_messages(grobot_env, fake_llm):
    bot_id = _bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script(Reply(text="one", prompt_tokens=100, completion_tokens=7),
                    Reply(text="two", prompt_tokens=50, completion_tokens=3))
    for text in ("first", "second"):
        result = await answered(_discord(bot_id, text), tools=FakeToolCatalog())
        assert result.text in ("one", "two")
    # Test Chat messages are not counted per user (only Discord users have a message limit).
    test = IncomingMessage(bot_id=bot_id, conversation_key="test:x", content="hi", author_id="42", author_name="t",
                           platform="test_chat")
    fake_llm.script(Reply(text="three", prompt_tokens=10, completion_tokens=1))
    await answered(test, tools=FakeToolCatalog())
    await wait_for_background()
    with session_scope(readonly=True) as session:
        calls = session.exec(select(LLMCall).where(LLMCall.bot_id == bot_id)).all()
        usage = session.exec(select(UsageDaily)).one()
        users = session.exec(select(UserUsageDaily)).all()
    assert (usage.calls, usage.tokens_in, usage.tokens_out) == (
        len(calls), sum(c.tokens_in for c in calls), sum(c.tokens_out for c in calls))
    assert usage.tokens_in >= 160 and usage.day == utcnow().date().isoformat()
    assert [(u.discord_user_id, u.messages) for u in users] == [("42", 2)]
    state = _state(bot_id, "42")
    assert (state.tokens, state.calls, state.user_messages) == (usage.tokens_in + usage.tokens_out, usage.calls, 2)


def test_limits_come_from_the_bot_or_the_global_default_and_reset_at_utc_midnight(any_db_env):
    bot_id = _bot(daily_call_limit=0)  # 0 on the bot: unlimited, whatever the default
    with session_scope() as session:
        app_settings.set_value("daily_token_limit", "1000", session=session)
        app_settings.set_value("daily_call_limit", 5, session=session)
        app_settings.set_value("user_daily_message_limit", 3, session=session)
        bots.update_bot(session.get(Bot, bot_id), {"user_daily_message_limit": "2"}, session=session)
    now = utcnow().replace(hour=23, minute=59)
    with session_scope() as session:
        usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=9, tokens_in=900, tokens_out=99,
                                       errors=0, now=now)
        for _ in range(2):
            usage_accounting.count_user_message(session=session, bot_id=bot_id, discord_user_id="7", now=now)
    state = _state(bot_id, "7", now)
    assert (state.token_limit, state.call_limit, state.user_message_limit) == (1000, 0, 2)
    assert (state.tokens, state.calls, state.user_messages) == (999, 9, 2)
    hit = usage_limits.check(state)
    assert hit is not None and hit.reason == usage_limits.USER_MESSAGES
    assert hit.text == "You have reached your daily message limit with Penny; it resets at 00:00 UTC."
    assert usage_limits.check(_state(bot_id, "8", now)) is None  # another user; 999 < 1000 tokens

    with session_scope() as session:
        usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=1, tokens_in=1, tokens_out=0, errors=1,
                                       now=now)
    hit = usage_limits.check(_state(bot_id, "8", now))
    assert hit is not None and hit.reason == usage_limits.BOT_TOKENS
    assert hit.text == "Penny has reached its daily limit; it will be back after 00:00 UTC."

    tomorrow = _state(bot_id, "7", now + timedelta(minutes=2))  # a new UTC day: all counters start again
    assert (tomorrow.tokens, tomorrow.calls, tomorrow.user_messages) == (0, 0, 0)
    assert usage_limits.check(tomorrow) is None


async def test_over_the_budget_no_llm_call_and_test_chat_gets_the_error_event(grobot_env, fake_llm, caplog):
    bot_id = _bot(daily_token_limit=50)
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script(Reply(text="a long answer", prompt_tokens=40, completion_tokens=20))
    first = await answered(_discord(bot_id, "hello"), tools=FakeToolCatalog())
    assert first.error is None and first.text == "a long answer"  # started under the budget: finished
    await wait_for_background()
    requests = len(fake_llm.chat_requests())

    with session_scope() as session:
        conv = tester_chat.create_session(bot_id, session=session)
        pending = tester_chat.submit(conv.id, "are you there?", session=session)
        run_id, key = pending.id, conv.key
    sink = EventCollector()
    with caplog.at_level(logging.WARNING, logger="grobot.core.services.usage_limits"):
        result = await answered(IncomingMessage(bot_id=bot_id, conversation_key=key, content="are you there?",
                                                 author_id="tester", author_name="t", platform="test_chat",
                                                 run_id=run_id), sink=sink, tools=FakeToolCatalog())
        cli = await answered(IncomingMessage(bot_id=bot_id, conversation_key="cli:me", content="and now?",
                                              author_id="cli:me", author_name="me", platform="cli"),
                              tools=FakeToolCatalog())
    text = "Penny has reached its daily limit; it will be back after 00:00 UTC."
    assert result.error == text and cli.error == text
    assert sink.kinds() == ["error"] and sink.of("error")[0].data["message"] == text
    assert len(fake_llm.chat_requests()) == requests  # no LLM call over the limit
    warnings = [r for r in caplog.records if "daily token limit" in r.getMessage()]
    assert len(warnings) == 1, "one WARNING per limit per day"
    with session_scope(readonly=True) as session:
        events = session.exec(select(AgentEvent).where(AgentEvent.run_id == run_id)).all()
        stored = session.get(Message, run_id)
        cli_messages = session.exec(select(Message).where(Message.content == "and now?")).all()
    assert [(e.kind, e.data["message"]) for e in events] == [("error", text)]
    assert stored.status == "error" and stored.error == text
    assert cli_messages == []  # a refused CLI message is not stored in the history


def test_the_check_is_part_of_the_run_preload(grobot_env):
    bot_id = _bot(user_daily_message_limit=1)
    with session_scope() as session:
        usage_accounting.count_user_message(session=session, bot_id=bot_id, discord_user_id="42")
    with session_scope(readonly=True) as session:
        loaded = load_for_run(_discord(bot_id, "hi"), session=session)
    assert loaded.limits is not None and usage_limits.check(loaded.limits).reason == usage_limits.USER_MESSAGES


def test_usage_of_one_bot_and_of_the_fleet_for_the_web_app(any_db_env):
    from grobot.core.services import usage

    busy = _bot("Busy", user_daily_message_limit=2)
    _bot("Idle")  # a bot with no usage is listed with zeros
    now = utcnow()
    with session_scope() as session:
        for days_ago, tokens in ((0, 30), (1, 20), (20, 999)):
            usage_accounting.add_llm_usage(session=session, bot_id=busy, calls=1, tokens_in=tokens, tokens_out=1,
                                           errors=0, now=now - timedelta(days=days_ago))
        for user, messages in (("a", 3), ("b", 1), ("c", 2)):
            for _ in range(messages):
                usage_accounting.count_user_message(session=session, bot_id=busy, discord_user_id=user, now=now)
    with session_scope(readonly=True) as session:
        one = usage.bot_usage(busy, session=session, days=14, now=now, top_users=2)
        fleet = usage.fleet_usage(session=session, now=now)
    assert [(d.day, d.tokens) for d in one.days] == [(utc_day(now, 0), 31), (utc_day(now, 1), 21)]
    assert one.top_users == [("a", 3), ("c", 2)] and one.today.users_at_limit == 2
    assert [(r.bot_name, r.tokens, r.users_at_limit, r.user_message_limit) for r in fleet] == [
        ("Busy", 31, 2, 2), ("Idle", 0, 0, 0)]


def utc_day(now, days_ago: int) -> str:
    return usage_accounting.utc_day(now - timedelta(days=days_ago))
