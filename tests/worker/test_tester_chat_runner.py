"""The supervisor's Test Chat runner over its real link (the ``tester_chat`` group), as the web app uses it
(:mod:`grobot.core.tester_chat_link`): woken instead of polled, events streamed live, runs stopped
(issue 15 item 6), and the checks a Discord message passes (cooldown, limits)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from sqlmodel import select

from bot_worker.bot_link import Answer
from bot_worker.link_server import BotLinkServer
from bot_worker.tester_chat_runner import ChatRunner, serve
from grobot.core import db, tester_chat_link
from grobot.core.agents import events as events_module
from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.flood import COOLDOWN_NOTICE
from grobot.core.models import AgentEvent, AppUser, LLMCall, Message, MessageStatus
from grobot.core.services import bots, tester_chat, users
from tests.fakes.llm import Reply, use_fake_llm
from tests.helpers import async_wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def service(grobot_env) -> AsyncIterator[tuple[ChatRunner, tester_chat_link.Runner]]:
    runner = ChatRunner("sup-test", concurrency=4)
    server = BotLinkServer(lambda report: Answer(ok=True),
                           groups={"tester_chat": lambda bot_id, op, payload: serve(runner, op, payload)})
    url = await server.start()
    try:
        yield runner, tester_chat_link.Runner("sup-test", url)
    finally:
        await runner.shutdown()
        await server.stop()
        await runner.deps.aclose()


def _bot(name: str, **fields: object) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name, user_cooldown_seconds=0, **fields).id or 0


def _send(bot_id: int, text: str, author: str = "app-user:1") -> int:
    with session_scope() as session:
        user = session.exec(select(AppUser)).first() or users.create_user(session=session, username="tess",
                                                                         password=users.generate_password())
        conv = tester_chat.open_session(bot_id, user.id or 0, session=session)
        return tester_chat.submit(conv.id or 0, text, session=session, author_id=author, author_name="tess").id or 0


def _status(run_id: int) -> tuple[str, str]:
    with session_scope(readonly=True) as session:
        return tester_chat.run_status(run_id, session=session)


def _stored_kinds(run_id: int) -> list[str]:
    with session_scope(readonly=True) as session:
        return list(session.exec(select(AgentEvent.kind).where(AgentEvent.run_id == run_id)
                                 .order_by(AgentEvent.seq)).all())


async def _events_until(link: tester_chat_link.Runner, run_id: int, stop_at: str | None = None,
                        on_stop: object = None) -> list[tester_chat_link.FeedEvent]:
    seen: list[tester_chat_link.FeedEvent] = []
    async for event in tester_chat_link.follow(link, run_id):
        seen.append(event)
        if stop_at is not None and event.kind == stop_at and on_stop is not None:
            await on_stop()  # type: ignore[operator]
            on_stop = None
    return seen


async def _collect(stream) -> list[tester_chat_link.FeedEvent]:
    return [event async for event in stream]


async def test_a_woken_runner_claims_at_once_and_streams_the_answer(service, fake_llm) -> None:
    runner, link = service
    bot_id = _bot("streamer")
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script(Reply(text="Hello there, tester", chunks=4, chunk_delay=0.1))
    run_id = _send(bot_id, "hi")
    # No poll: following with claim=1 claims it, and the page listens from the run's start.
    events = await asyncio.wait_for(_collect(tester_chat_link.follow(link, run_id, claim=True)), 30)
    kinds = [e.kind for e in events]
    assert kinds.count("token") >= 2, kinds  # streamed in pieces, not in one go
    assert "".join(e.data["text"] for e in events if e.kind == "token") == "Hello there, tester"
    assert kinds[-1] == "done" and [e.index for e in events] == list(range(len(events)))
    await async_wait_for(lambda: _status(run_id)[0] == "done", timeout=10)
    # A page that reloads reads the rest from any index (here: only the end).
    again = [e async for e in tester_chat_link.follow(link, run_id, after=events[-2].index)]
    assert [e.kind for e in again] == ["done"]
    with pytest.raises(tester_chat_link.NotHere):
        async for _ in tester_chat_link.follow(link, run_id + 999):
            pass


async def test_a_run_followed_mid_way_replays_its_events_then_goes_live_each_once_in_order(service,
                                                                                          fake_llm) -> None:
    """A page opened while the run runs (from its start) or one that resumes (after the last event it
    showed) reads every event exactly once, in order: the events so far, then the live ones."""
    runner, link = service
    bot_id = _bot("replayer")
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script(Reply(text="one two three four five six", chunks=6, chunk_delay=0.3))
    run_id = _send(bot_id, "count")
    first: list[tester_chat_link.FeedEvent] = []
    late: dict[str, asyncio.Task[list[tester_chat_link.FeedEvent]]] = {}
    async for event in tester_chat_link.follow(link, run_id, claim=True):
        first.append(event)
        if event.kind == "token" and not late:  # mid-way: the run has started to answer, and goes on
            late["reopened"] = asyncio.create_task(_collect(tester_chat_link.follow(link, run_id)))
            late["resumed"] = asyncio.create_task(_collect(tester_chat_link.follow(link, run_id, after=event.index)))
            cut = len(first)
    assert late, [e.kind for e in first]
    reopened, resumed = await asyncio.wait_for(late["reopened"], 30), await asyncio.wait_for(late["resumed"], 30)
    assert first[-1].kind == "done" and [e.index for e in first] == list(range(len(first)))
    assert cut < len(first) - 1  # the late followers were opened before the answer ended
    assert [(e.index, e.kind, e.data) for e in reopened] == [(e.index, e.kind, e.data) for e in first]
    assert [(e.index, e.kind, e.data) for e in resumed] == [(e.index, e.kind, e.data) for e in first[cut:]]
    assert "".join(e.data["text"] for e in reopened if e.kind == "token") == "one two three four five six"


async def test_stop_closes_the_llm_stream_and_ends_the_run_once_as_cancelled(service, fake_llm) -> None:
    runner, link = service
    bot_id = _bot("slowpoke")
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script(Reply(text=" ".join(f"w{i}" for i in range(40)), chunks=40, chunk_delay=0.25))
    run_id = _send(bot_id, "tell me a long story")
    assert await tester_chat_link.wake(link) == [run_id]

    async def stop() -> None:
        assert await tester_chat_link.cancel(link, run_id, "stopped by tess")

    events = await asyncio.wait_for(_events_until(link, run_id, stop_at="token", on_stop=stop), 30)
    final = [e for e in events if e.kind in ("done", "error")]
    assert len(final) == 1 and final[0].kind == "error" and final[0].data.get("cancelled") is True
    assert final[0].data["message"] == "the run was cancelled (stopped by tess)"
    await async_wait_for(lambda: _status(run_id)[0] == MessageStatus.CANCELLED.value, timeout=10)
    assert _status(run_id)[1] == "the run was cancelled (stopped by tess)"
    kinds = _stored_kinds(run_id)
    assert [k for k in kinds if k in ("done", "error")] == ["error"]
    await async_wait_for(lambda: fake_llm.hangups >= 1, timeout=10, message="the LLM stream was not closed")
    with session_scope(readonly=True) as session:
        assert session.exec(select(Message).where(Message.status == "running")).all() == []
        # The words streamed before the stop are kept as the (partial) answer.
        shown = "".join(e.data["text"] for e in events if e.kind == "token")
        answer = session.exec(select(Message.content).where(Message.role == "assistant")
                              .order_by(Message.id.desc())).first()
        assert shown and answer == shown
        # The call cut short is counted: what the model read and wrote before the stop (estimated).
        calls = session.exec(select(LLMCall).where(LLMCall.run_id == run_id)).all()
        assert [(c.error, c.tokens_in > 0, c.tokens_out > 0) for c in calls] == [("stopped", True, True)], calls
    assert await tester_chat_link.cancel(link, run_id, "again") is False  # nothing left to stop


async def test_stop_abandons_a_running_tool_call_and_the_server_keeps_working(service, fake_llm) -> None:
    from tests.ui.chat import stdio_server

    runner, link = service
    bot_id = _bot("tooly", agent_mode="native")
    use_fake_llm(fake_llm, bot_id=bot_id)
    server = await asyncio.to_thread(stdio_server, bot_id, "ok", "slow")
    fake_llm.script(Reply(tool_calls=[{"name": f"{server}__sleep", "arguments": {"seconds": 60}}]))
    run_id = _send(bot_id, "sleep a minute")
    assert await tester_chat_link.wake(link) == [run_id]

    async def stop() -> None:
        assert await tester_chat_link.cancel(link, run_id, "stopped by tess")

    events = await asyncio.wait_for(_events_until(link, run_id, stop_at="tool_call", on_stop=stop), 30)
    results = [e for e in events if e.kind == "tool_result"]
    assert len(results) == 1 and results[0].data["abandoned"] is True
    assert results[0].data["content"] == f"Tool {server}__sleep was abandoned: the run was cancelled"
    assert [e.kind for e in events if e.kind in ("done", "error")] == ["error"]
    await async_wait_for(lambda: _status(run_id)[0] == "cancelled", timeout=10)

    # The same server answers the next run at once (its session was not broken by the abandoned call).
    fake_llm.script(Reply(tool_calls=[{"name": f"{server}__echo", "arguments": {"text": "still here"}}]),
                    Reply(text="It said: still here"))
    second = _send(bot_id, "echo please")
    await tester_chat_link.wake(link)
    events = await asyncio.wait_for(_events_until(link, second), 30)
    echo = [e for e in events if e.kind == "tool_result"]
    assert echo and echo[0].data["is_error"] is False and "still here" in echo[0].data["content"]
    assert events[-1].kind == "done"


async def test_test_chat_keeps_the_bots_cooldown_like_discord(service, fake_llm) -> None:
    runner, link = service
    bot_id = _bot("cool")
    with session_scope() as session:
        bots.update_bot(bots.get_bot(bot_id, session=session), {"user_cooldown_seconds": 60}, session=session)
    use_fake_llm(fake_llm, bot_id=bot_id)
    first = _send(bot_id, "one")
    await tester_chat_link.wake(link)
    assert (await asyncio.wait_for(_events_until(link, first), 30))[-1].kind == "done"
    second = _send(bot_id, "two")
    await tester_chat_link.wake(link)
    events = await asyncio.wait_for(_events_until(link, second), 30)
    assert [e.kind for e in events] == ["error"]
    assert events[0].data["message"].startswith(COOLDOWN_NOTICE.split("{")[0])
    await async_wait_for(lambda: _status(second)[0] == "error", timeout=10)
    other = _send(bot_id, "three", author="app-user:2")  # another tester is not held back
    await tester_chat_link.wake(link)
    assert (await asyncio.wait_for(_events_until(link, other), 30))[-1].kind == "done"


async def test_a_failed_message_sent_again_is_answered_in_place_despite_the_cooldown(service, fake_llm) -> None:
    """Retry after a failure: the cooldown the failed answer started is given back, and the same message is
    answered in its place (no second copy of the question, nothing of the failed run left)."""
    runner, link = service
    bot_id = _bot("retried")
    with session_scope() as session:
        bots.update_bot(bots.get_bot(bot_id, session=session), {"user_cooldown_seconds": 600}, session=session)
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script_for(lambda body: True, Reply(status=400, error="the model is unwell"), persistent=True)
    asked = _send(bot_id, "soup of the day?")
    failed = await asyncio.wait_for(_collect(tester_chat_link.follow(link, asked, claim=True)), 30)
    assert failed[-1].kind == "error"
    await async_wait_for(lambda: _status(asked)[0] == "error", timeout=10)

    fake_llm.reset()  # the model is well again: it echoes
    with session_scope() as session:
        tester_chat.retry(asked, session=session)
    with pytest.raises(ValidationError, match="only a failed or stopped message"):
        with session_scope() as session:
            tester_chat.retry(asked, session=session)  # a second Retry finds it waiting already
    # Followed with claim=1 while its failed try's feed is still kept: the new try is claimed and streamed.
    events = await asyncio.wait_for(_collect(tester_chat_link.follow(link, asked, claim=True)), 30)
    assert events[-1].kind == "done", events[-1].data
    assert "".join(e.data["text"] for e in events if e.kind == "token") == "Echo: soup of the day?"
    await async_wait_for(lambda: _status(asked) == ("done", ""), timeout=10)
    with session_scope(readonly=True) as session:
        conv = tester_chat.latest_session(bot_id, session.exec(select(AppUser)).first().id, session=session)
        stored = [(m.role, m.content) for m in tester_chat.messages(conv.id, session=session)]
    assert stored == [("user", "soup of the day?"), ("assistant", "Echo: soup of the day?")]
    assert "error" not in _stored_kinds(asked)


async def test_the_late_end_of_a_failed_try_does_not_end_the_message_sent_again(service, fake_llm,
                                                                                monkeypatch) -> None:
    """Retry at once after a failure, before the runner has written the end of the failed try: that late
    write leaves the message sent again waiting, and a page following it sees its answer (not "not here")."""
    runner, link = service
    bot_id = _bot("late end")
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script_for(lambda body: True, Reply(status=400, error="the model is unwell"), persistent=True)
    release, written = threading.Event(), threading.Event()
    real_fail = tester_chat.fail

    def late_fail(*args: object, **kwargs: object) -> None:
        release.wait(60)
        try:
            real_fail(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            written.set()

    monkeypatch.setattr(tester_chat, "fail", late_fail)
    asked = _send(bot_id, "soup of the day?")
    failed = await asyncio.wait_for(_collect(tester_chat_link.follow(link, asked, claim=True)), 30)
    assert failed[-1].kind == "error"
    await async_wait_for(lambda: _status(asked)[0] == "error", timeout=10)  # the chain stored its end
    fake_llm.reset()
    with session_scope() as session:
        tester_chat.retry(asked, session=session)
    release.set()  # the runner's own write of the failed try's end comes now
    await async_wait_for(written.is_set, timeout=30)
    assert _status(asked)[0] == "pending"
    events = await asyncio.wait_for(_collect(tester_chat_link.follow(link, asked, claim=True)), 30)
    assert events[-1].kind == "done", events[-1].data
    assert "".join(e.data["text"] for e in events if e.kind == "token") == "Echo: soup of the day?"


async def test_a_follow_of_a_message_waiting_for_a_free_slot_waits_for_its_claim(service, fake_llm) -> None:
    """Every slot of the runner is busy when the page follows its new message: the follow waits for the
    claim (as the running answer ends) and streams the answer, instead of saying the run is not there."""
    runner, link = service
    runner.concurrency = 1
    polls: list[list[int]] = []
    real_poll = runner.poll

    async def counted_poll() -> list[int]:
        claimed = await real_poll()
        polls.append(claimed)
        return claimed

    runner.poll = counted_poll  # type: ignore[method-assign]
    bot_id = _bot("one at a time")
    use_fake_llm(fake_llm, bot_id=bot_id)
    first_end = threading.Event()
    fake_llm.script(Reply(text="first answer", hold_end=first_end))
    first = _send(bot_id, "first")
    first_events = tester_chat_link.follow(link, first, claim=True)
    assert (await asyncio.wait_for(anext(first_events), 30)).kind  # the first run holds the only slot
    second = _send(bot_id, "second")
    second_follow = asyncio.create_task(_collect(tester_chat_link.follow(link, second, claim=True)))
    try:
        await async_wait_for(lambda: len(polls) >= 2 or second_follow.done(), timeout=30)  # asked, not claimed
        assert _status(second)[0] == "pending"
    finally:
        first_end.set()
    events = await asyncio.wait_for(second_follow, 30)
    assert events[-1].kind == "done", events[-1].data
    assert "".join(e.data["text"] for e in events if e.kind == "token") == "Echo: second"
    rest = [e async for e in first_events]
    assert rest[-1].kind == "done"


class _LockedDatabase:
    """Another program holds the SQLite database's write lock (a backup, a sqlite3 shell) until released."""

    def __init__(self, path: str) -> None:
        self._connection = sqlite3.connect(path, isolation_level=None)
        self._connection.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        if self._connection is not None:
            self._connection.execute("ROLLBACK")
            self._connection.close()
            self._connection = None  # type: ignore[assignment]


@pytest.fixture
def lock_database(grobot_env, monkeypatch) -> Iterator[Callable[[float], None]]:
    """``lock_database(seconds)``: another program holds the database's write lock for ``seconds``;
    GroBot's writers give up on it after 0.2 s (instead of 30)."""
    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_MS", 200)
    db.dispose_engines()
    held: list[_LockedDatabase] = []

    def lock(seconds: float) -> None:
        held.append(_LockedDatabase(str(grobot_env.data_dir / "grobot.db")))
        asyncio.get_running_loop().call_later(seconds, held[-1].release)

    yield lock
    for locked in held:
        locked.release()


async def _locked_from_first_token(link: tester_chat_link.Runner, run_id: int, lock: Callable[[float], None],
                                   seconds: float) -> list[tester_chat_link.FeedEvent]:
    """The run's events; the database is locked from its first words on, for ``seconds``."""
    async def on_token() -> None:
        lock(seconds)

    return await asyncio.wait_for(_events_until(link, run_id, stop_at="token", on_stop=on_token), 60)


async def test_an_answer_ending_while_the_database_is_locked_is_stored_once_it_is_free(
        service, fake_llm, lock_database, caplog) -> None:
    caplog.set_level(logging.WARNING)
    runner, link = service
    bot_id = _bot("patient")
    use_fake_llm(fake_llm, bot_id=bot_id)
    words = "Patience pays: this answer arrives in ten small pieces while the database stays locked."
    fake_llm.script(Reply(text=words, chunks=10, chunk_delay=0.1))
    run_id = _send(bot_id, "hi")
    assert await tester_chat_link.wake(link) == [run_id]

    events = await _locked_from_first_token(link, run_id, lock_database, 2.5)

    assert events[-1].kind == "done", events[-1].data  # not "the answer could not be saved"
    assert _status(run_id) == ("done", "")
    with session_scope(readonly=True) as session:
        answers = session.exec(select(Message.content).where(Message.role == "assistant")).all()
    assert answers == [words]
    assert f"Storing the end of run {run_id} failed (the database is busy or unreachable (database is locked))" \
        in caplog.text


async def test_a_run_whose_end_cannot_be_stored_for_long_does_not_stay_running(
        service, fake_llm, lock_database, monkeypatch, caplog) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(events_module, "END_RETRY_SECONDS", 0.5)  # the chain gives up before the lock goes
    runner, link = service
    bot_id = _bot("unlucky")
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script(Reply(text="one two three four", chunks=4, chunk_delay=0.1))
    run_id = _send(bot_id, "hi")
    assert await tester_chat_link.wake(link) == [run_id]

    events = await _locked_from_first_token(link, run_id, lock_database, 3.0)

    assert events[-1].kind == "error"
    assert events[-1].data["message"] == ("the answer could not be saved: the database is busy or unreachable "
                                          "(database is locked)")
    # Once the database is free again, the run ends as the tester saw it: failed, not "running".
    await async_wait_for(lambda: _status(run_id)[0] == "error", timeout=20, message=f"run {run_id} still open")
    assert _status(run_id)[1] == events[-1].data["message"]
    assert f"Could not write the end of Test Chat run {run_id}" in caplog.text
