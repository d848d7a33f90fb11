"""``admin create``: the first (or another) administrator of the web app."""

from __future__ import annotations

import argparse
import sys

from grobot.cli.main import COMMAND_HELP
from grobot.core.db import session_scope
from grobot.core.models import Role
from grobot.core.services import users


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("admin", help=COMMAND_HELP["admin"])
    cmds = parser.add_subparsers(dest="admin_command", metavar="ACTION")
    cmds.required = True
    create = cmds.add_parser(
        "create",
        help="create an admin (password from stdin, or generated and printed once)",
    )
    create.add_argument("--username", required=True)
    create.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    create.add_argument(
        "--if-none", action="store_true", help="do nothing when an admin exists already (for make run)"
    )
    create.set_defaults(func=_create)


def _create(args: argparse.Namespace) -> int:
    password = None
    if args.password_stdin:  # standard input is read only when asked to (it may be a pipe that never ends)
        password = sys.stdin.readline().rstrip("\n") or None
    generated = password is None
    if generated:
        password = users.generate_password()
    with session_scope() as session:
        if args.if_none and users.count_admins(session=session) > 0:
            return 0
        users.create_user(session=session, username=args.username, password=password, role=Role.ADMIN.value)
    if generated:
        print(f"admin '{args.username}' created with the password: {password}")
        print("(shown once: write it down, or change it with: python -m grobot users passwd)")
    else:
        print(f"admin '{args.username}' created")
    return 0
