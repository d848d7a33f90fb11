"""``usage``: LLM calls and tokens per bot."""

from __future__ import annotations

import argparse

from grobot.cli.output import print_json, print_table
from grobot.core.db import session_scope
from grobot.core.services import usage


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("usage", help="LLM calls and tokens per bot")
    parser.add_argument("--days", type=int, default=7, help="how far back (default 7)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=_usage)


def _usage(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        rows = usage.usage_by_bot(session=session, days=max(1, args.days))
    if args.json:
        print_json([r.as_dict() for r in rows])
    elif not rows:
        print(f"no LLM calls in the last {args.days} days")
    else:
        print_table([(r.bot_name, r.calls, r.tokens_in, r.tokens_out, r.errors, r.avg_latency_ms) for r in rows],
                    ["BOT", "CALLS", "TOKENS IN", "TOKENS OUT", "ERRORS", "AVG MS"])
    return 0
