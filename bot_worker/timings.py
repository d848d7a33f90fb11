"""Per-message timings at DEBUG (``GROBOT_TRACE_TIMINGS=1``): where the platform spends its time.

A bot process logs when each message's read, tools, first token and reply came; its supervisor
logs how its read of the message split (``bench/fleet.py --stages`` prints both).
"""

from __future__ import annotations

import logging
from typing import Any

timings_logger = logging.getLogger("bot_worker.timings")


def trace_if_asked(settings: Any) -> None:
    """Turn the timings on in this process when the settings ask for them."""
    if settings.worker.trace_timings:
        timings_logger.setLevel(logging.DEBUG)
