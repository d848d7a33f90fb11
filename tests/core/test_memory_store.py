"""Long-term memory in a real (embedded) ChromaDB with the offline embedding model."""

from __future__ import annotations

import chromadb

from grobot.core.memory import RELEVANT_DISTANCE, MemoryPort
from grobot.core.memory.vector_store import ChromaMemory


def test_remember_and_search_finds_the_closest_memory(grobot_env):
    memory = ChromaMemory(chromadb.PersistentClient(path=str(grobot_env.data_dir / "chroma")))
    assert isinstance(memory, MemoryPort)
    memory.add(1, ["Alice loves green tea", "The deploy runs every Friday", "Bob's cat is called Miso"],
               {"user_id": "42", "kind": "fact"})
    memory.add(2, ["Bot two knows about tea as well"], {})
    hits = memory.query(1, "what does Alice like to drink?", k=2)
    assert hits[0].text == "Alice loves green tea"
    assert hits[0].metadata["user_id"] == "42" and hits[0].metadata["kind"] == "fact"
    assert all("Bot two" not in h.text for h in hits)  # one collection per bot
    assert memory.count(1) == 3
    memory.drop_bot(1)
    assert memory.count(1) == 0 and memory.count(2) == 1


async def test_async_port_and_forgetting_a_user(grobot_env):
    memory = ChromaMemory(chromadb.PersistentClient(path=str(grobot_env.data_dir / "chroma")))
    await memory.remember(7, ["Carol works night shifts"], {"user_id": "c"})
    await memory.remember(7, ["Dan plays the cello"], {"user_id": "d"})
    assert await memory.search(7, "who plays music?", k=1) == ["Dan plays the cello"]
    memory.delete(7, where={"user_id": "d"})
    assert [m.text for m in memory.list(7)] == ["Carol works night shifts"]


def test_search_keeps_relevant_memories_and_add_can_skip_duplicates(grobot_env):
    memory = ChromaMemory(chromadb.PersistentClient(path=str(grobot_env.data_dir / "chroma")))
    memory.add(3, ["Alice loves green tea", "The deploy runs every Friday"], {})
    assert memory.add(3, ["Alice loves green tea!", "alice loves green tea", "Bob's cat is called Miso"], {},
                      dedupe=True) and memory.count(3) == 3
    hits = memory.query(3, "what does Alice like to drink?", k=5, max_distance=RELEVANT_DISTANCE)
    assert [h.text for h in hits] == ["Alice loves green tea"]
    assert [m.text for m in memory.list(3, limit=2)] == ["Bob's cat is called Miso", "The deploy runs every Friday"]
    assert memory.bot_ids() == [3]


async def test_housekeeping_caps_each_bot_to_its_newest_memories_and_drops_deleted_bots(grobot_env):
    from grobot.core.memory.local import LocalMemory

    store = ChromaMemory(chromadb.PersistentClient(path=str(grobot_env.data_dir / "chroma")))
    for text in ("Alice loves green tea", "The deploy runs every Friday", "Bob's cat is called Miso",
                 "Carol works night shifts", "Dan plays the cello"):
        store.add(1, [text], {})
    store.add(2, ["a bot deleted while no worker ran"], {})
    local = LocalMemory(store)
    try:
        assert await local.prune({1}, keep=0) == ([2], 0)  # no cap: only the deleted bot goes
        assert store.count(1) == 5
        assert await local.prune({1}, keep=3) == ([], 2)
        assert [m.text for m in store.list(1)] == ["Dan plays the cello", "Carol works night shifts",
                                                   "Bob's cat is called Miso"]
        assert await local.prune({1}, keep=3) == ([], 0)  # within the cap: nothing to do
    finally:
        local.close()


async def test_a_bot_without_memories_is_looked_up_without_a_store_call_until_it_gets_one(grobot_env):
    import asyncio
    import threading

    from grobot.core.memory.local import LocalMemory

    chroma = ChromaMemory(chromadb.PersistentClient(path=str(grobot_env.data_dir / "chroma")))
    counted: list[int] = []
    adding = threading.Event()
    release = threading.Event()

    class Store:
        def lookup(self, bot_id: int, *args, **kwargs):
            counted.append(bot_id)
            return chroma.lookup(bot_id, *args, **kwargs)

        def add(self, *args, **kwargs):
            adding.set()
            release.wait(10)
            return chroma.add(*args, **kwargs)

        def __getattr__(self, name: str):
            return getattr(chroma, name)

    local = LocalMemory(Store())
    try:
        assert await local.search(5, "what does Alice drink?") == []
        assert await local.search(5, "what does Alice drink?") == [] and counted == [5]  # no second store call
        # A lookup while an add is still running finds nothing yet, and does not hide what the add stores.
        add = asyncio.ensure_future(local.remember(5, ["Alice loves green tea"], {}))
        await asyncio.to_thread(adding.wait, 10)
        assert await local.search(5, "what does Alice drink?") == []
        release.set()
        await add
        assert await local.search(5, "what does Alice like to drink?") == ["Alice loves green tea"]
    finally:
        release.set()
        local.close()
