"""Cooldowns, the run cap, message mapping and /reset selection: pure logic."""

from __future__ import annotations

from types import SimpleNamespace

from bot_worker.mapping import attachment_kind, to_incoming
from grobot.core.agents.reply_rules import rules_decision
from grobot.core.agents.types import ReplyRules
from grobot.core.flood import Cooldowns, NoticeGate, RunLimiter
from grobot.core.services.conversations import messages_to_forget


def test_cooldown_per_user():
    now = [100.0]
    cd = Cooldowns(clock=lambda: now[0])
    assert cd.remaining("u1", 2.0) == 0
    assert cd.remaining("u1", 2.0) == 2.0
    assert cd.remaining("u2", 2.0) == 0  # another user is not affected
    assert cd.should_notice("u1", 2.0) and not cd.should_notice("u1", 2.0)
    now[0] += 2.1
    assert cd.remaining("u1", 2.0) == 0
    assert cd.remaining("u3", 0) == 0 and cd.remaining("u3", 0) == 0


def test_a_cooldown_window_given_back_is_only_the_one_that_started_then():
    """A Test Chat answer that failed gives its window back; a window started since stays."""
    now = [100.0]
    cd = Cooldowns(clock=lambda: now[0])
    failed = cd.start("u1", 60.0)
    assert failed is not None and cd.remaining("u1", 60.0, start=False) == 60.0
    cd.release("u1", failed)
    assert cd.remaining("u1", 60.0, start=False) == 0
    earlier = cd.start("u1", 60.0)
    now[0] += 1
    assert earlier is not None and cd.start("u1", 60.0) is not None
    cd.release("u1", earlier)  # a newer window started since: it stays
    assert cd.remaining("u1", 60.0, start=False) == 60.0
    assert cd.start("u2", 0) is None  # no cooldown: nothing to give back


def test_limit_notice_at_most_once_an_hour_per_user_and_reason():
    now = [0.0]
    gate = NoticeGate(clock=lambda: now[0])
    assert gate.allow("alice", "bot_tokens")
    assert not gate.allow("alice", "bot_tokens")
    assert gate.allow("bob", "bot_tokens") and gate.allow("alice", "user_messages")
    now[0] = 3599.0
    assert not gate.allow("alice", "bot_tokens")
    now[0] = 3600.0
    assert gate.allow("alice", "bot_tokens")


def test_run_cap():
    limiter = RunLimiter()
    assert limiter.try_acquire(2) and limiter.try_acquire(2)
    assert not limiter.try_acquire(2)
    limiter.release()
    assert limiter.try_acquire(2)


def _user(uid, name, bot=False):
    return SimpleNamespace(id=uid, name=name, display_name=name, bot=bot)


def test_guild_mention_maps_to_incoming():
    me = _user(42, "helper", bot=True)
    msg = SimpleNamespace(
        id=7, content="<@42> what is <@9>'s plan?", author=_user(5, "alice"),
        guild=SimpleNamespace(id=1, name="G"), channel=SimpleNamespace(id=3, name="general", type="text"),
        mentions=[me, _user(9, "bob")], reference=None, created_at=None,
    )
    inc = to_incoming(msg, bot_id=1, bot_user_id=42)
    assert inc.conversation_key == "guild:3"
    assert inc.content == "what is @bob's plan?"
    assert inc.mentions_bot and not inc.is_dm and not inc.is_reply_to_bot
    assert (inc.author_id, inc.author_name, inc.channel_id, inc.guild_id) == ("5", "alice", "3", "1")


def test_dm_reply_and_thread_keys():
    resolved = SimpleNamespace(author=_user(42, "helper", bot=True))
    dm = SimpleNamespace(id=8, content="thanks", author=_user(5, "alice"), guild=None,
                         channel=SimpleNamespace(id=77, type="private"), mentions=[],
                         reference=SimpleNamespace(resolved=resolved))
    inc = to_incoming(dm, bot_id=1, bot_user_id=42)
    assert inc.is_dm and inc.is_reply_to_bot and inc.conversation_key == "dm:77"
    thread = SimpleNamespace(id=9, content="x", author=_user(5, "alice"), guild=SimpleNamespace(id=1, name="G"),
                             channel=SimpleNamespace(id=99, name="t", parent_id=3, type="public_thread"),
                             mentions=[], reference=None)
    assert to_incoming(thread, bot_id=1, bot_user_id=42).conversation_key == "thread:99"


def test_a_thread_follows_its_channels_rules_or_its_own():
    def in_thread(parent: int, thread: int = 99, text: str = "<@42> hi", mentions: bool = True):
        msg = SimpleNamespace(id=9, content=text, author=_user(5, "alice"), guild=SimpleNamespace(id=1, name="G"),
                              channel=SimpleNamespace(id=thread, name="t", parent_id=parent, type="public_thread"),
                              mentions=[_user(42, "helper", bot=True)] if mentions else [], reference=None)
        return to_incoming(msg, bot_id=1, bot_user_id=42)

    assert in_thread(3).parent_channel_id == "3" and in_thread(3).channel_id == "99"
    allowed = ReplyRules(allowed_channel_ids=["3"], always_on_channel_ids=["4"])
    assert rules_decision(allowed, in_thread(3)) is True  # a mention in a thread of an allowed channel
    assert rules_decision(allowed, in_thread(5)) is False  # of another channel
    assert rules_decision(ReplyRules(allowed_channel_ids=["99"]), in_thread(5)) is True  # the thread itself listed
    always = ReplyRules(always_on_channel_ids=["4"])
    assert rules_decision(always, in_thread(4, text="anyone?", mentions=False)) is True
    assert rules_decision(always, in_thread(5, text="anyone?", mentions=False)) is False


def test_attachment_kinds():
    assert attachment_kind("notes.txt", "text/plain; charset=utf-8", 100) == "text"
    assert attachment_kind("main.py", None, 100) == "text"
    assert attachment_kind("cat.png", "image/png", 1000) == "image"
    assert attachment_kind("big.txt", "text/plain", 10_000_000) == "other"
    assert attachment_kind("a.zip", "application/zip", 10) == "other"


def test_reset_forgets_the_users_turns_only():
    rows = [(1, "user", "a"), (2, "assistant", None), (3, "user", "b"), (4, "assistant", None),
            (5, "user", "a"), (6, "assistant", None), (7, "tool", None), (8, "assistant", None)]
    assert messages_to_forget(rows, "a") == [1, 2, 5, 6, 7, 8]
    assert messages_to_forget(rows, "b") == [3, 4]
