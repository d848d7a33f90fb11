"""Last module the fork server preloads: freezes what was loaded, so forked bots share it.

CPython's cyclic garbage collector writes into every object it examines; in a forked
child that copies each memory page the collector walks through, until every bot holds a
private copy of the code it inherited. ``gc.freeze()`` moves everything the fork server
has loaded into a permanent generation the collector never examines, so those pages stay
shared between the bots (see the ``gc.freeze`` documentation). Importing this module does
it; only :mod:`bot_worker.spawn` lists it (after the bot code it preloads).
"""

from __future__ import annotations

import gc

gc.collect()
gc.freeze()
