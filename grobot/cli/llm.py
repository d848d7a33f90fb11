"""``llm set|show|clear``: LLM settings per category, global or per bot."""

from __future__ import annotations

import argparse
import asyncio
from concurrent.futures import ThreadPoolExecutor

from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import Flag, naming_flags, print_json, print_table, read_secret_from_stdin
from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.llm import providers
from grobot.core.services import bots, llm_checks, llm_settings, llm_sources

CATEGORIES = ("decision", "tools", "output")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("llm", help=COMMAND_HELP["llm"])
    cmds = parser.add_subparsers(dest="llm_command", metavar="ACTION")
    cmds.required = True

    set_ = cmds.add_parser(
        "set", help="set the LLM of a category", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="providers (name; default base URL; default model; tool calls; key):\n" + providers.help_table()
        + "\n\nA provider's own service needs --api-key-stdin. A new API key is checked with the provider first"
        "\n(its model list): a rejected key is not saved; --no-check saves it without asking (an unreachable"
        "\nprovider). native agent mode needs an output model that can call tools: a model known not to is"
        "\nrefused while a native-mode bot uses it. With --bot, what is left out is inherited (the global"
        "\ndefault, OLLAMA_HOST, the provider's default).")
    set_.add_argument("--category", required=True, choices=CATEGORIES)
    set_.add_argument("--bot", metavar="BOT", help="override for this bot (default: the global default)")
    set_.add_argument("--provider", required=True, choices=llm_settings.PROVIDERS)
    set_.add_argument("--base-url", default="", help="default: the provider's own service")
    set_.add_argument("--model", default="", help="default: the provider's default model")
    set_.add_argument("--context-window", type=int, default=None, help="default: 8192, or inherited with --bot")
    set_.add_argument("--temperature", type=float, default=None, help="default: 0.7, or inherited with --bot")
    set_.add_argument("--repeat-penalty", type=float, default=None, metavar="P",
                      help="the answers' repetition penalty, 1 (off) to 2 (default: the provider's; on the embedded "
                           "models GroBot's own, 1.1 with llama.cpp's DRY; or inherited with --bot)")
    set_.add_argument("--fallback-model", default=None)
    set_.add_argument("--supports-images", action="store_true")
    key = set_.add_mutually_exclusive_group()
    key.add_argument("--api-key-stdin", action="store_true", help="read the API key from stdin")
    key.add_argument("--clear-api-key", action="store_true",
                     help="remove the stored API key (a server that needs none; a provider's own service needs one)")
    set_.add_argument("--no-check", action="store_true",
                      help="save the API key without the test call to the provider (e.g. while it is unreachable)")
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
    fields = {"provider": args.provider, "base_url": args.base_url, "model": args.model or "",
              "fallback_model": args.fallback_model, "supports_images": args.supports_images}
    fields.update({name: value for name, value in (("context_window", args.context_window),
                                                   ("temperature", args.temperature),
                                                   ("repeat_penalty", args.repeat_penalty)) if value is not None})
    with session_scope(readonly=True) as session:
        bot_id = bots.get_bot(args.bot, session=session).id if args.bot else None
    if api_key and not args.no_check:
        _check_key(args, api_key, bot_id)
    with session_scope() as session, naming_flags(_flags(args.provider)):
        try:
            row = llm_settings.set_llm(session=session, category=args.category, bot_id=bot_id, api_key=api_key,
                                       clear_api_key=args.clear_api_key, **fields)
        except llm_settings.MissingAPIKey as exc:  # the CLI's own way to give the key
            raise ValidationError(f"{exc.title} needs an API key for {exc.url}: give it with --api-key-stdin") from None
        model = llm_settings.effective_llm(session=session, category=args.category, bot_id=bot_id).model \
            if row.model is None else row.model
    scope = f"bot '{args.bot}'" if args.bot else "global default"
    print(f"{args.category} LLM set for {scope}: {args.provider} {model}"
          + ("; API key removed" if args.clear_api_key else ""))
    return 0


def _flags(provider: str) -> dict[str, Flag]:
    """The flags of ``llm set`` by the settings' field names (for the services' errors)."""
    def model(problem: str) -> str:
        if provider == "llamacpp" and problem.startswith("required"):
            return ("--model: required with --provider llamacpp: the GGUF file to run (a path under the data dir "
                    "such as models/x.gguf, an absolute path, or builtin:smollm2-135m)")
        return f"--model: {problem}"

    return {"provider": "--provider", "base_url": "--base-url", "model": model, "context_window": "--context-window",
            "temperature": "--temperature", "repeat_penalty": "--repeat-penalty", "fallback_model": "--fallback-model",
            "supports_images": "--supports-images", "api_key": "--api-key-stdin"}


def _check_key(args: argparse.Namespace, api_key: str, bot_id: int | None) -> None:
    """The test call to the provider before its key is saved (raises when it is not to be saved)."""
    with session_scope(readonly=True) as session:
        url = llm_settings.server_url(session=session, category=args.category, provider=args.provider,
                                      base_url=args.base_url, bot_id=bot_id)
    try:
        check = llm_checks.check_key(provider=args.provider, base_url=url, api_key=api_key, model=args.model or "")
        with ThreadPoolExecutor(1) as pool:  # its own event loop, also when called from one (tests)
            pool.submit(asyncio.run, check).result()
    except llm_checks.KeyNotChecked as exc:
        with session_scope(readonly=True) as session:
            hint = llm_checks.suggestion(session=session, category=args.category, provider=args.provider,
                                         base_url=url, bot_id=bot_id)
        raise llm_checks.KeyNotChecked(f"{exc}; nothing was saved (--no-check saves it anyway)"
                                       + (f". {hint}" if hint else "")) from None


def _show(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        bot_id = bots.get_bot(args.bot, session=session).id if args.bot else None
        effective = llm_settings.effective_llms(session=session, bot_id=bot_id)
        views = llm_sources.override_views(session=session, bot_id=bot_id) if bot_id is not None else {}
    rows = [e.public() for e in effective.values()]
    for row in rows:
        view = views.get(row["category"])
        if view is not None and view.overridden:  # what a bot's override leaves to others, and to whom
            row["inherited"] = {name: source.source for name, source in view.fields.items() if not source.own}
    if args.json:
        print_json(rows)
    else:
        print_table(
            [(r["category"], r["provider"], r["base_url"], r["model"], r["context_window"], r["temperature"],
              "default" if r["repeat_penalty"] is None else r["repeat_penalty"], r["api_key"], r["source"],
              _inherited_text(r.get("inherited"))) for r in rows],
            ["CATEGORY", "PROVIDER", "BASE URL", "MODEL", "CONTEXT", "TEMP", "REPEAT PENALTY", "API KEY", "FROM",
             "INHERITED"],
        )
    return 0


def _inherited_text(inherited: dict[str, str] | None) -> str:
    if not inherited:
        return ""
    return "; ".join(f"{name.replace('_', ' ')}: {source}" for name, source in inherited.items())


def _clear(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        removed = llm_settings.clear_override(session=session, bot_id=bot.id, category=args.category)
    print(f"{args.category} override of bot '{args.bot}' {'removed' if removed else 'was not set'}")
    return 0
