"""A real bot link inside the test's process: a ``BotLinkServer`` serving a ``LocalBotStore``
through the table of operations, and ``RemoteBotStore`` clients of it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot_worker.bot_link import Answer, BotLinkClient
from bot_worker.link_ops import dispatch
from bot_worker.link_server import BotLinkServer
from bot_worker.local_store import LocalBotStore
from bot_worker.remote_store import RemoteBotStore
from grobot.core.db import session_scope
from grobot.core.services import bots


def bot_token(name: str) -> str:
    """A token of Discord's shape, for bot ``name``."""
    return f"MTIzNDU2Nzg5MDEy{name}.GhIjKl.{name}MnOpQrStUvWxYz0123456789"


def make_bot(name: str = "linked", **fields: Any) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name, token=bot_token(name), **fields).id or 0


ClientFor = Callable[[int], RemoteBotStore]


async def with_link(check: Callable[[ClientFor, BotLinkServer], Awaitable[None]],
                    store: LocalBotStore | None = None) -> None:
    """``check(client_for, server)`` against a bot link serving ``store``; ``client_for(bot_id)``:
    a bot's store through it (with that bot's token)."""
    served = store if store is not None else LocalBotStore()
    server = BotLinkServer(lambda report: Answer(ok=True),
                           store=lambda bot_id, op, payload: dispatch(served, bot_id, op, payload))
    await server.start()
    clients: list[BotLinkClient] = []

    def client_for(bot_id: int) -> RemoteBotStore:
        env = server.env(bot_id)
        clients.append(BotLinkClient(env["GROBOT_SUPERVISOR_URL"], env["GROBOT_SUPERVISOR_TOKEN"]))
        return RemoteBotStore(bot_id, clients[-1])

    try:
        await check(client_for, server)
    finally:
        for client in clients:
            await client.close()
        await server.stop()
