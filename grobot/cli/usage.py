"""``usage``: today's LLM usage of every bot against its daily limits; one bot's days; totals over N days."""

from __future__ import annotations

import argparse
import logging

from grobot.cli.output import print_json, print_table
from grobot.core.db import session_scope
from grobot.core.services import usage

logger = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("usage", help="today's LLM usage per bot against its daily limits",
                            description="Without arguments: every bot today (UTC) against its limits. With BOT: that "
                                        "bot's last days and today's busiest users. With --days N alone: calls, "
                                        "tokens, errors and latency per bot over the last N days.")
    parser.add_argument("bot", metavar="BOT", nargs="?", help="one bot (id or name)")
    parser.add_argument("--days", type=int, default=None, help="how far back (BOT: default 14)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=_usage)


def _limit(value: int, unlimited: str = "-") -> str:
    return str(value) if value else unlimited


def _usage(args: argparse.Namespace) -> int:
    if args.bot is not None:
        return _one_bot(args)
    if args.days is not None:
        return _totals(args)
    with session_scope(readonly=True) as session:
        rows = usage.fleet_usage(session=session)
    if args.json:
        print_json([r.as_dict() for r in rows])
    elif not rows:
        print("no bots yet")
    else:
        print(f"usage today ({rows[0].day} UTC); limits: - = unlimited")
        print_table([(r.bot_name, r.tokens, _limit(r.token_limit), r.calls, _limit(r.call_limit), r.errors,
                      _limit(r.user_message_limit), r.users_at_limit, "LIMIT REACHED" if r.over_limit else "")
                     for r in rows],
                    ["BOT", "TOKENS", "TOKEN LIMIT", "CALLS", "CALL LIMIT", "ERRORS", "USER MSG LIMIT",
                     "USERS AT LIMIT", ""])
    return 0


def _one_bot(args: argparse.Namespace) -> int:
    from grobot.core.services import bots

    with session_scope(readonly=True) as session:
        bot = bots.get_bot(args.bot, session=session)
        result = usage.bot_usage(bot.id or 0, session=session, days=max(1, args.days or 14))
    if args.json:
        print_json(result.as_dict())
        return 0
    t = result.today
    print(f"{t.bot_name} today ({t.day} UTC): {t.tokens} tokens of {_limit(t.token_limit, 'unlimited')}, {t.calls} "
          f"LLM calls of {_limit(t.call_limit, 'unlimited')}, {t.errors} errors; per-user message limit "
          f"{_limit(t.user_message_limit, 'none')} "
          f"({t.users_at_limit} user(s) at it){'; LIMIT REACHED' if t.over_limit else ''}")
    if result.days:
        print_table([(d.day, d.calls, d.tokens_in, d.tokens_out, d.errors) for d in result.days],
                    ["DAY", "CALLS", "TOKENS IN", "TOKENS OUT", "ERRORS"])
    if result.top_users:
        print_table(result.top_users, ["DISCORD USER", "MESSAGES TODAY"])
    return 0


def _totals(args: argparse.Namespace) -> int:
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
