"""One bot: ``python -m bot_worker.bot_process --bot-id N``.

Runs the bot's client (:class:`bot_worker.fleet_bot.FleetBot`) with its dependencies: its store
(its supervisor over the bot link, :mod:`bot_worker.remote_store`; a bot process imports no database
layer and holds no database connection), its memory client and its MCP sessions, closed when it
ends. The bot's configuration is read for every message, so personality, LLM, rules and tools
change without a restart. Exit codes tell the supervisor what happened.
"""


from __future__ import annotations

import argparse
import asyncio
import ctypes
import logging
import os
import signal
import sys
import time
from typing import cast

import aiohttp
import discord

from bot_worker.bot_link import BotLinkClient
from bot_worker.discord_io import redirect
from bot_worker.exit_codes import EXIT_CRASH, EXIT_INTENTS, EXIT_OK, EXIT_TOKEN_REJECTED, EXIT_UNREACHABLE
from bot_worker.fleet_bot import FleetBot, ProcessConfig
from bot_worker.remote_store import BotSettings, BotStore, LinkLogWriter, RemoteBotStore
from bot_worker.timings import trace_if_asked
from grobot.core.bot_errors import TOKEN_REJECTED, intent_error
from grobot.core.errors import GroBotError
from grobot.core.memory import MemoryPort, NoopMemory
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)



def _die_with_parent() -> None:
    """Linux: get SIGTERM when the supervisor dies, so no bot outlives it as an orphan."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


# --------------------------------------------------------------------------- entry


async def _record_exit(store: BotStore, bot_id: int, detail: str, *, rejected_revision: int | None = None) -> None:
    try:
        await store.record_exit(bot_id, detail, pid=os.getpid(), rejected_revision=rejected_revision)
    except Exception as exc:  # the supervisor records it from the exit code
        logger.warning("Could not record the error: %s", type(exc).__name__)


async def _settings_with_retry(store: BotStore, bot_id: int) -> BotSettings | None:
    """The bot's settings and token at start; waits while they cannot be read (a domain error,
    such as a token encrypted with another secret key, ends the process)."""
    delay = 0.5
    while True:
        try:
            return await store.settings_at_start(bot_id)
        except GroBotError:
            raise
        except Exception as exc:
            logger.warning("Cannot read the bot's settings at start (%s); retrying in %.1f s",
                           exc if isinstance(exc, ConnectionError) else type(exc).__name__, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)


def _store_for(bot_id: int, link: BotLinkClient | None) -> BotStore:
    """The bot's data: through its supervisor, or (started by hand) the database itself."""
    if link is not None:
        return cast(BotStore, RemoteBotStore(bot_id, link))  # its methods are made from the link's table
    from bot_worker.local_store import LocalBotStore

    return LocalBotStore()


async def run(bot_id: int, config: ProcessConfig, link: BotLinkClient | None) -> int:
    """Run the bot until it is stopped; returns the exit code. ``link``: to its supervisor
    (None: started by hand, the bot uses the database itself)."""
    from grobot.core.memory.runtime import close_memory

    store = _store_for(bot_id, link)
    memory: MemoryPort = link.memory() if link is not None else NoopMemory()
    client: list[FleetBot] = []
    try:
        return await _run(bot_id, config, store, link, memory, client)
    except Exception as exc:
        logger.exception("Bot process failed")
        await _record_exit(store, bot_id, f"{type(exc).__name__}: {str(exc)[:300]}")
        return EXIT_CRASH
    finally:
        if client:
            await client[0].deps.aclose()  # its MCP sessions
        await close_memory(memory)
        await store.close()


async def _run(bot_id: int, config: ProcessConfig, store: BotStore, link: BotLinkClient | None,
               memory: MemoryPort, started: list[FleetBot]) -> int:
    settings = get_settings()
    redirect(settings.discord_api_base, settings.discord_gateway_url)
    try:
        bot = await _settings_with_retry(store, bot_id)
    except GroBotError as exc:
        logger.error("Cannot start: %s", exc)
        await _record_exit(store, bot_id, str(exc)[:300])
        return EXIT_CRASH
    if bot is None or not bot.enabled or not bot.token:
        logger.info("Nothing to run (bot deleted, disabled or without a token)")
        return EXIT_OK
    token = bot.token
    client = FleetBot(bot, config, store, link, memory)
    started.append(client)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: loop.create_task(client.close()))
    try:
        await client.run_until_closed(token)
    except discord.LoginFailure:
        await _record_exit(store, bot_id, TOKEN_REJECTED, rejected_revision=client.revision)
        return EXIT_TOKEN_REJECTED
    except discord.PrivilegedIntentsRequired:
        await _record_exit(store, bot_id, intent_error(client.privileged))
        return EXIT_INTENTS
    except discord.ConnectionClosed as exc:
        if exc.code == 4004:
            await _record_exit(store, bot_id, TOKEN_REJECTED, rejected_revision=client.revision)
            return EXIT_TOKEN_REJECTED
        if exc.code == 4014:
            await _record_exit(store, bot_id, intent_error(client.privileged))
            return EXIT_INTENTS
        await _record_exit(store, bot_id, f"Discord closed the connection (code {exc.code})")
        return EXIT_CRASH
    except (TimeoutError, aiohttp.ClientError, OSError, discord.GatewayNotFound) as exc:
        # Network, DNS or proxy: one line (no traceback), and the supervisor retries with backoff.
        reason = str(exc)[:300] or type(exc).__name__
        logger.error("Cannot reach Discord at %s: %s", settings.discord_api_base, reason)
        await _record_exit(store, bot_id, f"cannot reach Discord: {reason}")
        return EXIT_UNREACHABLE
    return client.exit_code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot_worker.bot_process")
    parser.add_argument("--bot-id", type=int, required=True)
    args = parser.parse_args(argv)
    _die_with_parent()
    from grobot.core.logs import configure_logging, set_process_bot_id

    settings = get_settings()
    link = BotLinkClient.from_env()
    if link is None:  # started by hand: this process uses the database itself
        from grobot.core.db import set_application_name

        set_application_name(f"grobot-bot-{args.bot_id}")
    set_process_bot_id(args.bot_id)
    handler = configure_logging(level=settings.log_level, to_database=True,
                                writer=LinkLogWriter(args.bot_id, link) if link is not None else None)
    trace_if_asked(settings)
    started = time.monotonic()
    try:
        code = asyncio.run(run(args.bot_id, ProcessConfig.from_settings(settings), link))
    except Exception:
        logger.exception("Bot process failed")
        code = EXIT_CRASH
    finally:
        if handler is not None:
            handler.close()
    logger.debug("Bot process ran %.1f s", time.monotonic() - started)
    return code


def forked_main(bot_id: int, env: dict[str, str] | None = None) -> None:
    """Entry of a bot forked by the supervisor's fork server (``GROBOT_SPAWN=fork``).

    ``env``: what the supervisor sets for this bot only (the fork server's environment was
    copied when it started, e.g. before the link had an address).
    """
    os.environ.update(env or {})
    os.setsid()  # like exec mode: Ctrl-C in a terminal reaches the supervisor only
    # The fork server hands every child its "supervisor alive" pipe and the resource tracker's
    # pipe; a bot needs neither, and holding them would keep the fork server (and so the bot,
    # through the parent-death signal) alive after the supervisor dies.
    from multiprocessing import forkserver, resource_tracker

    for fd in (getattr(forkserver._forkserver, "_forkserver_alive_fd", None),
               getattr(resource_tracker._resource_tracker, "_fd", None)):
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
    setattr(forkserver._forkserver, "_forkserver_alive_fd", None)  # noqa: B010 (private: mypy does not know them)
    setattr(resource_tracker._resource_tracker, "_fd", None)  # noqa: B010
    sys.argv = ["bot_worker.bot_process", "--bot-id", str(bot_id)]
    get_settings.cache_clear()
    if "grobot.core.db" in sys.modules:  # never share a connection pool with the fork server
        from grobot.core.db import dispose_engines

        dispose_engines()
    sys.exit(main(["--bot-id", str(bot_id)]))


if __name__ == "__main__":
    sys.exit(main())
