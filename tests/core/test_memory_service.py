"""The supervisor's memory (the ``memory`` group of its real link, real Chroma, real embedder) and its clients."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import col, select

from grobot.cli.main import main as cli
from grobot.core.db import session_scope
from grobot.core.errors import MemoryUnavailable, NotFoundError, ValidationError
from grobot.core.link_client import KEY_PREFIX, AdminLink, advertise, prune_orphans
from grobot.core.link_scope import admin_token
from grobot.core.models import Setting, Supervisor, utcnow
from grobot.core.services import bots, discord_users, fleet, health, memories
from tests.memory_helpers import memory_service

UNAVAILABLE = "memory service unavailable: is the bot worker running?"


def make_bot(name: str = "rememberer") -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name).id


def test_the_memory_tab_api_lists_searches_adds_and_deletes(grobot_env):
    bot_id = make_bot()
    with memory_service(), session_scope(readonly=True) as s:
        tea = memories.add_memory(bot_id, "Alice loves green tea", session=s, user_id="42")
        memories.add_memory(bot_id, "The deploy runs every Friday", session=s)
        memories.add_memory(bot_id, "Bob's cat is called Miso", session=s, user_id="7")

        page = memories.list_memories(bot_id, session=s, limit=2)
        assert [m.text for m in page.items] == ["Bob's cat is called Miso", "The deploy runs every Friday"]
        assert page.total == 3 and page.items[0].user_id == "7" and page.items[0].source == "admin"
        assert [m.text for m in memories.list_memories(bot_id, session=s, limit=2, offset=2).items] == \
            ["Alice loves green tea"]
        # Semantic search: the related memory only, the unrelated ones fall below the relevance threshold.
        found = memories.search_memories(bot_id, "what does Alice like to drink?", session=s)
        assert [m.text for m in found] == ["Alice loves green tea"] and found[0].distance < 0.6
        assert memories.search_memories(bot_id, "what does Alice like to drink?", session=s, user_id="7") == []
        assert memories.count_memories(bot_id, session=s) == 3
        assert memories.count_memories(bot_id, session=s, user_id="42") == 1

        memories.delete_memory(bot_id, tea, session=s)
        with pytest.raises(NotFoundError, match="has no memory"):
            memories.delete_memory(bot_id, tea, session=s)
        assert memories.delete_user_memories(bot_id, "7", session=s) == 1
        assert [m.text for m in memories.list_memories(bot_id, session=s).items] == ["The deploy runs every Friday"]
        with pytest.raises(ValidationError, match="at most 4000 characters"):
            memories.add_memory(bot_id, "x" * 4001, session=s)


async def test_remote_memory_skips_near_duplicates_and_keeps_only_relevant_hits(grobot_env):
    with memory_service() as service:
        remote = service.bot_memory(1)  # as bot 1's process has it: over its link connection, with its token
        await remote.remember(1, ["Carol works night shifts"], {"user_id": "c"})
        await remote.remember(1, ["Carol works night shifts!", "carol works night shifts"], {"user_id": "c"})
        assert service.call(service.local.count(1)) == 1
        assert await remote.search(1, "who works at night?") == ["Carol works night shifts"]
        assert await remote.search(1, "a recipe for pancakes") == []
        await service.close_clients()


def test_a_wrong_or_missing_token_is_refused(grobot_env):
    with memory_service() as service:
        for token in ("", "0" * 64, "admin." + "0" * 64):
            status, answer = AdminLink(service.url, token=token).call("memory", "health", {})
            assert (status, answer) == (401, {"error": "missing or wrong token", "kind": "refused"})
        status, answer = AdminLink(service.url, token=admin_token()).call("memory", "health", {})
        assert status == 200 and answer["result"] == {"ok": True, "embedder_loaded": answer["result"]["embedder_loaded"]}
        assert health._memory().ok


def test_without_a_worker_memory_calls_fail_with_one_clear_line(grobot_env, capsys):
    bot_id = make_bot()
    with session_scope(readonly=True) as s, pytest.raises(MemoryUnavailable, match=UNAVAILABLE):
        memories.list_memories(bot_id, session=s)
    assert cli(["memory", "list", "rememberer"]) == 2
    assert capsys.readouterr().err == f"error: {UNAVAILABLE}\n"
    assert health._memory() == health.Check("memory", False, UNAVAILABLE)
    # A worker that stopped without withdrawing its address: the same error, no traceback.
    with memory_service():
        pass
    assert cli(["memory", "search", "rememberer", "anything"]) == 2
    assert capsys.readouterr().err == f"error: {UNAVAILABLE}\n"


def test_cli_memory_commands_print_json(grobot_env, capsys):
    import json

    make_bot()
    with memory_service():
        assert cli(["memory", "add", "rememberer", "The office closes at 6 pm", "--user", "99", "--json"]) == 0
        memory_id = json.loads(capsys.readouterr().out)["id"]
        assert cli(["memory", "list", "rememberer", "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert listed["total"] == 1 and listed["memories"][0]["id"] == memory_id
        assert listed["memories"][0]["user_id"] == "99"
        assert cli(["memory", "search", "rememberer", "when does the office close?", "--json"]) == 0
        assert [m["text"] for m in json.loads(capsys.readouterr().out)] == ["The office closes at 6 pm"]
        assert cli(["memory", "list", "rememberer"]) == 0
        assert "The office closes at 6 pm" in capsys.readouterr().out
        assert cli(["memory", "delete", "rememberer", memory_id, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == {"deleted": 1}
        assert cli(["memory", "delete", "rememberer"]) == 2
        assert "give either a MEMORY_ID or --user" in capsys.readouterr().err


def test_forgetting_a_user_and_deleting_a_bot_remove_their_memories(grobot_env):
    bot_id = make_bot()
    other = make_bot("other")
    with memory_service() as service, session_scope(readonly=True) as s:
        memories.add_memory(bot_id, "Erin likes jazz", session=s, user_id="erin")
        memories.add_memory(bot_id, "Finn likes rock", session=s, user_id="finn")
        memories.add_memory(other, "Gus likes folk", session=s, user_id="gus")
        counts = discord_users.forget_user_everywhere(bot_id=bot_id, discord_user_id="erin")
        assert counts["memories"] == 1
        assert [m.text for m in memories.list_memories(bot_id, session=s).items] == ["Finn likes rock"]
        with session_scope() as session:
            bots.delete_bot(bots.get_bot(bot_id, session=session), session=session)
        assert service.call(service.local.count(bot_id)) == 0 and bot_id not in service.local.store.bot_ids()
        assert memories.count_memories(other, session=s) == 1


def test_memories_of_a_bot_deleted_while_no_worker_ran_are_pruned(grobot_env):
    bot_id, keep = make_bot(), make_bot("keeper")
    with memory_service() as service:
        service.call(service.local.add(bot_id, ["Hana likes tea"], {}))
        service.call(service.local.add(keep, ["Ivo likes coffee"], {}))
    with session_scope() as session:
        bots.delete_bot(bots.get_bot(bot_id, session=session), session=session)  # no worker: nothing dropped yet
    with memory_service() as service:
        assert service.call(service.local.prune({keep})) == ([bot_id], 0)
        assert service.local.store.bot_ids() == [keep]


def test_forgetting_a_user_without_a_worker_says_what_was_done(grobot_env):
    bot_id = make_bot()
    with pytest.raises(MemoryUnavailable, match=r"profile and notes forgotten \(0 profile\(s\), 0 note\(s\)\), but not"):
        discord_users.forget_user_everywhere(bot_id=bot_id, discord_user_id="erin")


async def test_store_work_runs_off_the_event_loop(grobot_env):
    """The supervisor's leases and heartbeats run on its event loop: embedding must never stall it."""
    import asyncio

    from grobot.core.memory.local import LocalMemory
    from grobot.core.memory.vector_store import ChromaMemory

    local = LocalMemory(ChromaMemory())
    loop = asyncio.get_running_loop()
    ticks: list[float] = []  # when the loop ran a 10 ms timer (a lease renewal, a heartbeat)
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            await asyncio.sleep(0.01)
            ticks.append(loop.time())

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    began = loop.time()
    texts = [f"Person {i} mentioned a fairly long sentence about topic number {i} and its many details" for i in range(30)]
    await local.add(1, texts, {})
    ended = loop.time()
    done.set()
    await task
    local.close()
    # The loop kept running its timers while the texts were embedded (on the loop, it would run none
    # until the end). Counted, not timed: a busy machine delays every tick alike.
    during = [t for t in ticks if began < t < ended]
    assert len(during) >= 3, (len(during), ended - began)


def test_the_address_of_a_crashed_supervisors_service_goes_when_its_supervisor_is_forgotten(grobot_env):
    """A supervisor killed with -9 cannot withdraw its link's row: the sweep of the
    survivors removes it once the dead supervisor itself is pruned."""
    with session_scope() as session:
        fleet.register_supervisor("alive", hostname="here", pid=1, session=session)
        fleet.register_supervisor("crashed", hostname="here", pid=2, session=session)
        advertise("alive", "tcp://127.0.0.1:1001", session=session)
        advertise("crashed", "tcp://127.0.0.1:1002", session=session)
    with session_scope() as session:
        assert prune_orphans(session=session) == 0  # both supervisors are still known
        session.get(Supervisor, "crashed").heartbeat_at = utcnow() - timedelta(hours=2)
    with session_scope() as session:  # the sweep: forget supervisors silent for an hour, then their rows
        assert fleet.prune_supervisors(stale_after=3600, session=session) == 1
        assert prune_orphans(session=session) == 1
    with session_scope(readonly=True) as session:
        keys = set(session.exec(select(Setting.key).where(col(Setting.key).startswith(KEY_PREFIX))).all())
    assert keys == {KEY_PREFIX + "alive"}


def test_a_full_disk_under_the_memory_store_is_said_in_plain_words(grobot_env, monkeypatch):
    from chromadb.api.models.Collection import Collection
    from chromadb.errors import InternalError

    def full_disk(self, *args, **kwargs):  # what Chroma raises when its SQLite file cannot grow
        raise InternalError("Query error: Database error: error returned from database: (code: 13) "
                            "database or disk is full")

    bot_id = make_bot()
    with memory_service(), session_scope(readonly=True) as s:
        monkeypatch.setattr(Collection, "add", full_disk)
        with pytest.raises(MemoryUnavailable) as caught:
            memories.add_memory(bot_id, "Alice loves green tea", session=s)
    assert str(caught.value) == (f"memory service failed: the memory store's disk is full "
                                 f"({grobot_env.data_dir / 'chroma'}): free some space, then try again")
