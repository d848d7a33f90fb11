"""How a bot process tells its supervisor why it ended (its exit code).

Shared by :mod:`bot_worker.bot_process` and :mod:`bot_worker.supervisor`, which must not
import the bot process module (it imports discord.py).
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_CRASH = 1
EXIT_TOKEN_REJECTED = 3  # Discord rejected the token: not retried until it changes
EXIT_INTENTS = 4  # a privileged intent is not enabled in the developer portal
EXIT_REPLACED = 5  # fenced: the lease lapsed or another process holds the bot
EXIT_UNREACHABLE = 6  # Discord (or the proxy in DISCORD_API_BASE) cannot be reached: retried with backoff
