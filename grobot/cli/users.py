"""``users list|add|passwd|grant|revoke|disable|enable`` (web app accounts) and ``user forget`` (a Discord user of a
bot)."""

from __future__ import annotations

import argparse
import sys

from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import print_json, print_table
from grobot.core.db import session_scope
from grobot.core.models import Role
from grobot.core.services import bots, discord_users, users


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("users", help=COMMAND_HELP["users"])
    cmds = parser.add_subparsers(dest="users_command", metavar="ACTION")
    cmds.required = True
    lst = cmds.add_parser("list", help="list the accounts")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_list)
    add = cmds.add_parser("add", help="add an account (password from stdin, or generated)")
    add.add_argument("--username", required=True)
    add.add_argument("--role", choices=[r.value for r in Role], default=Role.TESTER.value)
    add.add_argument("--password-stdin", action="store_true")
    add.set_defaults(func=_add)
    passwd = cmds.add_parser("passwd", help="set a new password (from stdin, or generated)")
    passwd.add_argument("username")
    passwd.add_argument("--password-stdin", action="store_true")
    passwd.set_defaults(func=_passwd)
    grant = cmds.add_parser("grant", help="let a tester see a bot (admins see every bot)")
    grant.add_argument("username")
    grant.add_argument("bot", metavar="BOT")
    grant.set_defaults(func=_grant)
    revoke = cmds.add_parser("revoke", help="a tester may no longer see a bot")
    revoke.add_argument("username")
    revoke.add_argument("bot", metavar="BOT")
    revoke.set_defaults(func=_revoke)
    for action, disabled, what in (("disable", True, "disable an account (its sessions end at once)"),
                                   ("enable", False, "enable a disabled account")):
        toggle = cmds.add_parser(action, help=what)
        toggle.add_argument("username")
        toggle.set_defaults(func=_set_disabled, disabled=disabled)

    user = sub.add_parser("user", help=COMMAND_HELP["user"])
    ucmds = user.add_subparsers(dest="user_command", metavar="ACTION")
    ucmds.required = True
    forget = ucmds.add_parser("forget", help="forget what a bot knows of a Discord user (profile, notes, memories)")
    forget.add_argument("bot", metavar="BOT")
    forget.add_argument("discord_user_id", metavar="DISCORD_USER_ID")
    forget.set_defaults(func=_forget)


def _password(args: argparse.Namespace) -> tuple[str, bool]:
    if args.password_stdin:
        value = sys.stdin.readline().rstrip("\n")
        if value:
            return value, False
    return users.generate_password(), True


def _list(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        rows = users.list_users(session=session)
    data = [{"id": u.id, "username": u.username, "role": u.role, "disabled": u.disabled,
             "last_login_at": u.last_login_at} for u in rows]
    if args.json:
        print_json(data)
    else:
        print_table([(d["id"], d["username"], d["role"], "yes" if d["disabled"] else "no", d["last_login_at"] or "")
                     for d in data], ["ID", "USERNAME", "ROLE", "DISABLED", "LAST LOGIN"])
    return 0


def _add(args: argparse.Namespace) -> int:
    password, generated = _password(args)
    with session_scope() as session:
        users.create_user(session=session, username=args.username, password=password, role=args.role)
    print(f"{args.role} '{args.username}' created" + (f" with the password: {password}" if generated else ""))
    return 0


def _passwd(args: argparse.Namespace) -> int:
    password, generated = _password(args)
    with session_scope() as session:
        users.set_password(users.get_user(args.username, session=session), password, session=session)
    print(f"password of '{args.username}' changed" + (f" to: {password}" if generated else ""))
    return 0


def _grant(args: argparse.Namespace) -> int:
    name, changed = _set_granted(args, granted=True)
    if not changed:
        print(f"'{args.username}' could already see bot '{name}': nothing to grant")
    else:
        print(f"'{args.username}' may now see bot '{name}'")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    name, changed = _set_granted(args, granted=False)
    if not changed:
        print(f"'{args.username}' could not see bot '{name}': nothing to revoke")
    else:
        print(f"'{args.username}' may no longer see bot '{name}'")
    return 0


def _set_granted(args: argparse.Namespace, *, granted: bool) -> tuple[str, bool]:
    """Let USER see BOT, or no longer (only testers are limited to some bots). Returns the bot's name and
    whether that changed what USER may see."""
    with session_scope() as session:
        user = users.get_user(args.username, session=session)
        bot = bots.get_bot(args.bot, session=session)
        change = users.grant_bot if granted else users.revoke_bot
        return bot.name, change(user, bot.id or 0, session=session)


def _set_disabled(args: argparse.Namespace) -> int:
    """The web app's rules: never the last enabled admin."""
    with session_scope() as session:
        users.set_disabled(users.get_user(args.username, session=session), args.disabled, session=session)
    print(f"'{args.username}' disabled: their sessions have ended" if args.disabled else f"'{args.username}' enabled")
    return 0


def _forget(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        bot_id = bots.get_bot(args.bot, session=session).id
    counts = discord_users.forget_user_everywhere(bot_id=bot_id, discord_user_id=args.discord_user_id)
    print(f"bot '{args.bot}' forgot user {args.discord_user_id}: "
          + ", ".join(f"{n} {what}" for what, n in counts.items()))
    return 0
