"""Entry point of the command line."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError, ProgrammingError

from grobot.core.errors import GroBotError, first_line

logger = logging.getLogger(__name__)

# Each command and the command-group module under grobot.cli that registers it, in the order ``--help``
# lists them (a command runs after importing only its own module: most of a command's start-up is
# importing what the other commands use).
COMMANDS = {"db": "db", "admin": "admin", "bot": "bots", "llm": "llm", "mcp": "mcp", "chat": "chat",
            "council": "council", "users": "users", "user": "users", "memory": "memory", "documents": "documents",
            "usage": "usage", "prices": "usage", "settings": "settings", "health": "health", "secrets": "secrets",
            "worker": "worker"}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))
# Each command's line in ``--help`` (its module's parser says the same): the listing needs no module imported.
COMMAND_HELP = {
    "db": "database schema",
    "admin": "administrators of the web app",
    "bot": "add, change and remove bots",
    "llm": "LLM settings per category (global defaults, per-bot overrides)",
    "mcp": "MCP servers that bots may use",
    "chat": "send one message to a bot through the agent chain and print the answer",
    "council": "a bot's advisory council: advisors, their LLMs, deliberations",
    "users": "accounts of the web app (admins, testers)",
    "user": "Discord users of a bot",
    "memory": "long-term memories of a bot (needs a running worker)",
    "documents": "the bot's files it answers from: their index, search, settings",
    "usage": "LLM usage and cost per bot against its limits and budgets",
    "prices": "prices per million tokens (estimated costs) and their currency",
    "settings": "show and change global settings (e.g. the default daily limits)",
    "health": "check the database, schema, secrets, worker, memory and every LLM server in use",
    "secrets": "the key that encrypts tokens and API keys",
    "worker": "run the bot fleet supervisor (python -m bot_worker)",
}

# Loggers of libraries whose messages the commands report themselves, in one line (shown with -v). A
# command adds its own with ``set_defaults(reported_loggers=(...))``, and names the loggers whose DEBUG
# messages -v shows too with ``set_defaults(debug_loggers=(...))``.
QUIET_LIBRARIES = ("mcp",)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2 (argparse's own code too)
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; given ``argv`` that names a command, only that command (see :data:`COMMANDS`),
    and given one that names none (``--help``, a mistyped command), only the list of commands."""
    parser = _Parser(prog="python -m grobot", description="GroBot: run a fleet of LLM-driven Discord bots.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens (to stderr)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    command = next((arg for arg in argv or () if not arg.startswith("-")), None)
    if argv is not None and command not in COMMANDS:  # the listing (or a mistyped command): no group imported
        for name, line in COMMAND_HELP.items():
            sub.add_parser(name, help=line, add_help=False)
        return parser
    for name in (COMMANDS[command],) if command in COMMANDS else COMMAND_MODULES:
        try:
            module = importlib.import_module(f"grobot.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"grobot.cli.{name}":
                continue  # a command group that is not built yet
            raise
        module.register(sub)
    return parser


def _debug() -> bool:
    """GROBOT_DEBUG is set: show the traceback (False when the settings themselves are invalid)."""
    from grobot.core.settings import get_settings

    try:
        return get_settings().debug
    except ValueError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; what it prints never drives the terminal (:func:`grobot.cli.output.terminal_text`)."""
    from grobot.cli.output import terminal_safe_output

    with terminal_safe_output():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # Libraries' own errors (with tracebacks), and the log of what a command reports itself (chat: its
    # run's events), repeat what the command says in one line.
    levels = (dict.fromkeys(getattr(args, "debug_loggers", ()), logging.DEBUG) if args.verbose
              else dict.fromkeys(QUIET_LIBRARIES + tuple(getattr(args, "reported_loggers", ())), logging.CRITICAL))
    from grobot.core.db import creating_sqlite

    try:
        # Only `db upgrade` and the worker create a SQLite database that does not exist: any other
        # command would leave an empty file (and its folders) behind and fail on the missing tables.
        with creating_sqlite(getattr(args, "creates_database", False)), _at_levels(levels):
            return int(args.func(args) or 0)
    except GroBotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except (OperationalError, ProgrammingError) as exc:
        if isinstance(exc, ProgrammingError) and not _missing_table(exc):
            return _unexpected(exc)
        from grobot.core.settings import get_settings

        url = make_url(get_settings().database_url).render_as_string(hide_password=True)
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else "unknown reason"
        hint = " (no schema yet, or an old one): run python -m grobot db upgrade" if _missing_table(exc) else ""
        print(f"error: cannot use the database {url}: {reason}{hint}", file=sys.stderr)
        return 2
    except Exception as exc:  # never a traceback for the user
        return _unexpected(exc)


@contextmanager
def _at_levels(levels: Mapping[str, int]) -> Iterator[None]:
    """These loggers log at these levels while the command runs (their own levels are restored after it)."""
    loggers = {logging.getLogger(name): level for name, level in levels.items()}
    before = {each: each.level for each in loggers}
    for each, level in loggers.items():
        each.setLevel(level)
    try:
        yield
    finally:
        for each, level in before.items():
            each.setLevel(level)


def _missing_table(exc: Exception) -> bool:
    """A table of GroBot's schema is not there (SQLite, PostgreSQL)."""
    reason = str(getattr(exc, "orig", "") or "")
    return "no such table" in reason or bool(re.search(r'relation "[^"]+" does not exist', reason))


def _unexpected(exc: Exception) -> int:
    if _debug():
        raise exc
    print(f"error: {type(exc).__name__}: {first_line(exc)} (set GROBOT_DEBUG=1 for details)", file=sys.stderr)
    return 2
