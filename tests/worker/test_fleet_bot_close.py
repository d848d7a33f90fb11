"""A bot process closed soon after its gateway session started ends without a traceback."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from bot_worker.fleet_bot import FleetBot, ProcessConfig
from bot_worker.remote_store import BotSettings


def test_events_dispatched_after_close_are_dropped_not_scheduled_on_a_closed_loop():
    """discord.py's close() leaves its READY task waiting for guilds; when it ends, it dispatches
    'ready' on the closed client. That raised in the task (the client's loop is gone) and put a
    traceback in the bot's log whenever a bot was stopped soon after it started."""
    failures: list[dict] = []

    async def scenario() -> set[str]:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: failures.append(context))
        bot = BotSettings(id=3, name="closing", enabled=True, version="", gateway_revision=1)
        client = FleetBot(bot, ProcessConfig(), store=SimpleNamespace(), link=None)  # type: ignore[arg-type]
        await client.close()
        before = asyncio.all_tasks()
        client.dispatch("ready")
        client.dispatch("guild_available", SimpleNamespace(id=1))
        scheduled = {task.get_name() for task in asyncio.all_tasks() - before}
        await asyncio.sleep(0)  # a scheduled handler would run (and fail) here
        return scheduled

    scheduled = asyncio.run(scenario())

    assert scheduled == set(), f"handlers scheduled on the closed client: {scheduled}"
    assert failures == [], failures


def test_a_notice_that_meets_the_closed_http_session_at_shutdown_is_dropped_quietly():
    """A cooldown or limit notice sent while the bot shuts down meets aiohttp's closed session
    ("Session is closed", a RuntimeError): it is dropped with an info line, not a traceback."""
    async def send(*_args, **_kwargs):
        raise RuntimeError("Session is closed")

    message = SimpleNamespace(channel=SimpleNamespace(send=send), to_reference=lambda **_: None)

    async def scenario() -> None:
        bot = BotSettings(id=4, name="closing", enabled=True, version="", gateway_revision=1)
        client = FleetBot(bot, ProcessConfig(), store=SimpleNamespace(), link=None)  # type: ignore[arg-type]
        await client.close()
        await client._notice(message, "Slow down a little")  # type: ignore[arg-type]

    asyncio.run(scenario())
