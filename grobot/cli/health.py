"""``health``: is everything GroBot needs there and answering?"""

from __future__ import annotations

import argparse

from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import print_json, print_table
from grobot.core.services import health


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("health", help=COMMAND_HELP["health"])
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=_health, debug_loggers=(health.__name__,))  # -v: the traceback of a check that crashed


def _health(args: argparse.Namespace) -> int:
    checks = health.run_checks()
    if args.json:
        print_json([c.as_dict() for c in checks])
    else:
        print_table([(c.name, "ok" if c.ok else "FAIL", c.detail) for c in checks], ["CHECK", "STATE", "DETAIL"])
    return 0 if all(c.ok for c in checks) else 1
