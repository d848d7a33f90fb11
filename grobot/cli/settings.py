"""``settings list|get|set``: the global configuration in the ``setting`` table (defaults of every bot)."""

from __future__ import annotations

import argparse
import logging

from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import print_json, print_table
from grobot.core.db import session_scope
from grobot.core.services import app_settings

logger = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("settings", help=COMMAND_HELP["settings"])
    cmds = parser.add_subparsers(dest="settings_command", metavar="ACTION")
    cmds.required = True

    lst = cmds.add_parser("list", help="every setting with its value and default")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_list)

    get = cmds.add_parser("get", help="one setting's value")
    get.add_argument("key", metavar="KEY", choices=sorted(app_settings.DEFAULTS))
    get.set_defaults(func=_get)

    set_ = cmds.add_parser("set", help="change one setting", description=(
        "Known keys: " + ", ".join(sorted(app_settings.DEFAULTS)) + ". Daily limits: 0 or 'unlimited' = no limit."))
    set_.add_argument("key", metavar="KEY", choices=sorted(app_settings.DEFAULTS))
    set_.add_argument("value", metavar="VALUE")
    set_.set_defaults(func=_set)


def _list(args: argparse.Namespace) -> int:
    keys = tuple(sorted(app_settings.DEFAULTS))
    with session_scope(readonly=True) as session:
        values = app_settings.get_values(keys, session=session)
    if args.json:
        print_json(values)
    else:
        print_table([(k, values[k], app_settings.DEFAULTS[k]) for k in keys], ["KEY", "VALUE", "DEFAULT"])
    return 0


def _get(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        print(app_settings.get_values((args.key,), session=session)[args.key])
    return 0


def _set(args: argparse.Namespace) -> int:
    with session_scope() as session:
        app_settings.set_value(args.key, args.value, session=session)
        value = app_settings.get_values((args.key,), session=session)[args.key]
    print(f"{args.key} = {value}")
    return 0
