"""Long-term memory in a real (embedded) ChromaDB with the offline embedding model."""

from __future__ import annotations

import chromadb

from grobot.core.memory import MemoryPort
from grobot.core.memory.store import ChromaMemory


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


def test_forgetting_a_user_and_deleting_a_bot_remove_their_memories(grobot_env):
    from grobot.core.db import session_scope
    from grobot.core.memory.store import get_memory
    from grobot.core.services import bots, discord_users

    get_memory.cache_clear()
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="rememberer").id
    memory = get_memory()
    memory.add(bot_id, ["Erin likes jazz"], {"user_id": "erin"})
    memory.add(bot_id, ["Finn likes rock"], {"user_id": "finn"})
    counts = discord_users.forget_user_everywhere(bot_id=bot_id, discord_user_id="erin")
    assert counts["memories"] == 1
    assert [m.text for m in memory.list(bot_id)] == ["Finn likes rock"]
    with session_scope() as session:
        bots.delete_bot(bots.get_bot(bot_id, session=session), session=session)
    assert memory.count(bot_id) == 0
    get_memory.cache_clear()
