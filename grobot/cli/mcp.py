"""``mcp add|presets|list|show|test|delete``: the registry of MCP servers."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys

from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import Flag, naming_flags, print_json, print_table
from grobot.core.db import session_scope
from grobot.core.errors import GroBotError, ValidationError
from grobot.core.services import mcp_servers
from grobot.core.services.mcp_servers import parse_pairs

logger = logging.getLogger(__name__)

TRANSPORTS = ("stdio", "streamable_http", "sse")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("mcp", help=COMMAND_HELP["mcp"])
    cmds = parser.add_subparsers(dest="mcp_command", metavar="ACTION")
    cmds.required = True

    add = cmds.add_parser(
        "add",
        help="register an MCP server (then connect to it and store its tools or its error)",
        description="stdio: --command (and --arg ...); streamable_http / sse: --url; or --preset NAME "
        "(`mcp presets` lists them) with its --secret KEY=VALUE. Secret environment variables and headers "
        "are read from stdin (KEY=VALUE per line) and stored encrypted.",
    )
    add.add_argument("name", metavar="NAME", nargs="?", help="the server's name (default with --preset: the preset's)")
    add.add_argument("--preset", metavar="PRESET", help="a known server from `mcp presets`")
    add.add_argument("--secret", action="append", default=[], metavar="KEY=VALUE",
                     help="a secret the preset needs (visible in the process list: prefer --secrets-stdin)")
    add.add_argument("--secrets-stdin", action="store_true", help="read the preset's secrets from stdin")
    add.add_argument("--no-test", action="store_true", help="do not connect to the new server")
    add.add_argument("--transport", choices=TRANSPORTS, default=None, help="default: stdio, or streamable_http with --url")
    add.add_argument("--command", help="program to start (stdio)")
    add.add_argument("--arg", action="append", default=[], metavar="ARG", help="one argument (repeat for more)")
    add.add_argument("--cwd", help="working directory (stdio)")
    add.add_argument("--url", help="endpoint URL (streamable_http, sse)")
    add.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                     help="environment variable (stdio); visible in the process list: give secrets with --env-stdin")
    add.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                     help="HTTP header; visible in the process list: give secrets with --headers-stdin")
    add.add_argument("--env-stdin", action="store_true", help="read environment variables from stdin")
    add.add_argument("--headers-stdin", action="store_true", help="read HTTP headers from stdin")
    add.add_argument("--disabled", action="store_true", help="register it disabled")
    add.add_argument("--json", action="store_true")
    add.set_defaults(func=_add)

    presets = cmds.add_parser("presets", help="the known MCP servers `mcp add --preset` can add")
    presets.add_argument("--json", action="store_true")
    presets.set_defaults(func=_presets)

    lst = cmds.add_parser("list", help="list the MCP servers")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_list)

    show = cmds.add_parser("show", help="one server with its cached tools (secret values are never shown)")
    show.add_argument("name", metavar="NAME")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_show)

    test = cmds.add_parser("test", help="connect, list the tools with their input schemas, or print the error")
    test.add_argument("name", metavar="NAME")
    test.add_argument("--timeout", type=float, default=20.0, help="seconds to wait for the server (default 20)")
    test.add_argument("--json", action="store_true")
    test.set_defaults(func=_test)

    for name, enabled in (("enable", True), ("disable", False)):
        p = cmds.add_parser(name, help=f"{name} a server for every bot that uses it")
        p.add_argument("name", metavar="NAME")
        p.set_defaults(func=_enable, enabled=enabled)

    delete = cmds.add_parser("delete", help="unregister a server")
    delete.add_argument("name", metavar="NAME")
    delete.set_defaults(func=_delete)


def _stdin_pairs(what: str) -> dict[str, str]:
    if sys.stdin is None or sys.stdin.closed:
        raise ValidationError(f"expected {what} on standard input")
    lines = [line.rstrip("\n") for line in sys.stdin if line.strip() and not line.lstrip().startswith("#")]
    return parse_pairs(lines, what)


def _secrets_problem(problem: str) -> str:
    """A preset's missing secrets, with the flags that give them."""
    missing = re.findall(r"(?:needs |, )([A-Za-z][\w-]*) \(", problem)
    if not missing:
        return f"--secret: {problem}"
    flags = " ".join(f"--secret {key}=..." for key in missing)
    return f"{problem}: give {'it' if len(missing) == 1 else 'them'} with {flags} (or --secrets-stdin)"


# The flags of ``mcp add`` by the server's field names (for the services' errors).
FLAGS: dict[str, Flag] = {"name": "NAME", "transport": "--transport", "command": "--command", "args": "--arg",
                          "env": "--env", "cwd": "--cwd", "url": "--url", "headers": "--header",
                          "secrets": _secrets_problem}


def _add(args: argparse.Namespace) -> int:
    if args.preset:
        return _add_preset(args)
    if args.secret or args.secrets_stdin:
        raise ValidationError("--secret and --secrets-stdin go with --preset; give a server's own secrets "
                              "with --env-stdin or --headers-stdin")
    if not args.name:
        raise ValidationError("a NAME is required (or --preset PRESET)")
    env = parse_pairs(args.env, "--env")
    headers = parse_pairs(args.header, "--header")
    if args.env_stdin and args.headers_stdin:
        raise ValidationError("read either the environment or the headers from stdin, not both")
    if args.env_stdin:
        env.update(_stdin_pairs("environment variables"))
    if args.headers_stdin:
        headers.update(_stdin_pairs("HTTP headers"))
    transport = args.transport or ("streamable_http" if args.url and not args.command else "stdio")
    with session_scope() as session, naming_flags(FLAGS):
        server = mcp_servers.create_server(
            session=session,
            name=args.name,
            transport=transport,
            command=args.command,
            args=list(args.arg),
            cwd=args.cwd,
            url=args.url,
            env=env or None,
            headers=headers or None,
            enabled=not args.disabled,
        )
        summary = mcp_servers.server_summary(server)
    return _added(args, summary)


def _add_preset(args: argparse.Namespace) -> int:
    from grobot.core.services import mcp_presets

    given = [args.command, args.arg, args.cwd, args.url, args.env, args.header, args.env_stdin, args.headers_stdin,
             args.transport]
    if any(given):
        raise ValidationError("--preset sets the command or URL itself: give only NAME, --secret and --disabled")
    secrets = parse_pairs(args.secret, "--secret")
    if args.secrets_stdin:
        secrets.update(_stdin_pairs("secrets"))
    with session_scope() as session, naming_flags(FLAGS):
        server = mcp_presets.add_from_preset(session=session, preset=args.preset, name=args.name, secrets=secrets,
                                             enabled=not args.disabled)
        summary = mcp_servers.server_summary(server)
    return _added(args, summary)


def _added(args: argparse.Namespace, summary: dict) -> int:
    """After ``mcp add``: connect to the new server (unless told not to) and say what it offers."""
    line = ""
    if not (args.no_test or args.disabled):
        from grobot.core.services.mcp_tool_lists import report_line

        report = asyncio.run(_run_test(summary["name"], 20.0))
        line = report_line(report)
        summary = {**summary, "tools": [t.name for t in report.tools], "last_error": report.error}
    if args.json:
        print_json(summary)
        return 0
    print(f"MCP server '{summary['name']}' added (id {summary['id']}, {summary['transport']})")
    if line:
        print(line if line.startswith("OK") else f"warning: {line}")
    else:
        print(f"check it with: python -m grobot mcp test {summary['name']}")
    print(f"give it to a bot with: python -m grobot bot mcp BOT enable {summary['name']}")
    return 0


def _presets(args: argparse.Namespace) -> int:
    from grobot.core.services import mcp_presets

    rows = mcp_presets.catalogue()
    if args.json:
        print_json(rows)
        return 0
    for tier in ("keyless", "keys"):
        group = [r for r in rows if r["tier"] == tier]
        print(f"{group[0]['tier_label']}:")
        print_table(
            [[r["name"], r["transport"], ", ".join(s["key"] for s in r["secrets"]) or "-", r["package"] or r["where"],
              "-" if r["transport"] != "stdio" else "yes" if r["installed"] else "no (uvx/npx fetch it on first start)"]
             for r in group],
            ["PRESET", "TRANSPORT", "SECRETS", "PACKAGE OR URL", "INSTALLED HERE"],
        )
        print()
    print("Add one with: python -m grobot mcp add --preset PRESET [NAME] [--secret KEY=VALUE ...]")
    return 0


def _where(summary: dict) -> str:
    if summary["transport"] == "stdio":
        return " ".join([summary["command"] or "", *summary["args"]]).strip()
    return summary["url"] or ""


def _list(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        rows = [mcp_servers.server_summary(s) for s in mcp_servers.list_servers(session=session)]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("No MCP servers. Add one with: python -m grobot mcp add NAME --command CMD")
        return 0
    print_table(
        [
            [r["name"], r["transport"], _where(r)[:60], "yes" if r["enabled"] else "no", len(r["tools"]),
             (r["last_error"] or "")[:80]]
            for r in rows
        ],
        ["NAME", "TRANSPORT", "WHERE", "ENABLED", "TOOLS", "LAST ERROR"],
    )
    return 0


def _show(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        server = mcp_servers.get_server(args.name, session=session)
        summary = mcp_servers.server_summary(server)
        summary["tools_cache"] = server.tools_cache or []
    if args.json:
        print_json(summary)
        return 0
    for key in ("name", "transport", "command", "args", "cwd", "url", "env", "headers", "enabled",
                "tools_refreshed_at", "last_error"):
        print(f"{key}: {summary[key]}")
    for tool in summary["tools_cache"]:
        print(f"  - {tool['name']}: {tool.get('description', '')}")
    return 0


async def _run_test(name: str, timeout: float):
    from grobot.core.services.mcp_tool_lists import check_and_store

    hub = logging.getLogger("grobot.core.tools.mcp_hub")
    level = hub.level
    if not logging.getLogger().isEnabledFor(logging.INFO):  # the report's error is printed: no warning before it
        hub.setLevel(logging.ERROR)
    try:
        return await check_and_store(name, timeout=timeout)
    finally:
        hub.setLevel(level)


def _test(args: argparse.Namespace) -> int:
    report = asyncio.run(_run_test(args.name, args.timeout))
    if not report.ok:
        if args.json:
            print_json({"name": report.name, "ok": False, "error": report.error})
            return 2
        raise GroBotError(report.error)
    from grobot.core.tools.mcp_results import tool_as_dict

    tools = [tool_as_dict(t) for t in report.tools]
    if args.json:
        print_json({
            "name": report.name, "ok": True, "server": report.server_name, "version": report.server_version,
            "protocol_version": report.protocol_version, "connect_ms": round(report.connect_ms, 1), "tools": tools,
        })
        return 0
    print(f"MCP server '{report.name}' OK: {report.server_name} {report.server_version} "
          f"(protocol {report.protocol_version}), connected in {report.connect_ms:.0f} ms, {len(tools)} tools")
    for tool in tools:
        flag = " [read-only]" if tool["read_only"] else " [writes]" if tool["writes"] else ""
        print(f"\n{tool['name']}{flag}: {tool['description'].strip()}")
        print("  input: " + json.dumps(tool["input_schema"], indent=None, sort_keys=True))
    return 0


def _enable(args: argparse.Namespace) -> int:
    with session_scope() as session:
        server = mcp_servers.get_server(args.name, session=session)
        mcp_servers.update_server(server, {"enabled": args.enabled}, session=session)
    print(f"MCP server '{args.name}' {'enabled' if args.enabled else 'disabled'}")
    return 0


def _delete(args: argparse.Namespace) -> int:
    with session_scope() as session:
        server = mcp_servers.get_server(args.name, session=session)
        mcp_servers.delete_server(server, session=session)
    print(f"MCP server '{args.name}' deleted")
    return 0
