"""``usage``: LLM usage and estimated cost of every bot today and this month against its limits and
budgets; one bot's days; totals per bot, model, day or month over N days. ``prices``: the prices
per million tokens that estimate the costs, and their currency."""

from __future__ import annotations

import argparse
import logging

from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import naming_flags, print_json, print_table
from grobot.core.db import session_scope
from grobot.core.services import costs, usage, usage_charts
from grobot.core.wording import counted

logger = logging.getLogger(__name__)

BY_CHOICES = ("bot", "model", "day", "month", "user", "source")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("usage", help=COMMAND_HELP["usage"],
                            description="Without arguments: every bot today and this month (UTC) against its limits "
                                        "and budgets, with its estimated cost and any budget at 80 %% or more. With "
                                        "BOT: that bot's last days and today's busiest users. With --days N (or "
                                        "--by): calls, tokens, errors, latency and cost over the last N days, per "
                                        "bot (default), model, day, month, Discord user or source.")
    parser.add_argument("bot", metavar="BOT", nargs="?", help="one bot (id or name)")
    parser.add_argument("--days", type=int, default=None,
                        help=f"how far back, 1 to {usage_charts.MAX_DAYS} (BOT: default 14; --by: default 30; else 7)")
    parser.add_argument("--by", choices=BY_CHOICES, default=None, help="group the totals of the last N days")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=_usage)

    prices = sub.add_parser("prices", help=COMMAND_HELP["prices"],
                            description="Prices per million input and output tokens per provider and model: the "
                                        "admin's, then defaults for well-known cloud models; local models (ollama, "
                                        "llamacpp) are free. A call of a model without a price has no cost.")
    cmds = prices.add_subparsers(dest="prices_command", metavar="ACTION")
    cmds.required = True
    list_ = cmds.add_parser("list", help="the admin's prices and the defaults")
    list_.add_argument("--json", action="store_true")
    list_.set_defaults(func=_prices_list)
    set_ = cmds.add_parser("set", help="set the price of a model")
    set_.add_argument("provider", metavar="PROVIDER")
    set_.add_argument("model", metavar="MODEL")
    set_.add_argument("--input", required=True, metavar="PRICE", help="per million input tokens")
    set_.add_argument("--output", required=True, metavar="PRICE", help="per million output tokens")
    set_.set_defaults(func=_prices_set)
    delete = cmds.add_parser("delete", help="remove the admin's price of a model (its default applies again)")
    delete.add_argument("provider", metavar="PROVIDER")
    delete.add_argument("model", metavar="MODEL")
    delete.set_defaults(func=_prices_delete)
    currency = cmds.add_parser("currency", help="show or set the currency of prices and costs (default EUR)")
    currency.add_argument("code", metavar="CODE", nargs="?", help="a three-letter code, e.g. EUR, USD")
    currency.set_defaults(func=_currency)


def _limit(value: float, unlimited: str = "-") -> str:
    if not value:
        return unlimited
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _cost(value: float) -> str:
    return f"{value:.4f}" if value < 1 else f"{value:,.2f}"


def _alert_text(row: usage.BotDayUsage) -> str:
    return ", ".join(f"{a['percent']:.0f}% {a['label']}" for a in row.alerts)


def _usage(args: argparse.Namespace) -> int:
    if args.days is not None:
        with naming_flags({"days": "--days"}):
            usage_charts.check_days(args.days)
    if args.bot is not None and args.by is None:
        return _one_bot(args)
    if args.by is not None or args.days is not None:
        return _totals(args)
    with session_scope(readonly=True) as session:
        rows = usage.fleet_usage(session=session)
        currency = costs.get_currency(session=session)
    if args.json:
        print_json([{**r.as_dict(), "currency": currency} for r in rows])
    elif not rows:
        print("no bots yet")
    else:
        print(f"usage today ({rows[0].day} UTC) and this month ({rows[0].month}); limits: - = unlimited; "
              f"costs estimated in {currency}")
        print_table([(r.bot_name, r.tokens, _limit(r.token_limit), r.calls, _limit(r.call_limit), r.errors,
                      _cost(r.cost), r.month_tokens, r.month_calls, _cost(r.month_cost),
                      _limit(r.month_cost_limit), _limit(r.user_message_limit), r.users_at_limit,
                      "LIMIT REACHED" if r.over_limit else _alert_text(r))
                     for r in rows],
                    ["BOT", "TOKENS", "TOKEN LIMIT", "CALLS", "CALL LIMIT", "ERRORS", "COST", "MONTH TOKENS",
                     "MONTH CALLS", "MONTH COST", "MONTH COST LIMIT", "USER MSG LIMIT", "USERS AT LIMIT", "ALERT"])
    return 0


def _one_bot(args: argparse.Namespace) -> int:
    from grobot.core.services import bots

    with session_scope(readonly=True) as session:
        bot = bots.get_bot(args.bot, session=session)
        result = usage.bot_usage(bot.id or 0, session=session, days=args.days or 14)
        currency = costs.get_currency(session=session)
    if args.json:
        print_json({**result.as_dict(), "currency": currency})
        return 0
    t = result.today
    print(f"{t.bot_name} today ({t.day} UTC): {t.tokens} tokens of {_limit(t.token_limit, 'unlimited')}, {t.calls} "
          f"LLM calls of {_limit(t.call_limit, 'unlimited')}, {t.errors} errors, cost {currency} {_cost(t.cost)}; "
          f"per-user message limit {_limit(t.user_message_limit, 'none')} "
          f"({counted(t.users_at_limit, 'user')} at it){'; LIMIT REACHED' if t.over_limit else ''}")
    print(f"this month ({t.month}): {t.month_tokens} tokens of {_limit(t.month_token_limit, 'unlimited')}, "
          f"{t.month_calls} LLM calls of {_limit(t.month_call_limit, 'unlimited')}, cost {currency} "
          f"{_cost(t.month_cost)} of {_limit(t.month_cost_limit, 'unlimited')}")
    for alert in t.alerts:
        print(f"ALERT: {alert['percent']:.0f}% of the {alert['label']} budget used ({alert['period']})")
    if result.days:
        print_table([(d.day, d.calls, d.tokens_in, d.tokens_out, d.errors, _cost(d.cost)) for d in result.days],
                    ["DAY", "CALLS", "TOKENS IN", "TOKENS OUT", "ERRORS", f"COST ({currency})"])
    if result.top_users:
        print_table(result.top_users, ["DISCORD USER", "MESSAGES TODAY"])
    return 0


def _totals(args: argparse.Namespace) -> int:
    by = args.by or "bot"
    days = args.days or (7 if args.by is None else 30)
    with session_scope(readonly=True) as session:
        bot_id = None
        if args.bot is not None:
            from grobot.core.services import bots

            bot_id = bots.get_bot(args.bot, session=session).id
        currency = costs.get_currency(session=session)
        if by == "month":
            months = usage_charts.by_month(session=session, months=max(1, (days + 30) // 31), bot_id=bot_id,
                                           per_bot=bot_id is None)
        elif by == "bot" and bot_id is None and args.by is None:
            rows = usage.usage_by_bot(session=session, days=days)
        else:
            query = {"bot": usage_charts.by_bot, "model": usage_charts.by_model, "day": usage_charts.by_day,
                     "user": usage_charts.by_user, "source": usage_charts.by_source}[by]
            points = query(session=session, days=days) if by == "bot" else query(session=session, days=days,
                                                                                     bot_id=bot_id)
    if by == "month":
        if args.json:
            print_json([{**m.as_dict(), "currency": currency} for m in months])
        elif not months:
            print("no LLM calls in these months")
        else:
            print_table([(m.month, m.bot_name or "(all)", m.calls, m.tokens, _cost(m.cost)) for m in months],
                        ["MONTH", "BOT", "CALLS", "TOKENS", f"COST ({currency})"])
        return 0
    if by == "bot" and bot_id is None and args.by is None:
        if args.json:
            print_json([{**r.as_dict(), "currency": currency} for r in rows])
        elif not rows:
            print(f"no LLM calls in the last {days} days")
        else:
            print_table([(r.bot_name, r.calls, r.tokens_in, r.tokens_out, r.errors, r.avg_latency_ms, _cost(r.cost))
                         for r in rows],
                        ["BOT", "CALLS", "TOKENS IN", "TOKENS OUT", "ERRORS", "AVG MS", f"COST ({currency})"])
        return 0
    if args.json:
        print_json([{**p.as_dict(), "currency": currency} for p in points])
    elif not points:
        print(f"no LLM calls in the last {days} days")
    else:
        print_table([(p.label, p.calls, p.tokens_in, p.tokens_out, p.errors, p.avg_latency_ms, _cost(p.cost))
                     for p in points],
                    [by.upper(), "CALLS", "TOKENS IN", "TOKENS OUT", "ERRORS", "AVG MS", f"COST ({currency})"])
    return 0


# --------------------------------------------------------------------------- prices


def _prices_list(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        prices = costs.list_prices(session=session)
        currency = costs.get_currency(session=session)
    if args.json:
        print_json({"currency": currency, "free_providers": sorted(costs.FREE_PROVIDERS),
                    "prices": [p.as_dict() for p in prices]})
        return 0
    print(f"prices per million tokens in {currency}; free: {', '.join(sorted(costs.FREE_PROVIDERS))}")
    print_table([(p.provider, p.model, f"{p.input_per_million:g}", f"{p.output_per_million:g}", p.source)
                 for p in prices], ["PROVIDER", "MODEL", "INPUT", "OUTPUT", "SOURCE"])
    return 0


def _prices_set(args: argparse.Namespace) -> int:
    with session_scope() as session:
        price = costs.set_price(args.provider, args.model, args.input, args.output, session=session)
        currency = costs.get_currency(session=session)
    print(f"price of {price.provider}/{price.model}: {currency} {price.input_per_million:g} in, "
          f"{price.output_per_million:g} out per million tokens")
    return 0


def _prices_delete(args: argparse.Namespace) -> int:
    with session_scope() as session:
        costs.delete_price(args.provider, args.model, session=session)
    print(f"price of {args.provider}/{args.model} removed")
    return 0


def _currency(args: argparse.Namespace) -> int:
    with session_scope() as session:
        code = costs.set_currency(args.code, session=session) if args.code else costs.get_currency(session=session)
    print(code)
    return 0
