"""CPU of a plain message's read in the supervisor (``read_for_message``), the bot's settings kept.

    .venv/bin/python bench/read_cost.py [--reads 1000] [--rounds 5]

On a fresh SQLite database with one bot and a conversation of 20 exchanges, reads one message of
that bot the way the supervisor's bot link does for each message (its settings kept under their
version: :mod:`grobot.core.store.bot_cache`), and prints the thread CPU time per read of each
round and their median, and the SQL statements one read runs. Run it on two commits alternately
to compare them (the figure moves with the machine's load).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=1000, help="reads per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="grobot-read-cost-")
    os.environ.update(DATABASE_URL=f"sqlite:///{data}/grobot.db", GROBOT_DATA_DIR=data)

    from sqlalchemy import event

    from grobot.core import migrations
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.db import get_engine, session_scope
    from grobot.core.services import bots, conversations
    from grobot.core.store.bot_cache import BotSettingsCache
    from grobot.core.store.run_store_db import read_for_message

    migrations.upgrade()
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="bench").id or 0
        conversation = conversations.get_or_create_conversation(session=session, bot_id=bot_id, key="guild:55",
                                                                title="bench", guild_id="1", channel_id="55")
        for i in range(20):
            conversations.insert_user_message(session=session, conversation_id=conversation.id,
                                              content=f"question {i}", author_id="42", author_name="alice")
            conversations.append_run_messages(session=session, conversation_id=conversation.id,
                                              messages=[{"role": "assistant", "content": f"answer {i}"}])
    message = IncomingMessage(bot_id=bot_id, conversation_key="guild:55", content="hi", author_id="42",
                              author_name="alice", channel_id="55", guild_id="1", mentions_bot=True)
    cache = BotSettingsCache()

    def read() -> None:
        with session_scope(readonly=True) as session:
            read_for_message(message, session=session, cache=cache)

    for _ in range(200):  # warm up: the settings kept, the statements compiled
        read()
    statements: list[str] = []
    engine = get_engine()
    listener = lambda conn, cursor, statement, *rest: statements.append(statement)
    event.listen(engine, "before_cursor_execute", listener)
    read()
    event.remove(engine, "before_cursor_execute", listener)
    per_read = []
    for _ in range(args.rounds):
        start = time.thread_time()
        for _ in range(args.reads):
            read()
        per_read.append((time.thread_time() - start) * 1000 / args.reads)
    print(f"read_for_message: {len(statements)} SQL statements; ms CPU per read by round: "
          + " ".join(f"{ms:.3f}" for ms in per_read) + f"; median {statistics.median(per_read):.3f}")


if __name__ == "__main__":
    main()
