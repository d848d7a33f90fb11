"""Another user's live Test Chat answer (issue 28, hole 1): a tester, from the Test Chat of the bot
granted to them, points their page at the admin's run on another bot (run ids are sequential), and
at another tester's run on their own bot, then follows and stops it, over the real websocket. They
get none of its words and stop nothing; their own run they do follow and stop. A runner that streams
any run it is asked for (its words from the database) is live: the page's own checks keep the others
out."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from bot_worker.bot_link import Answer, Stream
from bot_worker.link_server import BotLinkServer
from grobot.core import link_client
from grobot.core.db import session_scope
from grobot.core.errors import NotFoundError
from grobot.core.models import Supervisor
from grobot.core.services import conversations, tester_chat
from grobot.pages.tester_chat_state import ChatState, LiveState
from tests.security.attacks import (
    World,
    _live_run,
    name_of,
    opened,
    run_statuses,
    tab,
    world_fixture,  # noqa: F401  (the fixture "world")
)
from tests.security.replay import Sent, replay

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# A followed run's words come from a background task, after the events were handled: this long at most.
ANSWER_SECONDS = 15.0


def aim_at(world: World, run: int) -> list[Sent]:
    """What the attacker sends: the page's live run set to ``run``, followed, stopped."""
    path = tab(world.granted, "chat")
    start_live = f"{name_of(LiveState.follow).rsplit('.', 1)[0]}.start_live"  # public before the fix
    return [opened(world.granted, "chat", False),
            Sent(start_live, {"run_id": run, "status": "running", "question": "?"}, path),
            Sent(LiveState.setvar, {"var_name": "live_id", "value": run}, path),
            Sent(LiveState.follow, {}, path), Sent(LiveState.stop, {}, path)]


async def _every_run_feed(bot_id: int | None, op: str, data: dict) -> object:
    """A runner (the ``tester_chat`` group of a link) that streams the stored events of any run it is
    asked for, and claims and stops none."""
    if op != "events":
        raise NotFoundError("holds no run: nothing to stop here")
    after = int(data.get("after", -1))
    with session_scope(readonly=True) as session:
        stored = conversations.run_events(session=session, run_id=int(data["run_id"]))
        items = [{"i": i, "kind": e.kind, "data": e.data or {}, "t": 0.0} for i, e in enumerate(stored) if i > after]

    async def each() -> AsyncIterator[dict]:
        for item in items:
            yield item

    return Stream(each())


@pytest.fixture
def every_run_runner(world) -> Iterator[None]:
    """:func:`_every_run_feed` on a real link, advertised as a live supervisor's on this host."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = BotLinkServer(lambda report: Answer(ok=True), groups={"tester_chat": _every_run_feed})
    url = asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
    supervisor_id = "sup-every-run"
    with session_scope() as session:
        session.add(Supervisor(id=supervisor_id, hostname=socket.gethostname(), pid=1))
        session.flush()
        link_client.advertise(supervisor_id, url, session=session)
    try:
        yield
    finally:
        with session_scope() as session:
            link_client.withdraw(supervisor_id, session=session)
            supervisor = session.get(Supervisor, supervisor_id)
            if supervisor is not None:
                session.delete(supervisor)
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def test_a_tester_can_neither_read_nor_stop_another_users_live_answer(web_app, world, every_run_runner) -> None:
    token = world.tokens()["tester"]
    answers = [world.canaries[name] for name in ("answer-hidden", "answer-other", "run-hidden", "run-other")]
    with ThreadPoolExecutor(max_workers=2) as pool:  # both at once, each on a tab of its own: the waits overlap
        attempts = [pool.submit(replay, web_app.url, *aim_at(world, run), session=token, watch=(answers, ANSWER_SECONDS))
                    for run in (world.admin_run_hidden, world.other_run)]
        for attempt in attempts:
            assert not [text for text in answers if text in json.dumps(attempt.result())], \
                "the attacker read another user's run"
    assert run_statuses(world) == {run: "pending" for run in world.runs}, "another user's answer was stopped"

    # The control: the tester's own live answer, on the same page, is followed and stopped.
    own = _live_run(world.granted, world.tester, "my question", "my own answer")
    path = tab(world.granted, "chat")
    updates = replay(web_app.url, opened(world.granted, "chat", False), Sent(ChatState.load, {}, path),
                     session=token, watch=(["my own answer"], ANSWER_SECONDS))
    assert "my own answer" in json.dumps(updates)
    replay(web_app.url, opened(world.granted, "chat", False), Sent(ChatState.load, {}, path),
           Sent(LiveState.stop, {}, path), session=token)
    with session_scope(readonly=True) as session:
        assert tester_chat.run_status(own, session=session)[0] == "cancelled"
    assert run_statuses(world) == {run: "pending" for run in world.runs}


def test_the_run_functions_refuse_a_run_of_another_bot_or_of_another_tester(world) -> None:
    """What the page's handlers call (``grobot.pages.tester_chat_runs``) checks the run itself: a run of
    another bot, or of another tester, reads as one that does not exist; an admin's page may follow
    any run of its own bot."""
    from grobot.core.errors import NotFoundError
    from grobot.pages import tester_chat_runs

    tokens = world.tokens()
    for token, bot, run in ((tokens["tester"], world.granted, world.admin_run_hidden),  # another bot
                            (tokens["tester"], world.granted, world.other_run),  # another tester's
                            (tokens["tester"], world.granted, world.admin_run_granted),  # the admin's
                            (tokens["admin"], world.granted, world.admin_run_hidden)):  # another bot's, by an admin
        for call in (lambda: tester_chat_runs.locate_run(token, bot, run),
                     lambda: tester_chat_runs.end_if_abandoned(token, bot, run),
                     lambda: tester_chat_runs.cancel_pending(token, bot, run)):
            with pytest.raises(NotFoundError):
                call()
    assert run_statuses(world) == {run: "pending" for run in world.runs}
    assert tester_chat_runs.locate_run(tokens["admin"], world.granted, world.other_run).status == "pending"
    assert tester_chat_runs.locate_run(tokens["admin"], world.hidden, world.admin_run_hidden).status == "pending"
