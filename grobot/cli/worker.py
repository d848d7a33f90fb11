"""``worker``: run the bot fleet supervisor (same as ``python -m bot_worker``)."""

from __future__ import annotations

import argparse
import logging

from grobot.cli.main import COMMAND_HELP

logger = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("worker", help=COMMAND_HELP["worker"])
    parser.set_defaults(func=_worker, creates_database=True)


def _worker(args: argparse.Namespace) -> int:
    from bot_worker.__main__ import main

    logging.getLogger().handlers.clear()  # the worker configures its own logging
    return main([])
