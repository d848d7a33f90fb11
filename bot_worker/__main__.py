"""``python -m bot_worker``: the fleet supervisor."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

logger = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot_worker",
                                     description="Run the GroBot fleet: one process per enabled bot.")
    parser.parse_args(argv)
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 <pid>`: where is it stuck?
    from bot_worker.supervisor import Supervisor
    from bot_worker.supervisor_config import SupervisorConfig
    from bot_worker.timings import trace_if_asked
    from grobot.core.db import set_application_name
    from grobot.core.errors import GroBotError
    from grobot.core.logs import configure_logging
    from grobot.core.settings import get_settings

    try:
        settings = get_settings()
        set_application_name("grobot-worker")
        # Records about one bot (``extra={"bot_id": N}``: its process, its Test Chat runs) go to its Logs tab too.
        configure_logging(level=settings.log_level, to_database=True)
        trace_if_asked(settings)
        supervisor = Supervisor(config=SupervisorConfig.from_env())
        return asyncio.run(supervisor.run())
    except GroBotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
