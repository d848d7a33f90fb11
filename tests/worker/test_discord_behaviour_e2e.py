"""What a Discord user sees from one bot process: streaming, splitting, commands, attachments, limits."""

from __future__ import annotations

import random
import threading

import pytest
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import Conversation, Message
from tests.fakes.llm import Reply
from tests.helpers import wait_for

pytestmark = pytest.mark.slow


def _asks(text: str):
    """Match the answer request for ``text`` (not the JSON-schema calls of other chain steps)."""
    return lambda body: text in str(body.get("messages", [])[-1:]) and not body.get("format") \
        and not body.get("response_format")


def test_a_bot_streams_splits_and_handles_commands(world):
    bot = world.add_bot("talker", user_cooldown_seconds=0)
    world.wait_online(bot)
    uid = world.discord_ids[bot]

    # A long streamed answer: a reply, edited at most once per interval per message, split at
    # a paragraph boundary, and completed as soon as the stream ends.
    # (Words that do not repeat: a repetition loop would be cut where it starts.)
    long_answer = "\n\n".join(f"Paragraph {i}. " + " ".join(f"fact{i}x{j}" for j in range(24)) for i in range(12))
    world.llm.script_for(_asks("tell me a lot"), Reply(text=long_answer, chunks=12, chunk_delay=0.1))
    asked = world.mention(bot, "tell me a lot")
    first = world.wait_reply(asked)
    squash = lambda text: "".join(text.split())
    wait_for(lambda: squash("".join(m["content"] for m in _bot_messages(world, uid, after=first["id"], include=True)))
             == squash(long_answer), 20,
             message=lambda: f"{_bot_messages(world, uid, after=first['id'], include=True)}")
    parts = _bot_messages(world, uid, after=first["id"], include=True)
    assert len(parts) == 2 and all(len(p["content"]) <= 2000 for p in parts)
    assert parts[0]["content"].endswith("x23")  # cut at a paragraph end
    edits = world.discord.calls_by(uid, "PATCH", rf"/messages/{first['id']}$")
    assert edits, "the answer was streamed by editing the reply"
    sends = {c.time for c in world.discord.calls_by(uid, "POST", r"/messages$")}
    times = sorted([c.time for c in edits] + [min(sends)])
    gaps = [b - a for a, b in zip(times, times[1:])]
    # at most one edit per 0.2 s, except the completing edit which goes out at once (the first
    # message fills over about 0.7 s of the stream: several interval-limited edits to check)
    assert len(gaps[:-1]) >= 2 and all(gap >= 0.19 for gap in gaps[:-1]), gaps

    # An answer that stopped at its output cap: the reply ends at its last full sentence, not mid-word.
    world.llm.script_for(_asks("tell me about paris"), Reply(
        text="Paris is the capital of France. It has many museums and parks. The Eiffel Tower was",
        finish_reason="length"))
    reply = world.wait_reply(world.mention(bot, "tell me about paris"))
    wait_for(lambda: [m["content"] for m in _bot_messages(world, uid, after=reply["id"], include=True)]
             == ["Paris is the capital of France. It has many museums and parks."], 20,
             message=lambda: f"{_bot_messages(world, uid, after=reply['id'], include=True)}")

    # The same when the draft spilled into a second message: the part the final answer no longer fills goes.
    # Made-up words that do not repeat (a repetition loop would be cut where it starts: not the point here).
    rng = random.Random(7)
    syllables = "ka lo mi ren tu sa vor pel dri nas qua fen bor lit zem hu gar ost wen ply".split()
    word = lambda: "".join(rng.choice(syllables) for _ in range(3))
    whole = ""
    while len(whole) < 1940:  # about 1,980 characters: the fragment spills over
        whole += " ".join(word() for _ in range(6)).capitalize() + ". "
    whole = whole.strip()
    fragment = "And then the knight rode on " + " ".join(word() for _ in range(120))  # no sentence end: cut away
    # The stream stays open until the draft has spilled into a second message (a positive barrier, not a race
    # between the draft's edits and the end of the stream).
    spill_seen = threading.Event()
    world.llm.script_for(_asks("tell me everything"), Reply(text=whole + "\n\n" + fragment, chunks=4, chunk_delay=0.3,
                                                            finish_reason="length", hold_end=spill_seen))
    asked = world.mention(bot, "tell me everything")
    world.discord.wait_call(lambda c: c.bot_id == uid and c.method == "POST" and c.path.endswith("/messages")
                            and "knight" in str((c.json or {}).get("content", "")), 25)
    reply = world.wait_reply(asked)
    spilled = wait_for(lambda: [m["id"] for m in _bot_messages(world, uid, after=reply["id"]) if "knight" in m["content"]],
                       10, message="the draft's second message")[0]
    spill_seen.set()
    wait_for(lambda: [m["content"] for m in _bot_messages(world, uid, after=reply["id"], include=True)] == [whole],
             60, message=lambda: f"{[m['content'][-40:] for m in _bot_messages(world, uid, after=reply['id'], include=True)]}")
    world.discord.wait_call(lambda c: c.bot_id == uid and c.method == "DELETE" and c.path.endswith(f"/{spilled}"), 30)

    # Whatever the model writes pings no one: not a user, a role, nor everyone.
    bob = world.discord.bob["id"]
    world.llm.script_for(_asks("greet them"), Reply(text=f"Hey <@{bob}> and @everyone and <@&123456>!", chunks=1))
    reply = world.wait_reply(world.mention(bot, "greet them"))
    sent = [c.json for c in world.discord.calls_by(uid, "POST", r"/messages$")
            if "<@&123456>" in str((c.json or {}).get("content"))]
    assert sent and all(body["allowed_mentions"]["parse"] == [] and not body["allowed_mentions"].get("users")
                        and not body["allowed_mentions"].get("replied_user") for body in sent), sent

    # A failed run tells the user why in plain words: not the LLM server's address, nor what it sent back.
    world.llm.script_for(_asks("please fail hard"), Reply(status=500, error="boom internal sk-secret-123"),
                         persistent=True)
    failed = world.wait_reply(world.mention(bot, "please fail hard"), timeout=60)
    assert failed["content"] == ("Sorry, I could not answer that: the AI service is not available right now; "
                                 "please try again later"), failed["content"]

    # Slash commands: /ask answers privately, /reset forgets this channel for this user.
    world.discord.invoke_command(uid, "ask", {"question": "secret question"})
    wait_for(lambda: [r for r in world.discord.interaction_responses
                      if r["kind"] == "webhook POST" and "secret question" in (r["body"] or {}).get("content", "")], 20)
    followup = [r for r in world.discord.interaction_responses if r["kind"] == "webhook POST"][-1]
    assert followup["body"]["flags"] & 64  # ephemeral
    assert _count_user_messages(bot, world.discord.alice["id"]) >= 1
    world.discord.invoke_command(uid, "reset")
    wait_for(lambda: [r for r in world.discord.interaction_responses
                      if r["kind"] == "callback" and "forgot" in str(r["body"])], 10)
    assert _count_user_messages(bot, world.discord.alice["id"], key=f"guild:{world.discord.channel_id}") == 0

    # A text attachment goes into the context.
    att = world.discord.add_attachment("notes.txt", b"the secret number is 4242", "text/plain")
    asked = world.discord.send_message(world.discord.channel_id, f"<@{uid}> what do you think of this?", mentions=[uid],
                                       attachments=[att])
    world.wait_reply(asked, containing="what do you think of this")
    assert any("4242" in str(body.get("messages")) for body in world.llm.chat_requests())

    # A DM is answered; a rate-limited send (429 with Via) is retried and still arrives.
    dm = world.discord.dm_channel(uid, world.discord.bob)
    world.discord.rate_limit("POST", rf"/channels/{dm}/messages$", retry_after=0.1)
    asked = world.discord.send_message(dm, "hi in private", author=world.discord.bob)
    world.wait_reply(asked, containing="hi in private")

    # A dropped gateway connection is RESUMEd: same session, still answering.
    session = world.discord.session_of(uid)
    world.discord.drop(uid)
    wait_for(lambda: world.discord.sessions[session].resumes == 1 and world.discord.session_of(uid) == session, 15)
    asked = world.mention(bot, "after resume")
    world.wait_reply(asked, containing="after resume")


def test_cooldown_and_concurrency_cap_give_a_notice(world):
    bot = world.add_bot("limited", user_cooldown_seconds=30, max_concurrent_runs=1)
    world.wait_online(bot)
    world.llm.script_for(_asks("slow one"), Reply(text="done slowly", delay=1.5))
    first = world.mention(bot, "slow one")
    wait_for(lambda: world.discord.calls_by(world.discord_ids[bot], "POST", r"/typing$"), 10)
    again = world.mention(bot, "and again")  # same user inside the cooldown
    notice = world.wait_reply(again, containing="Slow down")
    other = world.discord.send_message(world.discord.channel_id, f"<@{world.discord_ids[bot]}> me too",
                                       mentions=[world.discord_ids[bot]], author=world.discord.bob)
    busy = world.wait_reply(other, containing="busy")  # over the cap of one run
    world.wait_reply(first, containing="done slowly")
    assert notice and busy


def _bot_messages(world, uid: int, *, after: str, include: bool = False):
    msgs = sorted(world.discord.channel_messages(world.discord.channel_id, bot_id=uid), key=lambda m: int(m["id"]))
    return [m for m in msgs if int(m["id"]) > int(after) or (include and m["id"] == after)]


def _count_user_messages(bot_id: int, author_id: str, key: str | None = None) -> int:
    with session_scope(readonly=True) as session:
        query = select(Message).join(Conversation, Conversation.id == Message.conversation_id).where(
            Conversation.bot_id == bot_id, Message.role == "user", Message.author_id == author_id)
        if key:
            query = query.where(Conversation.key == key)
        return len(session.exec(query).all())
