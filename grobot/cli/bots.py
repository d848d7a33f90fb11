"""``bot add|list|show|set|enable|disable|delete`` (and ``bot mcp`` from grobot.cli.bot_mcp, ``bot access`` and
``bot moderation`` from grobot.cli.bot_access, ``bot channel`` from grobot.cli.bot_channel)."""

from __future__ import annotations

import argparse
import importlib

from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import print_json, print_table, read_secret_from_stdin
from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.services import bots


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("bot", help=COMMAND_HELP["bot"])
    cmds = parser.add_subparsers(dest="bot_command", metavar="ACTION")
    cmds.required = True

    add = cmds.add_parser("add", help="add a bot")
    add.add_argument("--name", required=True)
    add.add_argument("--token-stdin", action="store_true", help="read the Discord bot token from stdin")
    add.add_argument("--personality", default="")
    add.add_argument("--disabled", action="store_true", help="add it disabled")
    add.add_argument("--json", action="store_true")
    add.set_defaults(func=_add)

    lst = cmds.add_parser("list", help="list the bots with their status")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_list)

    show = cmds.add_parser("show", help="show one bot")
    show.add_argument("bot", metavar="BOT", help="id or name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_show)

    set_ = cmds.add_parser("set", help="change fields: FIELD=VALUE ...", description=(
        "Editable fields: " + ", ".join(bots.EDITABLE_FIELDS) + ". Lists are comma-separated."))
    set_.add_argument("bot", metavar="BOT")
    set_.add_argument("assignments", nargs="*", metavar="FIELD=VALUE")
    set_.add_argument("--token-stdin", action="store_true", help="read a new Discord token from stdin")
    set_.add_argument("--clear-token", action="store_true", help="remove the Discord token")
    for field in bots.DAILY_LIMIT_FIELDS:
        set_.add_argument("--" + field.replace("_", "-"), dest=field, metavar="N|default|unlimited",
                          help=f"daily limit (UTC day); 'default': the global setting {field}")
    for field in bots.BUDGET_FIELDS:
        set_.add_argument("--" + field.replace("_", "-"), dest=field, metavar="N|default|unlimited",
                          help=f"budget ({field.split('_')[0]}, UTC); 'default': the global setting {field}")
    set_.set_defaults(func=_set)

    for name, enabled in (("enable", True), ("disable", False)):
        p = cmds.add_parser(name, help=f"{name} a bot")
        p.add_argument("bot", metavar="BOT")
        p.set_defaults(func=_enable, enabled=enabled)

    delete = cmds.add_parser("delete", help="delete a bot with its history, logs and files")
    delete.add_argument("bot", metavar="BOT")
    delete.set_defaults(func=_delete)

    for name in ("grobot.cli.bot_mcp", "grobot.cli.bot_access", "grobot.cli.bot_channel", "grobot.cli.bot_schedules"):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
        else:
            module.register(cmds)


def parse_assignments(items: list[str]) -> dict[str, str]:
    """``["a=1", "b=x y"]`` -> ``{"a": "1", "b": "x y"}``; refuses malformed items."""
    changes: dict[str, str] = {}
    for item in items:
        field, sep, value = item.partition("=")
        field = field.strip()
        if not sep or not field:
            raise ValidationError(f"expected FIELD=VALUE, got {item!r}")
        if field in ("token", "discord_token"):
            raise ValidationError("set the token with --token-stdin (never on the command line)")
        if field not in bots.EDITABLE_FIELDS:
            raise ValidationError(f"unknown field {field!r}; editable: {', '.join(bots.EDITABLE_FIELDS)}")
        changes[field] = value
    return changes


def _add(args: argparse.Namespace) -> int:
    token = read_secret_from_stdin("Discord bot token") if args.token_stdin else None
    with session_scope() as session:
        bot = bots.create_bot(
            session=session, name=args.name, token=token, personality=args.personality, enabled=not args.disabled
        )
        details = bots.bot_details(bot, session=session)
    if args.json:
        print_json(details)
    else:
        print(f"bot {details['id']} '{details['name']}' added ({'enabled' if details['enabled'] else 'disabled'}, "
              f"token {details['token']})")
    return 0


def _list(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        summaries = bots.list_bots(session=session)
    if args.json:
        print_json([s.as_dict() for s in summaries])
        return 0
    if not summaries:
        print("no bots yet: python -m grobot bot add --name NAME --token-stdin")
        return 0
    print_table(
        [(s.id, s.name, "yes" if s.enabled else "no", s.status, s.status_detail, s.discord_user_name or "",
          s.guild_count) for s in summaries],
        ["ID", "NAME", "ENABLED", "STATUS", "DETAIL", "DISCORD USER", "GUILDS"],
    )
    return 0


def _show(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        details = bots.bot_details(bots.get_bot(args.bot, session=session), session=session)
    if args.json:
        print_json(details)
    else:
        width = max(len(k) for k in details)
        for key, value in details.items():
            if isinstance(value, list):
                value = ", ".join(map(str, value))
            print(f"{key.ljust(width)}  {'' if value is None else value}")
    return 0


def _set(args: argparse.Namespace) -> int:
    changes: dict[str, str | None] = dict(parse_assignments(args.assignments))
    changes.update({f: getattr(args, f) for f in bots.DAILY_LIMIT_FIELDS + bots.BUDGET_FIELDS
                    if getattr(args, f, None) is not None})
    if args.token_stdin and args.clear_token:
        raise ValidationError("--token-stdin and --clear-token exclude each other")
    token = read_secret_from_stdin("Discord bot token") if args.token_stdin else None
    if not changes and token is None and not args.clear_token:
        raise ValidationError("nothing to change: give FIELD=VALUE pairs, a limit option, --token-stdin or --clear-token")
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        if changes:
            bots.update_bot(bot, changes, session=session)
        if token is not None:
            bots.set_token(bot, token, session=session)
        elif args.clear_token:
            bots.set_token(bot, None, session=session)
        name = bot.name
    what = list(changes) + (["token"] if token or args.clear_token else [])
    print(f"bot '{name}' updated: {', '.join(what)}")
    return 0


def _enable(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        bots.set_enabled(bot, args.enabled, session=session)
        name = bot.name
    print(f"bot '{name}' {'enabled' if args.enabled else 'disabled'}")
    return 0


def _delete(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        name = bot.name
        bots.delete_bot(bot, session=session)
    print(f"bot '{name}' deleted")
    return 0
