"""``bot access BOT ...``: who may use a bot (allowed and blocked users and roles, by id or by a name
the bot has seen), and ``bot moderation BOT ...``: what its messages and answers must not contain."""

from __future__ import annotations

import argparse

from grobot.cli.output import print_json
from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.moderation import ACTIONS, Moderation
from grobot.core.services import access, bots

ACCESS_ACTIONS = {"allow-user": "allowed_user_ids", "block-user": "blocked_user_ids",
                  "allow-role": "allowed_role_ids", "block-role": "blocked_role_ids"}


def register(bot_subparsers: argparse._SubParsersAction) -> None:
    """Add ``access`` and ``moderation`` to the ``bot`` command group."""
    parser = bot_subparsers.add_parser(
        "access", help="who may use a bot: allowed and blocked users and roles",
        description="A blocked user, or one with a blocked role, gets no answer (a block wins). With allowed users "
                    "or roles, only they are answered. USER and ROLE: an id, or a name the bot has seen (users: its "
                    "Knowledge Base; roles: on Discord). Changes apply from the next message.")
    parser.add_argument("bot", metavar="BOT", help="bot id or name")
    parser.add_argument("--json", action="store_true")
    acts = parser.add_subparsers(dest="bot_access_action", metavar="ACTION")
    parser.set_defaults(func=_show_access)
    for action, name in ACCESS_ACTIONS.items():
        kind = "USER" if "user" in action else "ROLE"
        sub = acts.add_parser(action, help=f"add to the {access.LIST_LABELS[name]}")
        sub.add_argument("refs", nargs="+", metavar=kind)
        sub.add_argument("--json", action="store_true")
        sub.set_defaults(func=_change_access, list_name=name)
    remove = acts.add_parser("remove", help="remove users or roles from every list")
    remove.add_argument("refs", nargs="+", metavar="USER_OR_ROLE")
    remove.add_argument("--json", action="store_true")
    remove.set_defaults(func=_change_access, list_name=None)
    clear = acts.add_parser("clear", help="empty every list (everyone may use the bot)")
    clear.add_argument("--json", action="store_true")
    clear.set_defaults(func=_change_access, list_name=None, refs=[], clear=True)

    mod = bot_subparsers.add_parser(
        "moderation", help="words and patterns a bot's messages and answers must not contain",
        description="WORD: a whole word or phrase, any case. PATTERN: a regular expression (RE2 syntax, any case; "
                    "checked when added: one that cannot be compiled, matches ordinary messages or is too slow is "
                    "refused). A message that matches is ignored, refused or only logged (--action); an answer is "
                    "checked before it is sent, also while it streams.")
    mod.add_argument("bot", metavar="BOT", help="bot id or name")
    mod.add_argument("--json", action="store_true")
    mod.set_defaults(func=_show_moderation)
    mods = mod.add_subparsers(dest="bot_moderation_action", metavar="ACTION")
    for action, metavar in (("add-word", "WORD"), ("add-pattern", "PATTERN"), ("remove", "WORD_OR_PATTERN")):
        sub = mods.add_parser(action, help={"add-word": "add words or phrases", "add-pattern": "add regular expressions",
                                            "remove": "remove words or patterns"}[action])
        sub.add_argument("items", nargs="+", metavar=metavar)
        sub.add_argument("--json", action="store_true")
        sub.set_defaults(func=_change_moderation)
    set_ = mods.add_parser("set", help="what happens to a match, and the decision model's check")
    set_.add_argument("--action", choices=list(ACTIONS), help="ignore: no answer; refuse: a short refusal; log: "
                                                              "answered, only logged")
    set_.add_argument("--ask-model", choices=["on", "off"],
                      help="also ask the decision model whether each message is abusive (one short LLM call)")
    set_.add_argument("--json", action="store_true")
    set_.set_defaults(func=_change_moderation, items=[])


def _print_access(name: str, lists: dict[str, list[access.Entry]], as_json: bool) -> None:
    if as_json:
        print_json({list_name: [e.as_dict() for e in entries] for list_name, entries in lists.items()})
        return
    print(f"Who may use bot '{name}':")
    for list_name, entries in lists.items():
        print(f"  {access.LIST_LABELS[list_name]:14} {', '.join(e.label for e in entries) or '-'}")
    if not any(lists[n] for n in ("allowed_user_ids", "allowed_role_ids")):
        print("  (no allowed users or roles: everyone who is not blocked)")


def _show_access(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        bot = bots.get_bot(args.bot, session=session)
        _print_access(bot.name, access.access_lists(bot, session=session), args.json)
    return 0


def _change_access(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        if args.list_name is None:
            lists = access.change_access(bot, session=session, remove=args.refs, clear=getattr(args, "clear", False))
        else:
            lists = access.change_access(bot, session=session, add={args.list_name: args.refs})
        _print_access(bot.name, lists, args.json)
    return 0


def _print_moderation(name: str, moderation: Moderation, as_json: bool) -> None:
    if as_json:
        print_json(moderation.as_dict())
        return
    print(f"Moderation of bot '{name}':")
    print(f"  words      {', '.join(moderation.words) or '-'}")
    print("  patterns   " + ("-" if not moderation.patterns else "\n             ".join(
        f"{i}. {p}" for i, p in enumerate(moderation.patterns, 1))))
    print(f"  on a match {ACTIONS.get(moderation.action, moderation.action)}")
    print(f"  decision model asks whether a message is abusive: {'on' if moderation.ask_model else 'off'}")


def _show_moderation(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        bot = bots.get_bot(args.bot, session=session)
        _print_moderation(bot.name, Moderation.of(bot), args.json)
    return 0


def _change_moderation(args: argparse.Namespace) -> int:
    action = args.bot_moderation_action
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        words, patterns = list(bot.moderation_words or []), list(bot.moderation_patterns or [])
        changes: dict[str, object] = {}
        if action == "add-word":
            changes["moderation_words"] = words + list(args.items)
        elif action == "add-pattern":
            changes["moderation_patterns"] = patterns + list(args.items)
        elif action == "remove":
            missing = [item for item in args.items if item not in words and item not in patterns]
            if missing:
                raise ValidationError(f"bot '{bot.name}' has no word or pattern {missing[0]!r}")
            changes["moderation_words"] = [w for w in words if w not in args.items]
            changes["moderation_patterns"] = [p for p in patterns if p not in args.items]
        else:
            if args.action is None and args.ask_model is None:
                raise ValidationError("nothing to change: give --action or --ask-model")
            if args.action is not None:
                changes["moderation_action"] = args.action
            if args.ask_model is not None:
                changes["moderation_ask_model"] = args.ask_model == "on"
        bots.update_bot(bot, changes, session=session)
        _print_moderation(bot.name, Moderation.of(bot), args.json)
    return 0
