"""``bot schedule ACTION BOT ...``: a bot's scheduled posts (a fixed text or a prompt, on a cron or an interval)."""

from __future__ import annotations

import argparse

from grobot.cli.output import print_json
from grobot.core.db import session_scope
from grobot.core.models import BotSchedule
from grobot.core.services import bots, schedules


def register(bot_subparsers: argparse._SubParsersAction) -> None:
    """Add ``schedule`` to the ``bot`` command group."""
    parser = bot_subparsers.add_parser(
        "schedule", help="posts a bot makes on its own: a fixed text or its answer to a prompt",
        description="A schedule posts in a channel on a cron (five fields: minute hour day month weekday) or every "
                    "N seconds, in a time zone. The worker runs it once per run, even with several supervisors. "
                    "A run missed by more than its grace time (the worker was down) is skipped and logged; at most "
                    "one missed run is caught up.")
    acts = parser.add_subparsers(dest="bot_schedule_action", metavar="ACTION", required=True)

    add = acts.add_parser("add", help="add a schedule")
    add.add_argument("bot", metavar="BOT", help="bot id or name")
    add.add_argument("--channel", required=True, help="the Discord id of the channel to post in")
    when = add.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", help="e.g. '0 9 * * mon' (each Monday at 09:00)")
    when.add_argument("--every", type=int, metavar="SECONDS", help="an interval in seconds")
    what = add.add_mutually_exclusive_group(required=True)
    what.add_argument("--text", help="a fixed text to post")
    what.add_argument("--prompt", help="a prompt the bot answers (with its tools); the answer is posted")
    add.add_argument("--tz", default="UTC", help="time zone, e.g. Europe/Paris (default UTC)")
    add.add_argument("--name", default="", help="a name to find it by")
    add.add_argument("--grace", type=int, default=schedules.DEFAULT_GRACE_SECONDS, metavar="SECONDS",
                     help="a run missed by more than this is skipped (default %(default)s)")
    add.add_argument("--json", action="store_true")
    add.set_defaults(func=_add)

    show = acts.add_parser("list", help="the bot's schedules with their next run")
    show.add_argument("bot", metavar="BOT", help="bot id or name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_list)

    for action, help_text in (("pause", "no run until resumed"), ("resume", "runs again, from the next time on"),
                              ("delete", "delete the schedule"), ("run", "post it now (the worker does)")):
        sub = acts.add_parser(action, help=help_text)
        sub.add_argument("bot", metavar="BOT", help="bot id or name")
        sub.add_argument("schedule", type=int, metavar="SCHEDULE", help="the schedule's number (see list)")
        sub.set_defaults(func=_act)


def _as_dict(row: BotSchedule) -> dict[str, object]:
    return {"id": row.id, "name": row.name, "channel_id": row.channel_id, "kind": row.kind, "content": row.content,
            "cron": row.cron, "interval_seconds": row.interval_seconds, "timezone": row.timezone,
            "grace_seconds": row.grace_seconds, "enabled": row.enabled,
            "next_run": schedules.in_zone(row.next_run_at, row.timezone),
            "last_run": schedules.in_zone(row.last_run_at, row.timezone), "last_status": row.last_status}


def _print(row: BotSchedule) -> None:
    state = "next " + (schedules.in_zone(row.next_run_at, row.timezone) or "-") if row.enabled else "paused"
    print(f"  {row.id:>4}  {row.name or '-':20}  {schedules.describe(row)}; {state}")
    print(f"        {'prompt' if row.kind == 'prompt' else 'text'}: {row.content[:70]}")
    if row.last_status:
        print(f"        last: {schedules.in_zone(row.last_run_at, row.timezone) or '-'} {row.last_status}")


def _add(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        assert bot.id is not None
        row = schedules.create_schedule(
            bot.id, channel_id=args.channel, content=args.prompt if args.prompt is not None else args.text,
            kind="prompt" if args.prompt is not None else "text", cron=args.cron or "",
            interval_seconds=args.every or 0, timezone=args.tz, name=args.name, grace_seconds=args.grace,
            session=session)
        if args.json:
            print_json(_as_dict(row))
        else:
            print(f"Schedule {row.id} added to bot '{bot.name}':")
            _print(row)
    return 0


def _list(args: argparse.Namespace) -> int:
    with session_scope(readonly=True) as session:
        bot = bots.get_bot(args.bot, session=session)
        assert bot.id is not None
        rows = schedules.list_schedules(bot.id, session=session)
        if args.json:
            print_json([_as_dict(r) for r in rows])
            return 0
        print(f"Schedules of bot '{bot.name}':" if rows else f"Bot '{bot.name}' has no schedules.")
        for row in rows:
            _print(row)
    return 0


def _act(args: argparse.Namespace) -> int:
    action = args.bot_schedule_action
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        assert bot.id is not None
        if action == "delete":
            schedules.delete_schedule(bot.id, args.schedule, session=session)
            print(f"Schedule {args.schedule} deleted.")
            return 0
        if action == "run":
            schedules.request_run(bot.id, args.schedule, session=session)
            print(f"Schedule {args.schedule} will be posted by the worker within a second or two.")
            return 0
        row = schedules.set_enabled(bot.id, args.schedule, action == "resume", session=session)
        print(f"Schedule {row.id} {'resumed' if row.enabled else 'paused'}.")
        _print(row)
    return 0
