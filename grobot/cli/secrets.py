"""``secrets rotate``: re-encrypt every stored secret with a new key."""

from __future__ import annotations

import argparse

from grobot.cli.main import COMMAND_HELP
from grobot.core.db import session_scope
from grobot.core.services import secrets_rotation


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("secrets", help=COMMAND_HELP["secrets"])
    cmds = parser.add_subparsers(dest="secrets_command", metavar="ACTION")
    cmds.required = True
    rotate = cmds.add_parser(
        "rotate",
        help="re-encrypt every secret with a new key",
        description=(
            "With GROBOT_SECRET_KEY set, put the new key first and the old one after a comma "
            "(GROBOT_SECRET_KEY=NEW,OLD), run this, then keep only NEW (one key alone is refused). "
            "Without it, a new key is generated into the data dir."
        ),
    )
    rotate.set_defaults(func=_rotate)


def _rotate(args: argparse.Namespace) -> int:
    count = secrets_rotation.rotate_key(session_factory=session_scope)
    print(f"{count} secrets re-encrypted with the new key")
    return 0
