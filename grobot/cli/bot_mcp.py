"""``bot mcp BOT enable|disable SERVER``, ``bot mcp BOT list [SERVER]``: which MCP servers (and tools) a bot may
use, and per tool its fallback and whether it writes."""

from __future__ import annotations

import argparse
import logging

from sqlmodel import Session

from grobot.cli.output import print_json, print_table
from grobot.core.db import session_scope
from grobot.core.errors import NotFoundError
from grobot.core.models import BotMcpServer, McpServer
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
    enable.add_argument("--fallback", action="append", metavar="TOOL=FALLBACK",
                        help="when TOOL fails (after its retries), call FALLBACK with the same arguments: another "
                             "tool of this server, SERVER__TOOL of another one, or a built-in; TOOL= removes it "
                             "(repeatable)")
    enable.add_argument("--writes", action="append", metavar="A,B",
                        help="these tools change things: their calls run alone, in order (repeatable)")
    enable.add_argument("--read-only", action="append", metavar="A,B",
                        help="these tools only read: their calls run in parallel (repeatable)")
    enable.add_argument("--auto", action="append", metavar="A,B",
                        help="these tools follow their MCP annotations again (repeatable)")
    enable.set_defaults(func=_enable)

    disable = acts.add_parser("disable", help="stop the bot using a server")
    disable.add_argument("server", metavar="SERVER")
    disable.set_defaults(func=_disable)

    lst = acts.add_parser("list", help="the bot's MCP servers (or only SERVER)")
    lst.add_argument("server", metavar="SERVER", nargs="?", help="only this server's settings for the bot")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_list)


def _enable(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        server = mcp_servers.get_server(args.server, session=session)
        allowed = [] if args.all_tools else args.tools
        fallbacks, access = mcp_servers.parse_tool_options(args.fallback, args.writes, args.read_only, args.auto)
        link = mcp_servers.enable_for_bot(
            session=session, bot_id=bot.id, server=server, allowed_tools=allowed, timeout_seconds=args.timeout,
            fallbacks=fallbacks, access=access,
        )
        tools = ", ".join(link.allowed_tools) if link.allowed_tools else "all tools"
        print(f"Bot '{bot.name}' may use MCP server '{server.name}' ({tools}; timeout {link.timeout_seconds:g} s)")
        settings = mcp_servers.describe_tool_settings(link.tool_settings)
        if settings:
            print(f"Tool settings: {settings}")
    return 0


def _disable(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        server = mcp_servers.get_server(args.server, session=session)
        mcp_servers.disable_for_bot(session=session, bot_id=bot.id, server=server)
    print(f"Bot '{bot.name}' no longer uses MCP server '{server.name}'")
    return 0


def _links(args: argparse.Namespace, session: Session) -> list[tuple[BotMcpServer, McpServer]]:
    """The bot's servers (enabled or not), or only ``args.server``'s (NotFoundError when the bot never had it)."""
    bot = bots.get_bot(args.bot, session=session)
    links = mcp_servers.bot_links(session=session, bot_id=bot.id, enabled_only=False)
    if args.server is None:
        return links
    only = mcp_servers.get_server(args.server, session=session)
    links = [(link, server) for link, server in links if server.id == only.id]
    if not links:
        raise NotFoundError(f"bot '{bot.name}' does not use MCP server '{only.name}' "
                            f"(python -m grobot bot mcp {bot.name} enable {only.name})")
    return links


def _list(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        rows = [
            {
                "server": server.name,
                "enabled": link.enabled,
                "server_enabled": server.enabled,
                "allowed_tools": link.allowed_tools,
                "timeout_seconds": link.timeout_seconds,
                "tool_settings": link.tool_settings or {},
            }
            for link, server in _links(args, session)
        ]
    if args.json:
        print_json(rows)
        return 0
    print_table(
        [[r["server"], "yes" if r["enabled"] and r["server_enabled"] else "no",
          ", ".join(r["allowed_tools"] or []) or "all", f"{r['timeout_seconds']:g}",
          mcp_servers.describe_tool_settings(r["tool_settings"]) or "-"] for r in rows],
        ["SERVER", "ENABLED", "TOOLS", "TIMEOUT", "TOOL SETTINGS"],
    )
    return 0
