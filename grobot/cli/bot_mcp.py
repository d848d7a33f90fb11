"""``bot mcp BOT enable|disable|list SERVER``: which MCP servers (and tools) a bot may use."""

from __future__ import annotations

import argparse
import logging

from grobot.cli.output import print_json, print_table
from grobot.core.db import session_scope
from grobot.core.services import bots, mcp_servers

logger = logging.getLogger(__name__)


def register(bot_subparsers: argparse._SubParsersAction) -> None:
    """Add ``mcp`` to the ``bot`` command group."""
    parser = bot_subparsers.add_parser("mcp", help="the MCP servers a bot may use")
    parser.add_argument("bot", metavar="BOT", help="bot id or name")
    acts = parser.add_subparsers(dest="bot_mcp_action", metavar="ACTION")
    acts.required = True

    enable = acts.add_parser("enable", help="let the bot use a server (all its tools, or --tools)")
    enable.add_argument("server", metavar="SERVER")
    enable.add_argument("--tools", metavar="A,B", help="only these tools of the server (default: all)")
    enable.add_argument("--all-tools", action="store_true", help="allow every tool again")
    enable.add_argument("--timeout", type=float, metavar="S", help="call timeout in seconds for this bot")
    enable.set_defaults(func=_enable)

    disable = acts.add_parser("disable", help="stop the bot using a server")
    disable.add_argument("server", metavar="SERVER")
    disable.set_defaults(func=_disable)

    lst = acts.add_parser("list", help="the bot's MCP servers")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_list)


def _enable(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        server = mcp_servers.get_server(args.server, session=session)
        allowed = [] if args.all_tools else args.tools
        link = mcp_servers.enable_for_bot(
            session=session, bot_id=bot.id, server=server, allowed_tools=allowed, timeout_seconds=args.timeout
        )
        tools = ", ".join(link.allowed_tools) if link.allowed_tools else "all tools"
        print(f"Bot '{bot.name}' may use MCP server '{server.name}' ({tools}; timeout {link.timeout_seconds:g} s)")
    return 0


def _disable(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        server = mcp_servers.get_server(args.server, session=session)
        mcp_servers.disable_for_bot(session=session, bot_id=bot.id, server=server)
    print(f"Bot '{bot.name}' no longer uses MCP server '{server.name}'")
    return 0


def _list(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        bot = bots.get_bot(args.bot, session=session)
        rows = [
            {
                "server": server.name,
                "enabled": link.enabled,
                "server_enabled": server.enabled,
                "allowed_tools": link.allowed_tools,
                "timeout_seconds": link.timeout_seconds,
            }
            for link, server in mcp_servers.bot_links(session=session, bot_id=bot.id, enabled_only=False)
        ]
    if args.json:
        print_json(rows)
        return 0
    print_table(
        [[r["server"], "yes" if r["enabled"] and r["server_enabled"] else "no",
          ", ".join(r["allowed_tools"] or []) or "all", f"{r['timeout_seconds']:g}"] for r in rows],
        ["SERVER", "ENABLED", "TOOLS", "TIMEOUT"],
    )
    return 0
