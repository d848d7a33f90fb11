"""The advisory council against fake LLM servers scripted per advisor: parallel answers, a failing
advisor, the structured synthesis, storage, settings and Test Chat's run events."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlmodel import select

from grobot.core.agents.council import DEFAULT_ROLES, CouncilError, deliberate
from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.models import AgentEvent, CouncilAdvisor, Deliberation, LLMCall, Message, UsageDaily
from grobot.core.services import bots, costs, council, tester_chat
from grobot.core.store.council_run import council_question, run_council
from tests.fakes.llm import EventCollector, FakeLLM, Reply, use_fake_llm
from tests.helpers import async_wait_for


def make_bot(name: str = "Sage") -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name, personality="You are Sage.").id


def for_advisor(name: str):
    """Match the request of one advisor (its role text is in the system prompt)."""
    return lambda body: f"You are the {name}." in str(body.get("messages", [{}])[0].get("content", ""))


def is_synthesis(body) -> bool:
    return "You chair an advisory council" in str(body.get("messages", [{}])[0].get("content", ""))


SYNTHESIS = {"consensus": "Launch in spring.", "disagreements": ["The Devil's Advocate fears the cost"],
             "recommendation": "Run a pilot first.", "confidence": 72}


def plan(bot_id: int):
    with session_scope() as session:
        return council.council_plan(bot_id, session=session)


def enable(bot_id: int, **fields) -> None:
    with session_scope() as session:
        council.set_council(bot_id, session=session, enabled=True, **fields)


async def test_advisors_answer_in_parallel_each_on_its_own_llm_and_the_synthesis_is_structured(grobot_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    other = FakeLLM().start()  # a second provider: an OpenAI-compatible server
    try:
        use_fake_llm(other, bot_id=None, provider="openai", model="gpt-fake", categories=("tools",))
        enable(bot_id)
        with session_scope() as session:
            council.set_advisor(bot_id, "Visionary", session=session, provider="openai", model="gpt-vision")
            council.set_advisor(bot_id, "Analyst", session=session, model="analyst-model")
        # Each advisor's answer is held until the test lets it go: all five asked at once (they run in
        # parallel), then let go in an order of the test's (the order they are reported in is the finishing order).
        held = {name: threading.Event() for name in ("Analyst", "Strategist", "Devil's Advocate", "Pragmatist", "Visionary")}
        for name in ("Analyst", "Strategist", "Devil's Advocate", "Pragmatist"):
            fake_llm.script_for(for_advisor(name), Reply(text=f"{name} says go.", hold=held[name]), persistent=True)
        other.script_for(for_advisor("Visionary"), Reply(text="The future is bright.", hold=held["Visionary"]),
                         persistent=True)
        fake_llm.script_for(is_synthesis, Reply(json=SYNTHESIS), persistent=True)
        seen: list[str] = []

        async def on_advisor(answer):
            seen.append(answer.name)

        def asked() -> int:
            return sum(1 for r in [*fake_llm.chat_requests(), *other.chat_requests()] if not is_synthesis(r))

        task = asyncio.ensure_future(deliberate(plan(bot_id), "Should we launch in spring?", on_advisor=on_advisor))
        try:
            # One after the other, the second advisor would only be asked once the first (held) had answered.
            await async_wait_for(lambda: asked() == 5 or task.done(), 30, message="five advisors asked at once")
            assert asked() == 5 and seen == [], "advisors ran one after the other"
            order = ["Strategist", "Visionary", "Devil's Advocate", "Analyst", "Pragmatist"]
            for number, name in enumerate(order, 1):
                held[name].set()
                await async_wait_for(lambda n=number: len(seen) >= n or task.done(), 30, message=f"{name}'s answer")
            result = await asyncio.wait_for(task, 60)
        finally:
            for event in held.values():
                event.set()
    finally:
        other.stop()

    assert seen == ["Strategist", "Visionary", "Devil's Advocate", "Analyst", "Pragmatist"]  # finishing order
    by_name = {a.name: a for a in result.advisors}
    assert by_name["Visionary"].provider == "openai" and by_name["Visionary"].model == "gpt-vision"
    assert by_name["Visionary"].answer == "The future is bright."
    assert by_name["Analyst"].model == "analyst-model" and by_name["Strategist"].model == "fake-model"
    vision_request = next(r for r in other.chat_requests() if for_advisor("Visionary")(r))
    assert vision_request["model"] == "gpt-vision" and vision_request["messages"][-1]["content"] == \
        "Should we launch in spring?"
    assert result.confidence == 72 and result.consensus == "Launch in spring."
    assert result.disagreements == ["The Devil's Advocate fears the cost"]
    synthesis_request = next(r for r in fake_llm.chat_requests() if is_synthesis(r))
    assert synthesis_request.get("format"), "the synthesis asks for structured output"
    assert "Strategist says go." in synthesis_request["messages"][-1]["content"]
    assert "confidence 72/100" in result.synthesis() and "Run a pilot first." in result.synthesis()
    assert len(result.records) == 6 and result.tokens_in > 0 and result.tokens_out > 0


async def test_a_failing_advisor_is_reported_and_the_synthesis_goes_on(grobot_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    enable(bot_id)
    for role in DEFAULT_ROLES:
        if role.name == "Pragmatist":
            fake_llm.script_for(for_advisor(role.name), Reply(status=401, error="invalid api key"), persistent=True)
        else:
            fake_llm.script_for(for_advisor(role.name), Reply(text=f"{role.name} answer"), persistent=True)
    fake_llm.script_for(is_synthesis, Reply(json={**SYNTHESIS, "confidence": 55}), persistent=True)

    result = await deliberate(plan(bot_id), "Go?")

    failed = [a for a in result.advisors if a.error]
    assert [a.name for a in failed] == ["Pragmatist"] and "could not answer" in failed[0].section()
    # Test Chat and the Council page show the error; Discord a plain reason, not the provider's reply or address.
    assert "invalid api key" in failed[0].section()
    public = failed[0].section(public=True)
    assert public.endswith("_could not answer: my AI service is not set up right; an admin needs to check the "
                           "bot's settings_") and "invalid api key" not in public and "127.0.0.1" not in public
    assert result.confidence == 55
    synthesis_request = next(r for r in fake_llm.chat_requests() if is_synthesis(r))
    assert "Pragmatist (could not answer" in synthesis_request["messages"][-1]["content"]


async def test_a_failed_synthesis_says_a_plain_reason_on_discord(grobot_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    enable(bot_id)
    fake_llm.script_for(is_synthesis, Reply(status=500, error="boom at the backend"), persistent=True)

    result = await deliberate(plan(bot_id), "Go?")

    assert result.confidence is None and "boom at the backend" in result.synthesis()  # Test Chat, the Council page
    assert result.synthesis(public=True) == ("**Synthesis** could not be made: the AI service is not available "
                                             "right now; please try again later")


async def test_an_advisor_cut_at_its_cap_ends_its_section_at_a_full_sentence(grobot_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    enable(bot_id)
    for role in DEFAULT_ROLES:
        text, finish = ("Launch now. The market is ready and the team is strong. Also the", "length") \
            if role.name == "Analyst" else (f"{role.name} answer", None)
        fake_llm.script_for(for_advisor(role.name), Reply(text=text, finish_reason=finish), persistent=True)
    fake_llm.script_for(is_synthesis, Reply(json=SYNTHESIS), persistent=True)

    result = await deliberate(plan(bot_id), "Go?")

    analyst = next(a for a in result.advisors if a.name == "Analyst")
    assert analyst.answer == "Launch now. The market is ready and the team is strong."
    assert next(a for a in result.advisors if a.name == "Pragmatist").answer == "Pragmatist answer"  # not cut: kept


async def test_no_synthesis_when_every_advisor_fails_and_a_disabled_council_says_so(grobot_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    with pytest.raises(CouncilError, match="not enabled"):
        await deliberate(plan(bot_id), "Go?")
    enable(bot_id)
    fake_llm.script_for(lambda body: True, Reply(status=500, error="boom"), persistent=True)
    result = await deliberate(plan(bot_id), "Go?")
    assert result.confidence is None and result.error == "no advisor could answer"
    assert len(result.advisors) == 5 and all(a.error for a in result.advisors)
    assert not [r for r in fake_llm.chat_requests() if is_synthesis(r)]


def test_settings_default_roles_and_validation(any_db_env):
    bot_id = make_bot()
    with session_scope() as session:
        names = [a.name for a in council.advisors(bot_id, session=session)]
        assert names == ["Analyst", "Strategist", "Devil's Advocate", "Pragmatist", "Visionary"]
        assert council.get_council(bot_id, session=session).enabled is False
        council.set_advisor(bot_id, "Historian", session=session, role="You are the Historian.", category="decision")
        council.set_advisor(bot_id, "Visionary", session=session, enabled=False)
        with pytest.raises(ValidationError, match="unknown provider"):
            council.set_advisor(bot_id, "Analyst", session=session, provider="nope")
        with pytest.raises(ValidationError, match="^role: required for a new advisor"):
            council.set_advisor(bot_id, "Ghost", session=session)
        with pytest.raises(ValidationError, match="^role: required: what the advisor looks at and how it answers$"):
            council.set_advisor(bot_id, "Analyst", session=session, role="  ")
        with pytest.raises(ValidationError, match="already has an advisor"):
            council.set_advisor(bot_id, "Analyst", session=session, new_name="Strategist")
        council.delete_advisor(bot_id, "Strategist", session=session)
    with session_scope() as session:
        names = [(a.name, a.enabled) for a in council.advisors(bot_id, session=session)]
        assert names == [("Analyst", True), ("Devil's Advocate", True), ("Pragmatist", True), ("Visionary", False),
                         ("Historian", True)]
        members = council.council_plan(bot_id, session=session).advisors
        assert [a.name for a in members] == ["Analyst", "Devil's Advocate", "Pragmatist", "Historian"]
        assert members[-1].llm.category == "decision"
        council.set_advisor(bot_id, "Analyst", session=session, provider="anthropic")
        uses = council.describe_llms(bot_id, session=session)
        assert uses["Analyst"] == "anthropic claude-3-5-haiku-latest (no API key: set one with llm set)"
        council.reset_advisors(bot_id, session=session)
        assert len(council.advisors(bot_id, session=session)) == 5
        council.save_deliberation(bot_id, {"question": "Kept?", "advisors": []}, session=session)
    with session_scope() as session:  # deleting the bot deletes its council and deliberations
        bots.delete_bot(bots.get_bot(bot_id, session=session), session=session)
    with session_scope(readonly=True) as session:
        assert session.exec(select(Deliberation)).all() == [] and session.exec(select(CouncilAdvisor)).all() == []


async def test_council_in_test_chat_stores_steps_answer_and_deliberation(any_db_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    enable(bot_id)
    for role in DEFAULT_ROLES:
        fake_llm.script_for(for_advisor(role.name), Reply(text=f"{role.name} thinks so."), persistent=True)
    fake_llm.script_for(is_synthesis, Reply(json=SYNTHESIS, prompt_tokens=100, completion_tokens=20), persistent=True)
    assert council_question("/council Should we?") == "Should we?" and council_question("hello /council") is None
    with session_scope() as session:
        costs.set_price("ollama", "fake-model", 10.0, 20.0, session=session)  # per million tokens in / out
        conv = tester_chat.create_session(bot_id, session=session)
        msg_id = tester_chat.submit(conv.id, "/council Should we launch?", session=session).id
    sink = EventCollector()

    text, error = await run_council(bot_id, "Should we launch?", run_id=msg_id, sink=sink)

    assert error is None
    assert text.count("thinks so.") == 5 and text.index("**Synthesis** · confidence 72/100") > text.index("Visionary")
    assert sink.kinds()[-1] == "done"
    with session_scope(readonly=True) as session:
        stored = session.get(Message, msg_id)
        assert stored.status == "done"
        answer = session.exec(select(Message).where(Message.conversation_id == stored.conversation_id,
                                                    Message.role == "assistant")).one()
        assert answer.content == text
        steps = [e.data for e in session.exec(select(AgentEvent).where(AgentEvent.run_id == msg_id,
                                                                        AgentEvent.kind == "thinking")).all()]
        assert sorted(s["advisor"] for s in steps if s.get("step") == "advisor") == sorted(r.name for r in DEFAULT_ROLES)
        rows = council.list_deliberations(bot_id, session=session)
        assert len(rows) == 1 and rows[0].question == "Should we launch?" and rows[0].confidence == 72
        assert rows[0].platform == "test_chat" and len(rows[0].advisors) == 5 and rows[0].tokens_in > 100
        assert rows[0].advisors[0]["model"] == "fake-model" and rows[0].advisors[0]["answer"].endswith("thinks so.")
        assert rows[0].cost == pytest.approx((rows[0].tokens_in * 10.0 + rows[0].tokens_out * 20.0) / 1e6)
        calls = session.exec(select(LLMCall).where(LLMCall.bot_id == bot_id)).all()
        assert sorted({c.agent_role for c in calls}) == ["council_advisor", "council_synthesis"] and len(calls) == 6
        usage = session.exec(select(UsageDaily).where(UsageDaily.bot_id == bot_id)).one()
        assert usage.calls == 6  # the daily usage (and so the limits) count the council


async def test_a_disabled_council_ends_the_test_chat_run_with_a_clear_error(grobot_env, fake_llm):
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    with session_scope() as session:
        conv = tester_chat.create_session(bot_id, session=session)
        msg_id = tester_chat.submit(conv.id, "/council Go?", session=session).id
    text, error = await run_council(bot_id, "Go?", run_id=msg_id)
    assert text == "" and "not enabled" in (error or "")
    with session_scope(readonly=True) as session:
        stored = session.get(Message, msg_id)
        assert stored.status == "error" and "not enabled" in stored.error
    assert fake_llm.chat_requests() == []


async def test_a_stopped_council_ends_once_as_cancelled_and_keeps_what_was_shown(grobot_env, fake_llm):
    import asyncio

    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    enable(bot_id)
    fake_llm.script_for(for_advisor("Strategist"), Reply(text="Quick take."), persistent=True)
    fake_llm.script_for(lambda body: True, Reply(text="Slow take.", delay=5.0), persistent=True)
    with session_scope() as session:
        conv = tester_chat.create_session(bot_id, session=session)
        msg_id = tester_chat.submit(conv.id, "/council Stop me?", session=session).id
    first_section = asyncio.Event()
    events = []

    async def sink(event):
        events.append(event)
        if event.kind.value == "token":
            first_section.set()

    task = asyncio.create_task(run_council(bot_id, "Stop me?", run_id=msg_id, sink=sink))
    await asyncio.wait_for(first_section.wait(), 10)
    task.cancel("stopped by the tester")
    with pytest.raises(asyncio.CancelledError):
        await task

    finals = [e for e in events if e.kind.value in ("done", "error")]
    assert len(finals) == 1 and finals[0].data["cancelled"] is True and "stopped by the tester" in finals[0].data["message"]
    with session_scope(readonly=True) as session:
        stored = session.get(Message, msg_id)
        assert stored.status == "cancelled"
        shown = session.exec(select(Message).where(Message.conversation_id == stored.conversation_id,
                                                   Message.role == "assistant")).one()
        assert "Quick take." in shown.content and "Slow take." not in shown.content
        # The advisor that answered used the model: its call is accounted for (usage, cost, budgets).
        calls = session.exec(select(LLMCall).where(LLMCall.bot_id == bot_id)).all()
        assert [c.agent_role for c in calls] == ["council_advisor"] and calls[0].run_id == msg_id


async def test_a_synthesis_of_placeholders_is_failed_and_placeholder_items_are_dropped(grobot_env, fake_llm):
    """A small model's synthesis that only echoes its instructions is no synthesis (no confidence, a reason); real
    content keeps, its placeholder and repeated items go."""
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    enable(bot_id)
    fake_llm.script_for(lambda body: not is_synthesis(body), Reply(text="Ship on Monday."), persistent=True)
    fake_llm.script_for(is_synthesis, Reply(json={"consensus": "CONSENSUS: consensus",
                                                  "disagreements": ["1-3 sentences", "540-550 sentences"] * 50,
                                                  "recommendation": "recommendation", "confidence": 0}))
    result = await deliberate(plan(bot_id), "Ship on Friday?")
    assert result.status == "failed" and result.confidence is None and not result.disagreements
    assert "placeholders" in result.error and "could not be made" in result.synthesis()
    assert result.synthesis(public=True) == ("**Synthesis** could not be made: my model could not sum up the "
                                             "advisors' answers; please try again")

    fake_llm.script_for(is_synthesis, Reply(json={"consensus": "Ship on Monday, not Friday.",
                                                  "disagreements": ["1-3 sentences", "Ship on Monday, not Friday.",
                                                                    "The Visionary would ship today", "none"] * 30,
                                                  "recommendation": "Monday.", "confidence": 70}))
    result = await deliberate(plan(bot_id), "Ship on Friday?")
    assert result.status == "done" and result.confidence == 70
    assert result.disagreements == ["The Visionary would ship today"]


def test_an_advisor_cut_at_its_deadline_is_counted_at_most_the_tokens_it_asked_for():
    """The usage of a call stopped at its deadline never comes: it is estimated from what was written, and the
    estimate of a long-worded text exceeded what the model could have written (seen on the demo model: an
    advisor of 96 tokens counted as more)."""
    from grobot.core.agents.council import _cut_call
    from grobot.core.llm.effective import EffectiveLLM

    llm = EffectiveLLM(category="output", provider="llamacpp", base_url="http://127.0.0.1:9", model="demo",
                       context_window=4096, temperature=0.7, api_key=None, fallback_model=None, supports_images=False,
                       source="builtin")
    messages = [{"role": "user", "content": "Should we ship on Friday?"}]
    long_worded = _cut_call(llm, messages, "Notwithstanding considerable organisational uncertainties " * 12, 8.0,
                            max_tokens=96)
    assert long_worded.tokens_out == 96 and long_worded.capped and not long_worded.error
    short = _cut_call(llm, messages, "Ship it on Monday instead.", 8.0, max_tokens=96)
    assert short.tokens_out == 7 and short.estimated
    silent = _cut_call(llm, messages, "", 8.0, max_tokens=96)
    assert silent.tokens_out == 0 and silent.error == "no answer within 8 s, the time the council had for it"
