"""Last module the fork server preloads: warms the database layer, then freezes what was
loaded, so forked bots share it.

CPython's cyclic garbage collector writes into every object it examines; in a forked
child that copies each memory page the collector walks through, until every bot holds a
private copy of the code it inherited. ``gc.freeze()`` moves everything the fork server
has loaded into a permanent generation the collector never examines, so those pages stay
shared between the bots (see the ``gc.freeze`` documentation).

Before that, the ORM mappers are configured and one connection is opened and closed
again: SQLAlchemy's first-use set-up (mapper configuration, dialect initialisation) then
happens once here instead of in every bot (about 5 MiB of private memory per bot). The
pool is empty when the bots are forked, so no connection is ever shared. Importing this
module does it; only :mod:`bot_worker.spawn` lists it (after the bot code it preloads).
"""

from __future__ import annotations

import gc
import logging

from sqlalchemy.orm import configure_mappers
from sqlmodel import select

from grobot.core.db import get_engine, session_scope
from grobot.core.models import BotStatus

logger = logging.getLogger(__name__)


def warm_database() -> None:
    """Configure the mappers and run one query, then close the connection (best effort)."""
    try:
        configure_mappers()
        with session_scope(readonly=True) as session:
            session.exec(select(BotStatus).limit(1)).all()
        get_engine().dispose()
    except Exception as exc:  # the database may be down: the bots then set up on their own
        logger.warning("fork server: database warm-up skipped (%s)", type(exc).__name__)


warm_database()
gc.collect()
gc.freeze()
