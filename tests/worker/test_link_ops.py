"""The bot link's table of operations: one entry serves an operation end to end, on the bot of the path only."""

from __future__ import annotations

import asyncio
import inspect
from datetime import UTC, datetime

import pytest
from sqlmodel import select

from bot_worker.link_ops import INT, OPS, Arg, Codec, Op
from bot_worker.local_store import LocalBotStore
from bot_worker.remote_store import BotStore, RemoteBotStore
from grobot.core.agents.council import CouncilPort
from grobot.core.agents.run_store import RunStore
from grobot.core.db import session_scope
from grobot.core.errors import GroBotError
from grobot.core.models import LogEntry
from grobot.core.services import files, tester_chat, user_notes
from tests.worker.link_harness import make_bot, with_link


class EchoStore(LocalBotStore):
    """A store with one more operation (what adding one takes besides its table entry)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int, str, int]] = []

    async def echo(self, bot_id: int, text: str, times: int) -> dict[str, object]:
        self.calls.append((bot_id, text, times))
        return {"bot": bot_id, "text": text * times}


def test_one_entry_in_the_table_serves_a_new_operation_end_to_end(grobot_env, monkeypatch):
    shout = Codec(dump=lambda text: text.upper(), load=lambda text, bot_id: f"{text}!")
    result = Codec(load=lambda data, bot_id: (data["bot"], data["text"]))
    monkeypatch.setitem(OPS, "echo", Op("echo", "echo", (Arg("text", shout), Arg("times", INT, 2)), result=result))
    store = EchoStore()

    async def check(client_for, server) -> None:
        remote = client_for(5)
        # The bot's arguments as its method takes them (its bot id ignored: the path's counts), each
        # encoded and decoded by its codec, the default filled in, the result decoded.
        assert await remote.call("echo", 999, "hi") == (5, "HI!HI!")
        assert await remote.call("echo", 5, text="yo", times=1) == (5, "YO!")
        assert store.calls == [(5, "HI!", 2), (5, "YO!", 1)]

    asyncio.run(with_link(check, store))


def test_an_unknown_operation_is_a_404_and_a_bad_payload_a_400(grobot_env):
    store = LocalBotStore()

    async def check(client_for, server) -> None:
        remote = client_for(5)
        status, data = await remote.link.call(5, "store/no_such_op", {}, timeout=5)
        assert (status, data["kind"]) == (404, "bad_request") and "unknown operation" in data["error"]
        with pytest.raises(GroBotError, match="unknown operation 'no_such_op'"):
            await remote.request("no_such_op", {})
        with pytest.raises(ValueError, match="no operation 'no_such_op'"):
            await remote.call("no_such_op")  # refused before it is sent
        status, data = await remote.link.call(5, "store/read_file", {"path": "a.txt"}, timeout=5)  # no max_chars
        assert (status, data["kind"]) == (400, "bad_request") and "max_chars" in data["error"]

    asyncio.run(with_link(check, store))


def test_a_payload_cannot_act_on_anothermake_bot(any_db_env):
    mine, other = make_bot("mine"), make_bot("other")
    with session_scope() as session:
        files.write_file(session=session, bot_id=other, path="secret.txt", data=b"the other bot's file")
        user_notes.add_note(session=session, bot_id=other, discord_user_id="42", note="likes tea", reliability=0.9,
                            source="tool")
        conversation = tester_chat.create_session(other, session=session)
        other_run = tester_chat.submit(conversation.id, "hello", session=session).id
        key = {"bot_id": other, "conversation_key": conversation.key, "run_id": other_run, "author_id": "42"}

    async def check(client_for, server) -> None:
        remote = client_for(mine)
        # Whatever bot a payload names, the operation acts on the bot of the path.
        assert await remote.request("list_notes", {"bot_id": other, "user": "42"}) == []
        assert await remote.request("list_files", {"bot_id": other}) == []
        loaded = await remote.request("load", {"bot_id": other, "msg": key})
        assert (loaded["bot_id"], loaded["run_id"], loaded["bot"]["name"]) == (mine, None, "mine")
        message = {"bot_id": other, "conversation_key": "guild:1", "content": "hi", "author_id": "42",
                   "author_name": "alice", "run_id": other_run}
        data = await remote.request("prepare", {"msg": message})
        assert data["settings"]["id"] == mine and data["settings"]["name"] == "mine"
        row = {"bot_id": other, "created_at": datetime.now(UTC).isoformat(), "level": "INFO", "logger": "bot",
               "message": "whose log?"}
        assert await remote.request("logs", {"rows": [row]}) == 0
        # Nor may it name the bot as an argument of an operation: the table refuses such an entry.
        with pytest.raises(ValueError, match="comes from the path"):
            Op("bad", "bad", (Arg("bot_id", INT),))

    asyncio.run(with_link(check))
    with session_scope(readonly=True) as session:
        assert session.exec(select(LogEntry.bot_id).where(LogEntry.message == "whose log?")).all() == [mine]


def _parameters(method) -> list[str]:
    return [name for name in inspect.signature(method).parameters if name != "self"]


def test_the_remote_store_has_every_method_of_the_bots_ports_from_the_table():
    """What the bot process, the chain and the council call on their store, each made from one entry
    (``prepare`` keeps the settings read last, and asks the ``prepare`` entry for the rest)."""
    wanted = {name for port in (BotStore, RunStore, CouncilPort) for name, value in vars(port).items()
              if inspect.iscoroutinefunction(value) and name not in ("close", "prepare")}
    assert wanted <= {op.method for op in OPS.values()}
    assert _parameters(RemoteBotStore.prepare) == _parameters(RunStore.prepare)
    assert OPS["prepare"].method == "read_message" and OPS["prepare"].served_by == "prepare_for_bot"
    for name in wanted:
        port = next(p for p in (BotStore, RunStore, CouncilPort) if name in vars(p))
        assert _parameters(getattr(RemoteBotStore, name)) == _parameters(getattr(port, name)), name
    for op in OPS.values():
        assert callable(getattr(LocalBotStore, op.served_by)), op.name
        assert _parameters(getattr(RemoteBotStore, op.method)) == list(op.signature.parameters), op.name
