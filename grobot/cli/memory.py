"""``memory list|search|add|delete BOT ...``: a bot's long-term memories (through the worker's link)."""

from __future__ import annotations

import argparse
import logging

from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import print_json, print_table
from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.services import bots, memories

logger = logging.getLogger(__name__)

TEXT_WIDTH = 70


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("memory", help=COMMAND_HELP["memory"])
    cmds = parser.add_subparsers(dest="memory_command", metavar="ACTION")
    cmds.required = True
    lst = cmds.add_parser("list", help="list a bot's memories, newest first")
    lst.add_argument("bot", metavar="BOT")
    lst.add_argument("--user", metavar="DISCORD_USER_ID", help="only the memories of this Discord user")
    lst.add_argument("--limit", type=int, default=20)
    lst.add_argument("--offset", type=int, default=0)
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_list)
    search = cmds.add_parser("search", help="the memories closest in meaning to a text")
    search.add_argument("bot", metavar="BOT")
    search.add_argument("query", metavar="TEXT")
    search.add_argument("-k", type=int, default=10, help="at most this many (default 10)")
    search.add_argument("--all", action="store_true", help="also the weakly related ones")
    search.add_argument("--json", action="store_true")
    search.set_defaults(func=_search)
    add = cmds.add_parser("add", help="store a memory")
    add.add_argument("bot", metavar="BOT")
    add.add_argument("text", metavar="TEXT")
    add.add_argument("--user", metavar="DISCORD_USER_ID", help="the Discord user it is about")
    add.add_argument("--json", action="store_true")
    add.set_defaults(func=_add)
    delete = cmds.add_parser("delete", help="delete one memory, or every memory of a user (--user)")
    delete.add_argument("bot", metavar="BOT")
    delete.add_argument("memory_id", metavar="MEMORY_ID", nargs="?")
    delete.add_argument("--user", metavar="DISCORD_USER_ID", help="delete every memory of this Discord user")
    delete.add_argument("--json", action="store_true")
    delete.set_defaults(func=_delete)


def _bot_id(session: object, name: str) -> int:
    return int(bots.get_bot(name, session=session).id or 0)  # type: ignore[arg-type]


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TEXT_WIDTH else line[: TEXT_WIDTH - 1] + "…"


def _print_items(items: list[memories.MemoryItem], *, with_distance: bool = False) -> None:
    headers = ["ID", "CREATED", "USER", "SOURCE", "TEXT"] + (["DISTANCE"] if with_distance else [])
    rows = [[m.id, m.created_at, m.user_name or m.user_id, m.source, _short(m.text)]
            + ([f"{m.distance:.2f}" if m.distance is not None else ""] if with_distance else []) for m in items]
    print_table(rows, headers)


def _list(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        page = memories.list_memories(_bot_id(session, args.bot), session=session, limit=args.limit,
                                      offset=args.offset, user_id=args.user)
    if args.json:
        print_json({"total": page.total, "offset": page.offset, "limit": page.limit,
                    "memories": [m.as_dict() for m in page.items]})
        return 0
    _print_items(page.items)
    shown = f"{page.offset + 1}-{page.offset + len(page.items)}" if page.items else "none"
    print(f"({shown} of {page.total})")
    return 0


def _search(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        found = memories.search_memories(_bot_id(session, args.bot), args.query, session=session, k=args.k,
                                         max_distance=None if args.all else memories.RELEVANT_DISTANCE)
    if args.json:
        print_json([m.as_dict() for m in found])
    elif found:
        _print_items(found, with_distance=True)
    else:
        print("no related memory")
    return 0


def _add(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        memory_id = memories.add_memory(_bot_id(session, args.bot), args.text, session=session, user_id=args.user)
    if args.json:
        print_json({"id": memory_id})
    else:
        print(f"memory {memory_id} added to bot '{args.bot}'")
    return 0


def _delete(args: argparse.Namespace) -> int:
    if bool(args.memory_id) == bool(args.user):
        raise ValidationError("give either a MEMORY_ID or --user DISCORD_USER_ID")
    with session_scope(readonly=True) as session:
        bot_id = _bot_id(session, args.bot)
        if args.user:
            deleted = memories.delete_user_memories(bot_id, args.user, session=session)
        else:
            memories.delete_memory(bot_id, args.memory_id, session=session)
            deleted = 1
    if args.json:
        print_json({"deleted": deleted})
    else:
        print(f"{deleted} memory(ies) deleted from bot '{args.bot}'")
    return 0
