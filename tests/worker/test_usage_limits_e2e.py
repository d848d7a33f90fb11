"""Daily limits as Discord users and testers see them, with real bot processes and a real supervisor."""

from __future__ import annotations

import pytest
from sqlmodel import func, select

from grobot.core.db import session_scope
from grobot.core.models import LogEntry, Message, UsageDaily, UserUsageDaily
from grobot.core.services import tester_chat
from tests.helpers import wait_for
from tests.worker.harness import fleet

pytestmark = pytest.mark.slow

BUDGET_NOTICE = "Budget has reached its daily limit; it will be back after 00:00 UTC."
USER_NOTICE = "You have reached your daily message limit with Chatty; it resets at 00:00 UTC."


def _usage(model, **where):  # type: ignore[no-untyped-def]
    with session_scope(readonly=True) as session:
        stmt = select(model)
        for key, value in where.items():
            stmt = stmt.where(getattr(model, key) == value)
        return session.exec(stmt).first()


def test_budgets_and_user_limits_stop_the_llm_and_notify_once(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        budget = world.add_bot("Budget", user_cooldown_seconds=0, daily_token_limit=50)
        chatty = world.add_bot("Chatty", user_cooldown_seconds=0, user_daily_message_limit=1)
        world.start_supervisor()
        world.wait_online(budget)
        world.wait_online(chatty)
        d = world.discord
        budget_uid, chatty_uid = world.discord_ids[budget], world.discord_ids[chatty]

        def ask(uid: int, text: str, author=None):  # type: ignore[no-untyped-def]
            return d.send_message(d.channel_id, f"<@{uid}> {text}", mentions=[uid], author=author or d.alice)

        def asked_llm(text: str) -> bool:
            return any(text in str(body.get("messages")) for body in world.llm.chat_requests())

        # Under the budget: answered (the run ends even though it spends more than the budget).
        first = ask(budget_uid, "first question")
        world.wait_reply(first, containing="Echo: ")
        wait_for(lambda: (u := _usage(UsageDaily, bot_id=budget)) is not None and u.tokens_in + u.tokens_out > 50, 20)

        # Over it: one polite notice, no LLM call; the next message gets no second notice.
        second = ask(budget_uid, "second question")
        assert world.wait_reply(second, containing=BUDGET_NOTICE)["content"] == BUDGET_NOTICE
        third = ask(budget_uid, "third question")
        from_bob = ask(budget_uid, "bob asks", author=d.bob)  # handled after alice's third message
        world.wait_reply(from_bob, containing=BUDGET_NOTICE)
        assert d.replies_to(third["id"]) == []
        assert not asked_llm("second question") and not asked_llm("third question") and not asked_llm("bob asks")

        # A per-user limit blocks alice and not bob.
        mine = ask(chatty_uid, "hello chatty")
        world.wait_reply(mine, containing="Echo: ")
        wait_for(lambda: _usage(UserUsageDaily, bot_id=chatty, discord_user_id=str(d.alice["id"])), 20)
        again = ask(chatty_uid, "hello again")
        assert world.wait_reply(again, containing="daily message limit")["content"] == USER_NOTICE
        bobs = ask(chatty_uid, "hi from bob", author=d.bob)
        world.wait_reply(bobs, containing="Echo: ")
        assert not asked_llm("hello again")

        # Test Chat (answered by the supervisor): the tester sees the error, the model is not asked.
        with session_scope() as session:
            conv = tester_chat.create_session(budget, session=session)
            run_id = tester_chat.submit(conv.id, "test chat question", session=session).id

        def ended() -> Message | None:
            with session_scope(readonly=True) as session:
                msg = session.get(Message, run_id)
                return msg if msg is not None and msg.status == "error" else None

        assert wait_for(ended, 20).error == BUDGET_NOTICE
        assert not asked_llm("test chat question")

        # The bot logged one WARNING for its token limit today per process that refused messages (its own
        # process for Discord, the supervisor for Test Chat), however many messages they refused.
        def warned() -> int:
            with session_scope(readonly=True) as session:
                return session.exec(select(func.count()).select_from(LogEntry).where(
                    LogEntry.bot_id == budget, LogEntry.level == "WARNING",
                    LogEntry.message.contains("daily token limit"))).one()  # type: ignore[attr-defined]

        wait_for(lambda: warned() == 2, 10)  # the supervisor writes its log records in batches
