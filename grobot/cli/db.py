"""``db upgrade`` / ``db current``."""

from __future__ import annotations

import argparse

from grobot.cli.main import COMMAND_HELP
from grobot.core import migrations


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("db", help=COMMAND_HELP["db"])
    cmds = parser.add_subparsers(dest="db_command", metavar="ACTION")
    cmds.required = True
    up = cmds.add_parser("upgrade", help="migrate the database to the newest schema")
    up.set_defaults(func=_upgrade, creates_database=True)
    cur = cmds.add_parser("current", help="print the schema revision of the database")
    cur.set_defaults(func=_current)


def _upgrade(args: argparse.Namespace) -> int:
    migrations.upgrade()
    print(f"database at revision {migrations.current_revision()}")
    return 0


def _current(args: argparse.Namespace) -> int:
    current, head = migrations.current_revision(), migrations.head_revision()
    print(f"{current or 'empty'} (newest: {head})")
    return 0 if current == head else 1
