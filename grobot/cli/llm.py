"""``llm set|show|clear``: LLM settings per category, global or per bot."""

from __future__ import annotations

import argparse

from grobot.cli.output import print_json, print_table, read_secret_from_stdin
from grobot.core.db import session_scope
from grobot.core.llm import providers
from grobot.core.services import bots, llm_settings

CATEGORIES = ("decision", "tools", "output")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("llm", help="LLM settings per category (global defaults, per-bot overrides)")
    cmds = parser.add_subparsers(dest="llm_command", metavar="ACTION")
    cmds.required = True

    set_ = cmds.add_parser(
        "set", help="set the LLM of a category", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="providers (name; default base URL; default model; tool calls; key):\n" + providers.help_table()
        + "\n\nA provider's own service needs --api-key-stdin. native agent mode needs an output model that"
        "\ncan call tools: a model known not to is refused while a native-mode bot uses it.")
    set_.add_argument("--category", required=True, choices=CATEGORIES)
    set_.add_argument("--bot", metavar="BOT", help="override for this bot (default: the global default)")
    set_.add_argument("--provider", required=True, choices=llm_settings.PROVIDERS)
    set_.add_argument("--base-url", default="", help="default: the provider's own service")
    set_.add_argument("--model", default="", help="default: the provider's default model")
    set_.add_argument("--context-window", type=int, default=8192)
    set_.add_argument("--temperature", type=float, default=0.7)
    set_.add_argument("--fallback-model", default=None)
    set_.add_argument("--supports-images", action="store_true")
    set_.add_argument("--api-key-stdin", action="store_true", help="read the API key from stdin")
    set_.set_defaults(func=_set)

    show = cmds.add_parser("show", help="the effective settings of each category")
    show.add_argument("--bot", metavar="BOT")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_show)

    clear = cmds.add_parser("clear", help="remove a bot's override (the global default applies)")
    clear.add_argument("--bot", metavar="BOT", required=True)
    clear.add_argument("--category", required=True, choices=CATEGORIES)
    clear.set_defaults(func=_clear)


def _set(args: argparse.Namespace) -> int:
    api_key = read_secret_from_stdin("API key") if args.api_key_stdin else None
    with session_scope() as session:
        bot_id = bots.get_bot(args.bot, session=session).id if args.bot else None
        row = llm_settings.set_llm(
            session=session,
            category=args.category,
            bot_id=bot_id,
            api_key=api_key,
            provider=args.provider,
            base_url=args.base_url,
            model=args.model or "",
            context_window=args.context_window,
            temperature=args.temperature,
            fallback_model=args.fallback_model,
            supports_images=args.supports_images,
        )
        model = row.model
    scope = f"bot '{args.bot}'" if args.bot else "global default"
    print(f"{args.category} LLM set for {scope}: {args.provider} {model}")
    return 0


def _show(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        bot_id = bots.get_bot(args.bot, session=session).id if args.bot else None
        effective = llm_settings.effective_llms(session=session, bot_id=bot_id)
    rows = [e.public() for e in effective.values()]
    if args.json:
        print_json(rows)
    else:
        print_table(
            [(r["category"], r["provider"], r["base_url"], r["model"], r["context_window"], r["temperature"],
              r["api_key"], r["source"]) for r in rows],
            ["CATEGORY", "PROVIDER", "BASE URL", "MODEL", "CONTEXT", "TEMP", "API KEY", "FROM"],
        )
    return 0


def _clear(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        removed = llm_settings.clear_override(session=session, bot_id=bot.id, category=args.category)
    print(f"{args.category} override of bot '{args.bot}' {'removed' if removed else 'was not set'}")
    return 0
