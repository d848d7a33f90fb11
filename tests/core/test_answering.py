"""The one way of a message (:mod:`grobot.core.answering`): prepared, then the checks in order, each
once, and the dependencies passed in (two hosts in one process keep apart)."""

from __future__ import annotations

import asyncio

from sqlmodel import select

from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.types import IncomingMessage
from grobot.core.answering import FloodGate, admit, answer, answer_message, prepare
from grobot.core.db import session_scope
from grobot.core.flood import BUSY_NOTICE
from grobot.core.models import AgentEvent, Message
from grobot.core.services import bots, tester_chat, users
from grobot.core.store.local import local_deps
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.base import EmptyCatalog
from tests.fakes.llm import Reply, use_fake_llm
from tests.helpers import answered


def _bot(name: str = "pathy", **fields: object) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name, **fields).id or 0


def _discord(bot_id: int, text: str, author: str = "42", **fields: object) -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key="guild:9", content=text, author_id=author,
                           author_name="alice", channel_id="9", guild_id="1", **fields)  # type: ignore[arg-type]


async def test_each_check_in_order_and_what_a_discord_user_is_told(grobot_env, fake_llm) -> None:
    bot_id = _bot(user_cooldown_seconds=60, max_concurrent_runs=1)
    use_fake_llm(fake_llm, bot_id=bot_id)
    deps, gate = ChainDeps(store=DatabaseStore()), FloodGate()

    async def checked(msg: IncomingMessage, flood: FloodGate = gate):  # type: ignore[no-untyped-def]
        return admit(await prepare(msg, deps), flood)

    # Reply rules first: a message not meant for the bot is dropped before anything is counted.
    silent_read = await prepare(_discord(bot_id, "chatter between others"), deps)
    assert silent_read.decision is False and silent_read.loaded is None  # nothing more is read for it
    silent = admit(silent_read, gate)
    assert silent.decision is False and not silent.admitted and silent.refusal == ""
    # Meant for the bot: admitted, and it holds the bot's one run slot until released.
    first = await checked(_discord(bot_id, "@bot hi", mentions_bot=True))
    assert first.admitted and first.decision is True
    # The same user again: the cooldown, told once per window.
    again = await checked(_discord(bot_id, "@bot again", mentions_bot=True))
    assert again.refusal.startswith("Slow down a little") and again.notify
    assert (await checked(_discord(bot_id, "@bot and again", mentions_bot=True))).notify is False
    # Another user while the one slot is taken: busy.
    busy = await checked(_discord(bot_id, "@bot me too", author="43", mentions_bot=True))
    assert busy.refusal == BUSY_NOTICE and busy.notify
    first.release()
    first.release()  # once only: the slot is not freed twice
    assert gate.runs.active == 0
    # Told "busy, try again in a moment", that user is not answered: the retry is taken, not cooled down.
    retry = await checked(_discord(bot_id, "@bot me too, again", author="43", mentions_bot=True))
    assert retry.admitted and retry.refusal == ""
    retry.release()
    assert (await checked(_discord(bot_id, "@bot now?", author="44", mentions_bot=True))).admitted

    # Over the daily limit: refused before the cooldown and the slot, with the limit's words.
    with session_scope() as session:
        bots.update_bot(bots.get_bot(bot_id, session=session), {"user_daily_message_limit": 1}, session=session)
    assert (await answered(_discord(bot_id, "@bot first", author="45", mentions_bot=True), tools=EmptyCatalog())).text
    refused = await checked(_discord(bot_id, "@bot", author="45", mentions_bot=True), FloodGate())
    assert not refused.admitted and "limit" in refused.refusal.lower() and refused.notify


async def test_a_refused_test_chat_message_ends_with_one_stored_error(grobot_env, fake_llm) -> None:
    bot_id = _bot(user_cooldown_seconds=60)
    use_fake_llm(fake_llm, bot_id=bot_id)
    with session_scope() as session:
        user = users.create_user(session=session, username="tess", password=users.generate_password())
        conv = tester_chat.open_session(bot_id, user.id or 0, session=session)
        ids = [tester_chat.submit(conv.id or 0, text, session=session, author_id="app-user:1", author_name="tess").id
               for text in ("one", "two")]
    deps, gate = local_deps(), FloodGate()
    seen: list[str] = []

    async def sink(event) -> None:  # type: ignore[no-untyped-def]
        seen.append(event.kind.value)

    results = []
    for run_id, text in zip(ids, ("one", "two")):
        msg = IncomingMessage(bot_id=bot_id, conversation_key=conv.key, content=text, author_id="app-user:1",
                              author_name="tess", platform="test_chat", run_id=run_id)
        results.append(await answer_message(msg, deps, gate, sink=sink, tools=EmptyCatalog()))
    assert results[0].error is None and results[0].text
    assert results[1].error is not None and results[1].error.startswith("Slow down a little")
    assert seen.count("done") == 1 and seen.count("error") == 1 and seen[-1] == "error"
    with session_scope(readonly=True) as session:
        second = session.get(Message, ids[1])
        assert second is not None and second.status == "error" and second.error.startswith("Slow down")
        kinds = session.exec(select(AgentEvent.kind).where(AgentEvent.run_id == ids[1])).all()
    assert kinds == ["error"]
    assert len(fake_llm.chat_requests()) == 1  # the refused one cost no LLM call


class CountingStore(DatabaseStore):
    """A host's store that counts the runs written through it."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    async def write_run(self, write):  # type: ignore[no-untyped-def]
        self.writes += 1
        return await super().write_run(write)


async def test_two_hosts_in_one_process_keep_their_own_dependencies(grobot_env, fake_llm) -> None:
    """No process global: each run writes through the store its host passed in."""
    bot_id = _bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script(Reply(text="first answer", chunks=3, chunk_delay=0.05), Reply(text="second answer", chunks=3,
                                                                                    chunk_delay=0.05))
    a, b = ChainDeps(store=CountingStore()), ChainDeps(store=CountingStore())

    async def one(deps: ChainDeps, text: str) -> str:
        prepared = await prepare(_discord(bot_id, text, mentions_bot=True), deps)
        admission = admit(prepared, FloodGate())
        return (await answer(prepared, admission, deps, tools=EmptyCatalog())).text

    texts = await asyncio.gather(one(a, "@bot first"), one(b, "@bot second"))
    assert sorted(texts) == ["first answer", "second answer"]
    assert a.store.writes >= 1 and b.store.writes >= 1  # type: ignore[attr-defined]
    await a.aclose()
    await b.aclose()


async def test_a_message_the_rules_leave_unanswered_says_why_for_a_command(grobot_env, fake_llm) -> None:
    bot_id = _bot("ruled", allowed_channel_ids=["7"], reply_in_dms=False)
    use_fake_llm(fake_llm, bot_id=bot_id)
    elsewhere = await answered(_discord(bot_id, "@bot hi", mentions_bot=True))  # in channel 9
    assert not elsewhere.replied and elsewhere.refusal == "Sorry, I don't answer in this channel."
    dm = await answered(_discord(bot_id, "hi", is_dm=True))
    assert not dm.replied and dm.refusal == "Sorry, I don't answer direct messages; ask me in a server channel."
    assert not fake_llm.chat_requests()
    in_thread = await answered(_discord(bot_id, "@bot hi", mentions_bot=True, parent_channel_id="7"))
    assert in_thread.replied and not in_thread.refusal  # a thread of channel 7
