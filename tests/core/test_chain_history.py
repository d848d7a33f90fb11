"""History: stored in OpenAI format, rebuilt from the database for every message, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlmodel import select

from grobot.core.agents.chain import wait_for_background
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.models import AgentEvent, Message
from grobot.core.services import bots, conversations, tester_chat
from grobot.core.store.local import run_chain
from tests.fakes.llm import EventCollector, FakeToolCatalog, Reply, use_fake_llm

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


async def test_stored_history_replays_in_openai_format(any_db_env, fake_llm):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Historian").id
    use_fake_llm(fake_llm, bot_id=bot_id)

    async def get_weather(city: str) -> str:
        return f"rain in {city}"

    catalog = FakeToolCatalog().add("get_weather", get_weather, schema=CITY)
    msg = dict(bot_id=bot_id, conversation_key="guild:100", author_id="1", author_name="carol", platform="discord",
               channel_id="100", guild_id="9", mentions_bot=True)
    fake_llm.script(Reply(json={"tools": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}),
                    Reply(text="Rainy in Oslo."))
    first = await run_chain(IncomingMessage(content="weather in Oslo?", **msg), tools=catalog)
    assert first.text == "Rainy in Oslo."

    fake_llm.script(Reply(text="You asked about Oslo."))  # no tool comes close: no Tool Identifier call
    second = await run_chain(IncomingMessage(content="what did I ask?", **msg), tools=catalog)
    assert second.text == "You asked about Oslo."

    sent = fake_llm.chat_requests()[-1]["messages"]  # Ollama wire format of the replayed history
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[1]["content"] == "carol: weather in Oslo?"
    assert sent[2]["tool_calls"] == [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]
    assert sent[3] == {"role": "tool", "content": "rain in Oslo", "tool_name": "get_weather"}
    assert sent[4]["content"] == "Rainy in Oslo." and sent[5]["content"] == "carol: what did I ask?"

    with session_scope(readonly=True) as session:
        conv = conversations.find_conversation(session=session, bot_id=bot_id, key="guild:100")
        history = conversations.load_history(session=session, conversation_id=conv.id)
    call_id = history[1]["tool_calls"][0]["id"]
    assert history[:4] == [
        {"role": "user", "content": "weather in Oslo?", "name": "carol"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "content": "rain in Oslo", "tool_call_id": call_id, "name": "get_weather"},
        {"role": "assistant", "content": "Rainy in Oslo."},
    ]
    assert [m["role"] for m in history[4:]] == ["user", "assistant"]

    with session_scope() as session:
        assert conversations.reset_conversation(session=session, bot_id=bot_id, key="guild:100") == 6
    fake_llm.script(Reply(json={"tools": []}), Reply(text="fresh start"))
    await run_chain(IncomingMessage(content="hello again", **msg), tools=catalog)
    assert [m["role"] for m in fake_llm.chat_requests()[-1]["messages"]] == ["system", "user"]
    await wait_for_background()


async def test_test_chat_run_uses_the_pending_message(grobot_env, fake_llm):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Tester").id
        conv = tester_chat.create_session(bot_id, session=session)
        earlier = tester_chat.submit(conv.id, "first question", session=session)
        earlier.status = "done"
        session.add(earlier)
        session.add(Message(conversation_id=conv.id, role="assistant", content="first answer"))
        pending = tester_chat.submit(conv.id, "second question", session=session)
        key, run_id, conv_id = conv.key, pending.id, conv.id
    use_fake_llm(fake_llm, bot_id=bot_id)
    sink = EventCollector()

    result = await run_chain(IncomingMessage(bot_id=bot_id, conversation_key=key, content="second question", author_id="t",
                                             author_name="tester", platform="test_chat", run_id=run_id), sink=sink)

    assert result.run_id == run_id and result.text == "Echo: second question"
    assert [m["content"] for m in fake_llm.chat_requests()[0]["messages"][1:]] == ["first question", "first answer", "second question"]
    with session_scope(readonly=True) as session:
        rows = session.exec(select(Message).where(Message.conversation_id == conv_id).order_by(Message.id)).all()
        assert [(m.role, m.content) for m in rows] == [("user", "first question"), ("assistant", "first answer"),
                                                       ("user", "second question"), ("assistant", "Echo: second question")]
        assert rows[2].status == "done"
        events = conversations.run_events(session=session, run_id=run_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1)) and events[-1].kind == "done"
        assert session.exec(select(AgentEvent).where(AgentEvent.run_id != run_id)).first() is None


async def test_events_are_stored_while_the_run_goes_on(grobot_env, fake_llm, monkeypatch):
    import asyncio

    from grobot.core.agents import events as events_module
    from tests.helpers import async_wait_for

    monkeypatch.setattr(events_module, "DB_FLUSH_SECONDS", 0.01)  # flush often: races with the final write show up
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Streamer").id
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script(Reply(text="".join(f"a slow and steady answer, part {i}. " for i in range(4)), chunks=8,
                          chunk_delay=0.05))
    msg = IncomingMessage(bot_id=bot_id, conversation_key="dm:5", content="tell me", author_id="5", author_name="erin",
                          platform="discord", is_dm=True)
    task = asyncio.create_task(run_chain(msg, tools=FakeToolCatalog()))

    def stored_tokens() -> list[AgentEvent]:
        with session_scope(readonly=True) as session:
            return session.exec(select(AgentEvent).where(AgentEvent.kind == "token")).all()

    await async_wait_for(stored_tokens, timeout=10, message="token events stored before the end")
    assert not task.done()  # seen by a poller (the Test Chat page) while the answer still streams
    result = await task
    with session_scope(readonly=True) as session:
        users = session.exec(select(Message).where(Message.role == "user")).all()
        assert [m.id for m in users] == [result.run_id]  # the user message was stored exactly once
        seqs = [e.seq for e in conversations.run_events(session=session, run_id=result.run_id)]
        assert seqs == list(range(1, len(seqs) + 1))
    for _ in range(5):  # more runs: every one stores one user message and one answer
        fake_llm.script(Reply(text="quick", chunks=2, chunk_delay=0.01))
        await run_chain(msg, tools=FakeToolCatalog())
    with session_scope(readonly=True) as session:
        roles = [m.role for m in session.exec(select(Message).order_by(Message.id)).all()]
    assert roles == ["user", "assistant"] * 6


async def test_a_run_whose_final_write_fails_still_ends_with_a_stored_error(grobot_env):
    """Even when the final transaction fails, the stored events end with exactly one error."""
    from sqlmodel import select

    from grobot.core.agents.events import RunRecorder
    from grobot.core.agents.types import EventKind
    from grobot.core.db import session_scope
    from grobot.core.models import AgentEvent, Conversation, Message
    from grobot.core.services import bots

    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="fragile").id
        conv = Conversation(bot_id=bot_id, key="test:fragile", kind="test")
        session.add(conv)
        session.flush()
        message = Message(conversation_id=conv.id, role="user", content="hello", status="running")
        session.add(message)
        session.flush()
        run_id, conversation_id = message.id, conv.id

    seen = []

    async def sink(event):
        seen.append(event)

    from grobot.core.agents.run_store import RunEnd
    from grobot.core.store.run_store_db import DatabaseStore

    class FullDisk(DatabaseStore):
        """The final write (the one with the answer) fails; the others work."""

        async def write_run(self, write):
            if write.end is not None:
                raise RuntimeError("disk full")
            return await super().write_run(write)

    recorder = RunRecorder(sink, FullDisk())
    recorder.attach(run_id, conversation_id=conversation_id)
    await recorder.emit(EventKind.THINKING, {"why": "testing"})
    final = await recorder.finish(EventKind.DONE, {"text": "hi"}, end=RunEnd(bot_id=bot_id, author_name="fragile"))
    assert final.kind == EventKind.ERROR and "could not be saved" in final.data["message"]
    assert [e.kind for e in seen][-1] == EventKind.ERROR
    with session_scope(readonly=True) as session:
        kinds = [e.kind for e in session.exec(select(AgentEvent).where(AgentEvent.run_id == run_id)
                                              .order_by(AgentEvent.seq)).all()]
    assert kinds[-1] == "error" and kinds.count("error") + kinds.count("done") == 1


async def test_a_run_reads_no_more_history_than_its_models_windows_hold(grobot_env, fake_llm):
    """A long conversation with models of a small window: the store reads only the newest messages that
    window can hold (the rest would be trimmed off every prompt), and the prompt ends with them."""
    from grobot.core.store.run_store_db import DatabaseStore

    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Brief").id
        conv = conversations.get_or_create_conversation(session=session, bot_id=bot_id, key="guild:100")
        conversations.append_run_messages(session=session, conversation_id=conv.id, messages=[
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "word " * 40} for i in range(80)])
    use_fake_llm(fake_llm, bot_id=bot_id, context_window=512)
    msg = IncomingMessage(bot_id=bot_id, conversation_key="guild:100", content="and now?", author_id="1",
                          author_name="carol", platform="discord", channel_id="100", guild_id="9", mentions_bot=True)
    loaded = await DatabaseStore().load(msg)
    assert 0 < len(loaded.history) < 40 and loaded.history[-1]["content"].startswith("m79 ")
    fake_llm.script(Reply(text="Brief answer."))
    assert (await run_chain(msg)).text == "Brief answer."
    sent = fake_llm.chat_requests()[-1]["messages"]
    assert sent[-2]["content"].startswith("m79 ") and len(sent) - 2 <= len(loaded.history)
    await wait_for_background()
