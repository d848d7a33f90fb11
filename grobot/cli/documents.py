"""``documents list|add|delete|search|reindex|set BOT ...``: the bot's files as documents it answers from.

Files added or deleted here are the Files tab's; the worker indexes them (``add`` and ``delete``
wait for it while one runs, at most ``--wait`` seconds).
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path, PurePosixPath

from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import Flag, naming_flags, print_json, print_table
from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.link_client import find_url
from grobot.core.services import bots, documents, files
from grobot.core.wording import counted, human_size

logger = logging.getLogger(__name__)

TEXT_WIDTH = 90
WAIT_SECONDS = 120.0
UNSETTLED = (documents.WAITING, documents.INDEXING)
FLAGS: dict[str, Flag] = {"documents_threshold": "--threshold", "documents_max_passages": "--max-passages",
                          "documents_max_file_bytes": lambda problem: f"--max-file-mb: {_in_megabytes(problem)}"}


def _in_megabytes(problem: str) -> str:
    """The service's limit in bytes said in MB (``greater than or equal to 1024`` -> ``... 0.001 MB``)."""
    import re

    return re.sub(r"\d{4,}", lambda m: f"{round(int(m.group()) / 1048576, 3):g} MB", problem)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("documents", help=COMMAND_HELP["documents"])
    cmds = parser.add_subparsers(dest="documents_command", metavar="ACTION")
    cmds.required = True
    lst = cmds.add_parser("list", help="the bot's documents settings and each file's state in the index")
    lst.add_argument("bot", metavar="BOT")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_list)
    add = cmds.add_parser("add", help="add a file to the bot's files (or replace it) and index it")
    add.add_argument("bot", metavar="BOT")
    add.add_argument("file", metavar="FILE", help="a file on this machine")
    add.add_argument("--as", dest="path", metavar="PATH", help="its path among the bot's files (default: its name)")
    add.add_argument("--wait", type=float, default=WAIT_SECONDS, metavar="SECONDS",
                     help=f"wait at most this long for the worker to index it (default {WAIT_SECONDS:g}; 0: do not)")
    add.add_argument("--json", action="store_true")
    add.set_defaults(func=_add)
    delete = cmds.add_parser("delete", help="delete one of the bot's files (its passages go with it)")
    delete.add_argument("bot", metavar="BOT")
    delete.add_argument("path", metavar="PATH")
    delete.add_argument("--json", action="store_true")
    delete.set_defaults(func=_delete)
    search = cmds.add_parser("search", help="the passages closest in meaning to a text (needs a running worker)")
    search.add_argument("bot", metavar="BOT")
    search.add_argument("query", metavar="TEXT")
    search.add_argument("-k", type=int, default=5, help="at most this many (default 5)")
    search.add_argument("--json", action="store_true")
    search.set_defaults(func=_search)
    reindex = cmds.add_parser("reindex", help="index every file of the bot again")
    reindex.add_argument("bot", metavar="BOT")
    reindex.add_argument("--json", action="store_true")
    reindex.set_defaults(func=_reindex)
    settings = cmds.add_parser("set", help="documents on or off, and their limits, for one bot")
    settings.add_argument("bot", metavar="BOT")
    on_off = settings.add_mutually_exclusive_group()
    on_off.add_argument("--on", dest="enabled", action="store_const", const=True, help="answer from the documents")
    on_off.add_argument("--off", dest="enabled", action="store_const", const=False, help="do not")
    settings.add_argument("--threshold", type=float, metavar="0-1",
                          help="least similarity of a passage to a message to go into the prompt (default 0.3)")
    settings.add_argument("--max-file-mb", type=float, metavar="MB", help="the largest file indexed")
    settings.add_argument("--max-passages", type=int, metavar="N", help="the most passages the bot keeps")
    settings.add_argument("--json", action="store_true")
    settings.set_defaults(func=_set)


def _bot_id(session: object, name: str) -> int:
    return int(bots.get_bot(name, session=session).id or 0)  # type: ignore[arg-type]


def _settings_line(settings: documents.DocumentsSettings) -> str:
    if not settings.enabled:
        return "Documents: off (documents set BOT --on)"
    return (f"Documents: on; threshold {settings.threshold:g}; files up to {human_size(settings.max_file_bytes)}; "
            f"at most {counted(settings.max_passages, 'passage')}")


def _states(bot: str) -> tuple[documents.DocumentsSettings, dict[str, documents.FileState], bool]:
    with session_scope(readonly=True) as session:
        bot_id = _bot_id(session, bot)
        return (documents.settings_for(bot_id, session=session), documents.file_states(session=session, bot_id=bot_id),
                find_url(session=session) is not None)


def _list(args: argparse.Namespace) -> int:
    settings, states, worker = _states(args.bot)
    if args.json:
        print_json({"settings": settings.as_dict(), "worker": worker,
                    "files": [state.as_dict() for state in states.values()]})
        return 0
    print(_settings_line(settings))
    if not states:
        print("no files (documents add BOT FILE, or the Files tab)")
        return 0
    print_table([[path, state.line] for path, state in states.items()], ["FILE", "STATE"])
    if not worker and any(state.state in UNSETTLED for state in states.values()):
        print("No bot worker is running: files are indexed when it starts.")
    return 0


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TEXT_WIDTH else line[: TEXT_WIDTH - 1] + "…"


def _wait_for(bot: str, path: str, seconds: float) -> documents.FileState | None:
    """The file's state once the worker has indexed it (or failed to), within ``seconds``; None: gone."""
    deadline = time.monotonic() + seconds
    while True:
        _, states, worker = _states(bot)
        state = states.get(path)
        if state is None or state.state not in UNSETTLED or not worker or time.monotonic() >= deadline:
            return state
        time.sleep(0.25)


def _add(args: argparse.Namespace) -> int:
    source = Path(args.file)
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise ValidationError(f"cannot read {args.file}: {exc.strerror or type(exc).__name__}") from None
    with session_scope() as session:
        bot_id = _bot_id(session, args.bot)
        row = files.write_file(session=session, bot_id=bot_id, path=args.path or PurePosixPath(source.name).name,
                               data=data)
        path = row.path
    with session_scope(readonly=True) as session:
        asked = documents.request_sync(session=session)
    state = _wait_for(args.bot, path, args.wait if asked else 0.0)
    line = state.line if state is not None else "gone again"
    if args.json:
        print_json({"path": path, "size": len(data), **(state.as_dict() if state is not None else {})})
    else:
        print(f"{path} ({human_size(len(data))}) added to bot '{args.bot}': {line}")
        if state is not None and state.state in UNSETTLED and not asked:
            print("No bot worker is running: it is indexed when the worker starts.")
    return 0


def _delete(args: argparse.Namespace) -> int:
    with session_scope() as session:
        files.delete_file(session=session, bot_id=_bot_id(session, args.bot), path=args.path)
    with session_scope(readonly=True) as session:
        documents.request_sync(session=session)
    if args.json:
        print_json({"deleted": files.clean_path(args.path)})
    else:
        print(f"{files.clean_path(args.path)} deleted from bot '{args.bot}' (its passages go with it)")
    return 0


def _search(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        found = documents.search(_bot_id(session, args.bot), args.query, session=session, k=args.k)
    if args.json:
        print_json([p.as_dict() for p in found])
    elif found:
        print_table([[p.source(), f"{p.score:.2f}", _short(p.text)] for p in found], ["SOURCE", "SCORE", "TEXT"])
    else:
        print("no passage (the bot has no document indexed)")
    return 0


def _reindex(args: argparse.Namespace) -> int:
    with session_scope() as session:
        waiting = documents.reindex(_bot_id(session, args.bot), session=session)
    with session_scope(readonly=True) as session:
        asked = documents.request_sync(session=session)
    if args.json:
        print_json({"files": waiting, "worker": asked})
    else:
        print(f"{counted(waiting, 'file')} of bot '{args.bot}' will be indexed again"
              + ("" if asked else " when the bot worker starts"))
    return 0


def _set(args: argparse.Namespace) -> int:
    changes: dict[str, object] = {}
    if args.enabled is not None:
        changes["documents_enabled"] = args.enabled
    if args.threshold is not None:
        changes["documents_threshold"] = args.threshold
    if args.max_file_mb is not None:
        changes["documents_max_file_bytes"] = int(args.max_file_mb * 1024 * 1024)
    if args.max_passages is not None:
        changes["documents_max_passages"] = args.max_passages
    if not changes:
        raise ValidationError("nothing to change: give --on/--off, --threshold, --max-file-mb or --max-passages")
    with session_scope() as session, naming_flags(FLAGS):
        settings = documents.update_settings(_bot_id(session, args.bot), changes, session=session)
    with session_scope(readonly=True) as session:
        documents.request_sync(session=session)
    if args.json:
        print_json(settings.as_dict())
    else:
        print(_settings_line(settings))
    return 0
