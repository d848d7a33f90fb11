"""A bot's data through its supervisor: the bot link serves the same services a bot used to call itself."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys
from datetime import UTC

import pytest
from sqlmodel import select

from bot_worker.bot_link import BotLinkClient
from bot_worker.local_store import LocalBotStore
from bot_worker.remote_store import LinkLogWriter, RemoteBotStore
from grobot.core.agents.run_store import RunEnd, RunWrite, UserMessageIn
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.llm.service import CallRecord
from grobot.core.models import AgentEvent, LLMCall, LogEntry, Message, UserNote
from grobot.core.services import files, user_notes
from tests.worker.link_harness import bot_token, make_bot, with_link


async def _with_link(check, memory=None) -> None:
    store = LocalBotStore()
    if memory is not None:  # the supervisor's memory
        store.deps.memory = memory
    await with_link(check, store)


def _message(bot_id: int, text: str, **fields) -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key="guild:55", content=text, author_id="42",
                           author_name="alice", channel_id="55", guild_id="1", **fields)


class OneMemory:
    """The supervisor's memory, scripted: one memory for every search."""

    def __init__(self, searched: list) -> None:
        self.searched = searched

    async def search(self, bot_id: int, query: str, k: int = 5) -> list[str]:
        self.searched.append((bot_id, query))
        return ["alice likes bananas"]


def test_a_run_is_read_and_written_through_the_supervisor(any_db_env):
    bot_id = make_bot(keywords=["banana"], personality="cheerful")
    searched: list = []

    async def check(client_for, server) -> None:
        remote = client_for(bot_id)
        settings = await remote.settings_at_start(bot_id)
        assert settings is not None and settings.token == bot_token("linked") and settings.rules.keywords == ["banana"]

        # A message the rules ignore: the settings only. One they answer: the run's start too, and
        # its memories (looked up by the supervisor's memory), in the same answer.
        ignored = await remote.prepare(_message(bot_id, "hello"))
        assert ignored.decision is False and ignored.rules is not None and ignored.rules.keywords == ["banana"]
        assert ignored.loaded is None and ignored.links is None and ignored.memories is None
        data = await remote.prepare(_message(bot_id, "a banana?"))
        assert data.decision is True and data.links == [] and data.loaded is not None
        assert await data.found_memories() == ["alice likes bananas"]
        assert searched == [(bot_id, "a banana?")]  # not for the message the bot does not answer
        assert data.loaded.bot.personality == "cheerful" and data.loaded.llms["output"].model
        assert data.loaded.limits is not None and data.loaded.history == []

        # The run's first write stores the user message (its id is the run's), the last one the answer.
        user = UserMessageIn(bot_id=999, conversation_key="guild:55", title="#general", content="alice: a banana?",
                             author_id="42", author_name="alice", counted_user="42")
        conversation_id, run_id = await remote.write_run(RunWrite(user_message=user, events=[(1, "thinking", {"step": "x"})]))
        assert conversation_id and run_id
        record = CallRecord(role="synthesizer", provider="ollama", model="m", tokens_in=5, tokens_out=7, latency_ms=12.0)
        end = RunEnd(bot_id=999, author_name="linked", new_messages=[{"role": "assistant", "content": "Yes, a banana."}],
                     records=[record])
        assert await remote.write_run(RunWrite(run_id=run_id, conversation_id=conversation_id,
                                               events=[(2, "done", {"text": "Yes, a banana."})], end=end)) \
            == (conversation_id, run_id)
        loaded = await remote.load(_message(bot_id, "and then?"))
        assert [m["content"] for m in loaded.history] == ["alice: a banana?", "Yes, a banana."]
        with session_scope(readonly=True) as session:
            kinds = session.exec(select(AgentEvent.kind).where(AgentEvent.run_id == run_id).order_by(AgentEvent.seq)).all()
            calls = session.exec(select(LLMCall).where(LLMCall.run_id == run_id)).all()
            stored = session.get(Message, run_id)
        assert kinds == ["thinking", "done"] and stored is not None and stored.content == "alice: a banana?"
        # Written for the bot of the path, whatever the payload said.
        assert [(c.bot_id, c.tokens_in, c.tokens_out) for c in calls] == [(bot_id, 5, 7)]

        # Another bot cannot write into this bot's run or conversation.
        other = client_for(make_bot("intruder"))
        for write in (RunWrite(run_id=run_id, events=[(3, "thinking", {"step": "x"})]),
                      RunWrite(conversation_id=conversation_id, user_message=user)):
            with pytest.raises(NotFoundError, match="has no"):
                await other.write_run(write)

        # /reset forgets the user's part of the conversation.
        assert await remote.forget(bot_id, "guild:55", "42") == 2
        assert (await remote.load(_message(bot_id, "again"))).history == []

    asyncio.run(_with_link(check, OneMemory(searched)))


class ScoringMemory(OneMemory):
    """The supervisor's memory, scripted: a message's similarities to tool texts."""

    def __init__(self, searched: list) -> None:
        super().__init__(searched)
        self.scored: list[tuple[str, list[str]]] = []

    async def similarities(self, text: str, candidates: list[str]) -> list[float]:
        self.scored.append((text, candidates))
        return [0.5 if "time" in c else 0.1 for c in candidates]


def test_one_request_reads_a_message_with_its_memories_and_the_tool_routers_scores(grobot_env, caplog):
    """The bot asks its supervisor once per message it may answer: the settings, the run, the memories
    and the scores of the message against the bot's tools as the database knows them (its built-ins
    and its MCP servers' cached tool lists)."""
    from grobot.core.agents.tool_router import tool_text
    from grobot.core.models import BotMcpServer, McpServer
    from grobot.core.tools.base import ToolSpec

    caplog.set_level(logging.DEBUG, logger="bot_worker.timings")  # GROBOT_TRACE_TIMINGS (bench/fleet.py --stages)
    bot_id = make_bot(keywords=["banana"])
    with session_scope() as session:
        server = McpServer(name="clock", command="clock-server", tools_cache=[
            {"name": "get_current_time", "description": "Get the current time in a time zone."},
            {"name": "set_alarm", "description": "Set an alarm."}])
        session.add(server)
        session.flush()
        session.add(BotMcpServer(bot_id=bot_id, mcp_server_id=server.id, allowed_tools=["get_current_time"]))
    clock = tool_text(ToolSpec(name="clock__get_current_time", description="Get the current time in a time zone.",
                               input_schema={}))
    memory = ScoringMemory([])
    sent: list[str] = []

    async def check(client_for, server) -> None:
        remote = client_for(bot_id)
        real_call = remote.link.call_in_parts

        async def counted(bot, path, body, *, timeout):  # type: ignore[no-untyped-def]
            sent.append(path)
            return await real_call(bot, path, body, timeout=timeout)

        remote.link.call_in_parts = counted
        prepared = await remote.prepare(_message(bot_id, "a banana time?"))
        assert sent == ["store/prepare"]  # one request for all of it
        scores = await prepared.found_scores()
        assert scores is not None and scores[clock] == 0.5 and await prepared.found_memories() == ["alice likes bananas"]
        texts = memory.scored[0][1]
        assert clock in texts and not any("alarm" in t for t in texts)  # an MCP tool the bot may not use is left out
        assert any(t.startswith("files list") for t in texts)  # the built-ins
        traced = [r.getMessage() for r in caplog.records if r.name == "bot_worker.timings" and "read for a message" in r.getMessage()]
        assert re.fullmatch(rf"bot {bot_id}: read for a message \(ms\): vector started [0-9.]+, database [0-9.]+, "
                            r"memories and scores [0-9.]+", traced[0]), traced
        # Not for a message the bot ignores, nor one of several requests (the router scores each part).
        assert (await remote.prepare(_message(bot_id, "hello"))).scores is None
        several = await remote.prepare(_message(bot_id, "a banana, then tell me the time"))
        assert several.loaded is not None and await several.found_scores() is None
        assert len(memory.scored) == 1

    asyncio.run(_with_link(check, memory))


class SlowScoringMemory(ScoringMemory):
    """Its model takes until the test lets it finish."""

    def __init__(self) -> None:
        super().__init__([])
        self.finish = asyncio.Event()

    async def similarities(self, text: str, candidates: list[str]) -> list[float]:
        await self.finish.wait()
        return await super().similarities(text, candidates)


def test_a_bot_gets_its_read_before_the_lookups_which_follow_in_the_same_answer(grobot_env):
    """The read does not wait for the embedding model: the supervisor answers the bot's one request
    with the read first (the bot checks the message and gets ready), then with the memories and the
    scores when they are done."""
    bot_id = make_bot(keywords=["banana"])
    memory = SlowScoringMemory()

    async def check(client_for, server) -> None:
        remote = client_for(bot_id)
        prepared = await asyncio.wait_for(remote.prepare(_message(bot_id, "a banana time?")), 10)
        assert prepared.loaded is not None and prepared.decision is True
        assert prepared.scores is not None and not prepared.scores.done()  # the model is still running
        memory.finish.set()
        scores = await asyncio.wait_for(prepared.found_scores(), 10)
        assert scores is not None and set(scores.values()) == {0.1, 0.5}
        assert await prepared.found_memories() == ["alice likes bananas"]

    asyncio.run(_with_link(check, memory))


def test_notes_files_and_errors_reach_the_bot_as_domain_errors(grobot_env):
    bot_id, other_id = make_bot("notes"), make_bot("other")
    with session_scope() as session:
        files.write_file(session=session, bot_id=bot_id, path="docs/faq.txt", data=b"Opening hours: 9 to 5.")
        foreign = user_notes.add_note(session=session, bot_id=other_id, discord_user_id="42", note="likes tea",
                                      reliability=0.9, source="tool").id

    async def check(client_for, server) -> None:
        remote = client_for(bot_id)
        assert [f["path"] for f in await remote.list_files(bot_id)] == ["docs/faq.txt"]
        assert await remote.read_file(bot_id, "docs/faq.txt", 10) == ("Opening ho", True)
        with pytest.raises(NotFoundError):
            await remote.read_file(bot_id, "docs/missing.txt", 10)
        note = await remote.add_note(bot_id, "42", "works at night", 0.8, "tool")
        assert [n["note"] for n in await remote.list_notes(bot_id, "42")] == ["works at night"]
        assert (await remote.update_note(bot_id, "42", note["id"], None, 0.95))["reliability"] == 0.95
        with pytest.raises(NotFoundError, match="not a note about this user"):
            await remote.update_note(bot_id, "42", foreign, "hacked", None)  # another bot's note
        with pytest.raises(ValidationError):
            await remote.add_note(bot_id, "42", "x" * 5000, 0.8, "tool")
        await remote.save_calls(bot_id, None, [], [("42", "has a dog", 0.9)])
        assert {n["note"] for n in await remote.list_notes(bot_id, "42")} == {"works at night", "has a dog"}

        # A bot's token opens its own bot's operations only.
        env = server.env(other_id)
        thief = BotLinkClient(env["GROBOT_SUPERVISOR_URL"], env["GROBOT_SUPERVISOR_TOKEN"])
        try:
            with pytest.raises(ConnectionError, match="403: this token is for another bot"):
                await RemoteBotStore(bot_id, thief).list_notes(bot_id, "42")
        finally:
            await thief.close()

        # Log records of the bot process reach log_entry (through the writer thread's urllib).
        from datetime import datetime

        writer = LinkLogWriter(bot_id, remote.link)
        row = {"bot_id": bot_id, "created_at": datetime.now(UTC), "level": "INFO", "logger": "bot",
               "message": "hello from the bot"}
        assert await asyncio.to_thread(writer, [row]) == 0

    asyncio.run(_with_link(check))
    with session_scope(readonly=True) as session:
        assert session.exec(select(LogEntry.message).where(LogEntry.bot_id == bot_id)).all() == ["hello from the bot"]
        assert session.get(UserNote, foreign).note == "likes tea"


def test_a_bot_process_imports_no_database_layer(grobot_env):
    """Bots reach the database through their supervisor: SQLAlchemy, SQLModel, pydantic and
    cryptography stay out of every bot process (about 30 MiB each, bench/bot_footprint.py)."""
    from bot_worker.spawn import PRELOAD

    code = ("import sys\n"
            f"for name in {PRELOAD!r}: __import__(name)\n"
            "import bot_worker.remote_store, grobot.core.agents.run_store\n"
            "heavy = ('sqlalchemy', 'sqlmodel', 'pydantic', 'pydantic_core', 'cryptography', 'psycopg2')\n"
            "print(sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in heavy}\n"
            "             | {m for m in sys.modules if m in ('grobot.core.db', 'grobot.core.models')}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=grobot_env.environ())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_write_tried_again_after_a_timeout_is_stored_once(grobot_env):
    """A write the bot gave up on may have been stored. The recorder sends its events again
    with the newer ones (``retry``): what was stored is not stored twice, the rest is."""
    from grobot.core.store.run_store_db import DatabaseStore

    bot_id = make_bot("retry")
    store = DatabaseStore()
    user = UserMessageIn(bot_id=bot_id, conversation_key="guild:55", title="#general", content="alice: hi",
                         author_id="42", author_name="alice", discord_message_id="900", counted_user="42")
    end = RunEnd(bot_id=bot_id, author_name="retry", new_messages=[{"role": "assistant", "content": "Hello."}],
                 records=[CallRecord(role="synthesizer", provider="ollama", model="m", tokens_in=3, tokens_out=2)])
    think = [(seq, "thinking", {"step": seq}) for seq in range(1, 4)]

    async def scenario() -> list:
        # The first write (user message and event 1) is stored, but the bot hears nothing back.
        await store.write_run(RunWrite(user_message=user, events=think[:1]))
        # So the next one carries it again, with event 2 (and the user message: the run has no id yet).
        ids = await store.write_run(RunWrite(user_message=user, events=think[:2], retry=True))
        # Event 3 is stored, unheard of; the final write carries it again with the end.
        await store.write_run(RunWrite(run_id=ids[1], conversation_id=ids[0], events=think[2:3], retry=True))
        final = RunWrite(run_id=ids[1], conversation_id=ids[0], events=[*think[2:3], (4, "done", {"text": "Hello."})],
                         end=end, retry=True)
        results = [ids, await store.write_run(final)]
        results.append(await store.write_run(final))  # and the final write itself, once more
        return results

    results = asyncio.run(scenario())
    assert results[0] == results[1] == results[2]
    conversation_id, run_id = results[0]
    with session_scope(readonly=True) as session:
        contents = session.exec(select(Message.content).where(Message.conversation_id == conversation_id)
                                .order_by(Message.id)).all()
        seqs = session.exec(select(AgentEvent.seq).where(AgentEvent.run_id == run_id).order_by(AgentEvent.seq)).all()
        calls = session.exec(select(LLMCall).where(LLMCall.bot_id == bot_id)).all()
    assert contents == ["alice: hi", "Hello."] and seqs == [1, 2, 3, 4] and len(calls) == 1


def test_a_supervisor_that_cannot_do_it_is_unavailable_not_an_error(grobot_env):
    """A failure in the supervisor (its database down, say) is something to try again later;
    a domain error (a token encrypted with another key) is final."""
    from bot_worker.remote_store import StoreUnavailable
    from grobot.core.errors import GroBotError, SecretKeyError

    async def scenario() -> None:
        class Broken(LocalBotStore):
            async def settings_at_start(self, bot_id: int):
                raise SecretKeyError("the token was encrypted with another secret key")

            async def list_notes(self, bot_id: int, user: str):
                raise RuntimeError("could not connect to server")

            async def list_files(self, bot_id: int):
                raise StoreUnavailable("the database is busy or unreachable (database is locked)")

        async def check(client_for, server) -> None:
            remote = client_for(3)
            with pytest.raises(StoreUnavailable, match="could not connect to server"):
                await remote.list_notes(3, "42")
            with pytest.raises(StoreUnavailable, match=r"database is locked"):  # the bot tries again later
                await remote.list_files(3)
            with pytest.raises(GroBotError, match="another secret key") as caught:
                await remote.settings_at_start(3)
            assert not isinstance(caught.value, ConnectionError)

        await with_link(check, Broken())

    asyncio.run(scenario())
