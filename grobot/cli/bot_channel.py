"""``bot channel BOT ...``: a bot's persona per Discord channel (and its threads): a personality addition
and LLM overrides per category, the rest inherited from the bot."""

from __future__ import annotations

import argparse
from typing import Any

from grobot.cli.output import print_json
from grobot.core.db import session_scope
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.services import bots, channel_personas
from grobot.core.services.channel_personas import CATEGORIES, Persona

LLM_OPTIONS = ("provider", "base_url", "model", "context_window", "temperature")


def register(bot_subparsers: argparse._SubParsersAction) -> None:
    """Add ``channel`` to the ``bot`` command group."""
    parser = bot_subparsers.add_parser(
        "channel", help="a persona per channel: a personality addition and LLM overrides",
        description="In a channel with a persona (and in its threads) the bot answers with its personality followed "
                    "by the channel's addition, and with the channel's LLM overrides; what they leave out is the "
                    "bot's own. CHANNEL: an id, or #name of a channel the bot has talked in. Changes apply from the "
                    "next message.")
    parser.add_argument("bot", metavar="BOT", help="bot id or name")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=_list)
    acts = parser.add_subparsers(dest="bot_channel_action", metavar="ACTION")
    show = acts.add_parser("show", help="a channel's persona")
    show.add_argument("channel", metavar="CHANNEL")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_show)
    set_ = acts.add_parser("set", help="set a channel's personality addition or an LLM category's overrides")
    set_.add_argument("channel", metavar="CHANNEL")
    set_.add_argument("--personality", help="added after the bot's personality in this channel (\"\": none)")
    set_.add_argument("--category", choices=CATEGORIES,
                      help="the LLM category the options below override (empty options: the bot's)")
    set_.add_argument("--provider")
    set_.add_argument("--base-url")
    set_.add_argument("--model")
    set_.add_argument("--context-window", type=int)
    set_.add_argument("--temperature", type=float)
    set_.add_argument("--clear-llm", choices=CATEGORIES, action="append", default=[],
                      help="drop the channel's overrides of a category (the bot's own again)")
    set_.add_argument("--json", action="store_true")
    set_.set_defaults(func=_set)
    clear = acts.add_parser("clear", help="remove a channel's persona")
    clear.add_argument("channel", metavar="CHANNEL")
    clear.set_defaults(func=_clear)


def _print(persona: Persona, as_json: bool) -> None:
    if as_json:
        print_json(persona.as_dict())
        return
    print(f"Channel {persona.label}:")
    print(f"  personality addition  {persona.personality or '-'}")
    print(f"  LLM overrides         {persona.models() or '- (the bot' + chr(39) + 's own)'}")


def _list(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        bot = bots.get_bot(args.bot, session=session)
        found = channel_personas.personas(bot, session=session)
    if args.json:
        print_json([p.as_dict() for p in found])
        return 0
    if not found:
        print(f"Bot '{bot.name}' answers with its own persona in every channel.")
    for persona in found:
        _print(persona, False)
    return 0


def _show(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        bot = bots.get_bot(args.bot, session=session)
        channel_id = channel_personas.resolve_channel(bot, args.channel, session=session)
        found = next((p for p in channel_personas.personas(bot, session=session) if p.channel_id == channel_id), None)
    if found is None:
        raise NotFoundError(f"bot '{bot.name}' has no persona in channel {args.channel}")
    _print(found, args.json)
    return 0


def _set(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {k: getattr(args, k) for k in LLM_OPTIONS if getattr(args, k) is not None}
    if fields and args.category is None:
        raise ValidationError("--category: required with --provider, --base-url, --model, --context-window or "
                              "--temperature")
    llms: dict[str, dict[str, Any]] = {category: {} for category in args.clear_llm}
    if args.category is not None:
        if not fields:
            raise ValidationError("--category: give the overrides to set (or --clear-llm to drop them)")
        llms[args.category] = fields
    if args.personality is None and not llms:
        raise ValidationError("nothing to change: give --personality, --category with overrides, or --clear-llm")
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        persona = channel_personas.set_persona(bot, args.channel, session=session, personality=args.personality,
                                               llms=llms)
    _print(persona, args.json)
    return 0


def _clear(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        channel_personas.clear_persona(bot, args.channel, session=session)
        print(f"Bot '{bot.name}' answers with its own persona in channel {args.channel} again.")
    return 0
