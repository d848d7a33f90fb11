"""The bot fleet: a supervisor process and one discord.py process per bot.

Only this package imports discord; ``grobot.core`` never does.

Run it with ``python -m bot_worker`` (or ``python -m grobot worker``). Environment, besides
the settings of :mod:`grobot.core.settings` (``GROBOT_POLL_SECONDS``, ``DISCORD_API_BASE``,
``DISCORD_GATEWAY_URL`` ...):

=================================  =======  ==================================================
``GROBOT_HEARTBEAT_SECONDS``       5        bot heartbeats; a bot silent for 3 periods is replaced
``GROBOT_LEASE_SECONDS``           15       lease of a bot held by a supervisor (3 heartbeats)
``GROBOT_STOP_GRACE_SECONDS``      3        SIGTERM, then SIGKILL after this
``GROBOT_SPAWN``                   fork     ``fork``: bots forked from a preloaded fork server;
                                            ``exec``: ``python -m bot_worker.bot_process --bot-id N``
``GROBOT_START_INTERVAL``          0.08     stagger between two bot starts (0.25 with exec)
``GROBOT_BACKOFF_INITIAL``/``MAX``  1 / 300  crash backoff (doubling; reset after 10 min healthy)
``GROBOT_INTENT_RETRY_SECONDS``    60       retry period of a bot whose privileged intent is off
``GROBOT_GUILD_READY_TIMEOUT``     2        discord.py ``guild_ready_timeout``
``GROBOT_STREAM_EDIT_SECONDS``     1        at most one edit per message per this period
``GROBOT_TEST_CHAT_POLL_SECONDS``  0.5      how often pending Test Chat messages are claimed
``GROBOT_TEST_CHAT_CONCURRENCY``   4        Test Chat runs at once per supervisor
``GROBOT_HOUSEKEEPING_SECONDS``    300      log/event retention and usage repair
``GROBOT_TRACE_TIMINGS``           unset    log per-message timings of the bot processes
=================================  =======  ==================================================

``kill -USR1 <supervisor pid>`` prints the stacks of its threads.
"""

import sys

# httpx imports its optional command-line client (click, rich, pygments: about 8 MiB in
# every process) whenever those packages are installed, and Reflex installs them. The
# worker never uses that client: a ``None`` entry makes the import fail, and httpx falls
# back to its own stub (a documented ``sys.modules`` behaviour).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
