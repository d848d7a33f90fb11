"""``/council`` as a Discord user meets it (real bot process, fake Discord, fake LLM scripted per advisor),
and ``/council`` in Test Chat through the supervisor's job."""

from __future__ import annotations

import threading

import pytest

from grobot.core.agents.council import DEFAULT_ROLES
from grobot.core.db import session_scope
from grobot.core.services import council, tester_chat
from tests.fakes.llm import Reply
from tests.helpers import wait_for
from tests.worker.harness import bot_log

pytestmark = pytest.mark.slow


def for_advisor(name: str):
    return lambda body: f"You are the {name}." in str(body.get("messages", [{}])[0].get("content", ""))


def is_synthesis(body) -> bool:
    return "You chair an advisory council" in str(body.get("messages", [{}])[0].get("content", ""))


def _followups(world, token: str | None = None) -> list[dict]:
    return [r for r in world.discord.interaction_responses
            if r["kind"] == "webhook POST" and (token is None or r["token"] == token)]


def test_council_on_discord_streams_sections_in_finishing_order_then_the_synthesis(world):
    bot = world.add_bot("sage", user_cooldown_seconds=30)
    # Each advisor answers when the test lets it, in this order, each once the one before is posted.
    finishing = ["Strategist", "Visionary", "Devil's Advocate", "Pragmatist", "Analyst"]
    answer = {name: threading.Event() for name in finishing}
    for name in finishing:
        reply = Reply(status=500, error="model crashed", hold=answer[name]) if name == "Pragmatist" \
            else Reply(text=f"{name}: my view.", hold=answer[name])
        world.llm.script_for(for_advisor(name), reply, persistent=True)
    long_recommendation = "Pilot it in one region first. " * 90  # the synthesis needs two messages
    world.llm.script_for(is_synthesis, Reply(json={"consensus": "Go, carefully.", "disagreements": ["timing"],
                                                   "recommendation": long_recommendation, "confidence": 64}),
                         persistent=True)
    world.wait_online(bot)
    uid = world.discord_ids[bot]

    # Off by default: the asker alone is told so, and no LLM is asked.
    world.discord.invoke_command(uid, "council", {"question": "Should we expand?"})
    refusal = wait_for(lambda: [r for r in world.discord.interaction_responses
                                if r["kind"] == "callback" and "not enabled" in str(r["body"])], 20)[0]
    assert refusal["body"]["data"]["flags"] & 64  # ephemeral
    assert not world.llm.chat_requests()

    with session_scope() as session:
        council.set_council(bot, session=session, enabled=True)
    world.discord.invoke_command(uid, "council", {"question": "Should we expand?"})
    deferred = wait_for(lambda: [r for r in world.discord.interaction_responses
                                 if r["kind"] == "callback" and r["body"].get("type") == 5], 20)
    assert not (deferred[0]["body"].get("data") or {}).get("flags", 0) & 64  # the channel sees the council
    for posted, name in enumerate(finishing, start=1):
        answer[name].set()
        wait_for(lambda: len(_followups(world)) >= posted, 20, message=f"the section of the {name}")

    def all_sent() -> list[dict] | None:
        parts = _followups(world)
        sent = _squash("".join(p["body"]["content"] for p in parts[5:]))
        return parts if sent.endswith(_squash(long_recommendation)) else None  # the whole synthesis

    parts = wait_for(all_sent, 20, message=str(_followups(world)))
    texts = [p["body"]["content"] for p in parts]
    assert texts[0].startswith("> Should we expand?")
    order = [next(name for name in [r.name for r in DEFAULT_ROLES] if f"**{name}**" in t) for t in texts[:5]]
    assert order == finishing
    assert "Strategist: my view." in texts[0]
    # The failed advisor says a plain reason: not the LLM server's address, nor what it sent back.
    assert "_could not answer: the AI service is not available right now; please try again later_" in texts[3]
    assert "model crashed" not in texts[3] and "127.0.0.1" not in texts[3], texts[3]
    synthesis = "".join(texts[5:])
    assert texts[5].startswith("**Synthesis** · confidence 64/100") and "timing" in texts[5]
    assert all(len(t) <= 2000 for t in texts) and len(texts) >= 7, [len(t) for t in texts]
    assert _squash(synthesis).endswith(_squash(long_recommendation))

    # Stored as it ran (the Council tab follows it), then finished: one deliberation.
    row = wait_for(lambda: next((r for r in _deliberations(bot) if r["status"] != "running"), None), 10)
    assert len(_deliberations(bot)) == 1 and row["status"] == "done"
    assert row["question"] == "Should we expand?" and row["platform"] == "discord" and row["confidence"] == 64
    assert [a["name"] for a in row["advisors"]] == order and row["tokens_in"] > 0
    assert "model crashed" in row["advisors"][3]["error"]  # the Council page keeps the full error, and the log
    wait_for(lambda: [m for _, m in bot_log(bot) if m.startswith("Council advisor Pragmatist could not answer: ")
                      and "model crashed" in m], 10, message="the advisor's error in the bot's log")
    assert row["asked_by"]

    # A deliberation is one run of the asker: the bot's cooldown applies to the next one.
    asked = len(world.llm.chat_requests())
    world.discord.invoke_command(uid, "council", {"question": "And now?"})
    slow = wait_for(lambda: [r for r in world.discord.interaction_responses
                             if r["kind"] == "callback" and "Slow down" in str(r["body"])], 20)[0]
    assert slow["body"]["data"]["flags"] & 64
    assert len(world.llm.chat_requests()) == asked


def test_the_asker_stops_the_council_with_stop(world):
    bot = world.add_bot("sage", user_cooldown_seconds=0)
    with session_scope() as session:
        council.set_council(bot, session=session, enabled=True)
    world.llm.script_for(for_advisor("Strategist"), Reply(text="Quick take."), persistent=True)
    world.llm.script_for(lambda body: True, Reply(text="Slow take.", delay=8.0), persistent=True)
    world.wait_online(bot)
    uid = world.discord_ids[bot]
    world.discord.invoke_command(uid, "council", {"question": "Stop me?"})
    wait_for(lambda: [p for p in _followups(world) if "Quick take." in p["body"]["content"]], 20)
    world.discord.invoke_command(uid, "stop")
    wait_for(lambda: [r for r in world.discord.interaction_responses
                      if r["kind"] == "callback" and "Stopped." in str(r["body"])], 20)
    stopped = wait_for(lambda: [p for p in _followups(world) if "council was stopped" in p["body"]["content"]], 20)
    assert "with /stop" in stopped[0]["body"]["content"]
    assert not [p for p in _followups(world) if "Synthesis" in p["body"]["content"]]
    assert not _deliberations(bot)
    # The advisor that answered used the model: its call is accounted for (usage, cost, budgets).
    wait_for(lambda: _call_roles(bot) == ["council_advisor"], 20)


def test_council_in_test_chat_through_the_worker(world):
    bot = world.add_bot("sage", enabled=False)
    for role in DEFAULT_ROLES:
        world.llm.script_for(for_advisor(role.name), Reply(text=f"{role.name} picks the left road."),
                             persistent=True)
    world.llm.script_for(is_synthesis, Reply(json={"consensus": "Left.", "disagreements": [],
                                                   "recommendation": "Take the left road.", "confidence": 90}),
                         persistent=True)
    with session_scope() as session:
        council.set_council(bot, session=session, enabled=True)
        conv = tester_chat.create_session(bot, session=session)
        mid = tester_chat.submit(conv.id, "/council Which road?", session=session).id

    def answered():
        with session_scope(readonly=True) as session:
            rows = tester_chat.messages(conv.id, session=session)
            done = [m for m in rows if m.id == mid and m.status in ("done", "error")]
            return rows if done else None

    rows = wait_for(answered, 30)
    assert [m.status for m in rows if m.id == mid] == ["done"]
    answer = next(m.content for m in rows if m.role == "assistant")
    assert answer.count("picks the left road.") == 5 and "confidence 90/100" in answer
    assert _deliberations(bot)[0]["platform"] == "test_chat"


def test_council_in_test_chat_as_a_channel_meets_with_its_persona(world):
    """Test Chat "as #random", a channel with a persona: the advisors and the synthesis get its addition and
    its model (as /council in that channel on Discord: tests/worker/test_channel_personas_e2e.py)."""
    from grobot.core.models import Bot
    from grobot.core.services import channel_personas

    addition = "In #random the council speaks like a pirate."
    bot = world.add_bot("sage", enabled=False, user_cooldown_seconds=0)
    for role in DEFAULT_ROLES:
        world.llm.script_for(for_advisor(role.name), Reply(text=f"{role.name}: arr, the west sea."), persistent=True)
    world.llm.script_for(is_synthesis, Reply(json={"consensus": "West.", "disagreements": [],
                                                   "recommendation": "Sail west.", "confidence": 80}), persistent=True)
    with session_scope() as session:
        council.set_council(bot, session=session, enabled=True)
        channel_personas.set_persona(session.get(Bot, bot), "777000000000000999", session=session,
                                     personality=addition, llms={"output": {"model": "pirate-model"}})
        conv = tester_chat.create_session(bot, session=session)
        mid = tester_chat.submit(conv.id, "/council Which sea?", session=session, channel_id="777000000000000999").id

    def answered():
        with session_scope(readonly=True) as session:
            return [m for m in tester_chat.messages(conv.id, session=session) if m.id == mid
                    and m.status in ("done", "error")]

    assert [m.status for m in wait_for(answered, 30)] == ["done"], _said(conv.id)
    asked = [b for b in world.llm.chat_requests() if "Which sea?" in str(b.get("messages"))]
    assert len(asked) == 6 and all(addition in str(b["messages"][0]["content"]) for b in asked)
    assert {b["model"] for b in asked} == {"pirate-model"}


def _said(conversation_id: int) -> list[str]:
    with session_scope(readonly=True) as session:
        return [f"{m.role} {m.status}: {m.content} ({m.error})" for m in tester_chat.messages(conversation_id, session=session)]


def _squash(text: str) -> str:
    """``text`` without whitespace (a split drops it at the cuts)."""
    return "".join(text.split())


def _deliberations(bot_id: int) -> list[dict]:
    with session_scope(readonly=True) as session:
        return [row.model_dump() for row in council.list_deliberations(bot_id, session=session)]


def _call_roles(bot_id: int) -> list[str]:
    from sqlmodel import select

    from grobot.core.models import LLMCall

    with session_scope(readonly=True) as session:
        return list(session.exec(select(LLMCall.agent_role).where(LLMCall.bot_id == bot_id)).all())
