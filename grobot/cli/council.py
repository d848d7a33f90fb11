"""``council``: a bot's advisory council: on/off, advisors and their LLMs, asking it, past deliberations."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any

from grobot.cli.embedded_models import serve_embedded, stop_embedded
from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import print_json, print_table
from grobot.core.db import session_scope
from grobot.core.errors import GroBotError, ValidationError
from grobot.core.services import bots, council

logger = logging.getLogger(__name__)

CATEGORIES = ("decision", "tools", "output")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("council", help=COMMAND_HELP["council"],
                            description="The advisory council puts a question to several advisors at once (each "
                                        "with its role and LLM), then a synthesis states the consensus, the "
                                        "disagreements and a confidence score. On Discord: /council QUESTION.")
    commands = parser.add_subparsers(dest="council_command", metavar="ACTION", required=True)

    show = commands.add_parser("show", help="the council of a bot: on or off, the advisors and the LLMs they use")
    show.add_argument("bot", metavar="BOT")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_show)

    for name, on in (("enable", True), ("disable", False)):
        toggle = commands.add_parser(name, help=f"{name} the council of a bot (the /council command)")
        toggle.add_argument("bot", metavar="BOT")
        toggle.set_defaults(func=_toggle, on=on)

    set_ = commands.add_parser("set", help="add or change an advisor: role text, LLM category, provider, model",
                               description="An advisor uses one of the bot's LLM categories (default output), "
                                           "optionally with another provider and/or model; an empty value "
                                           "(--provider '') goes back to the category's.")
    set_.add_argument("bot", metavar="BOT")
    set_.add_argument("advisor", metavar="ADVISOR", help="the advisor's name, e.g. Analyst")
    _llm_arguments(set_)
    set_.add_argument("--role", help="the advisor's role text (its system prompt)")
    set_.add_argument("--rename", help="a new name")
    set_.add_argument("--enabled", choices=("true", "false"), help="whether it takes part")
    set_.set_defaults(func=_set)

    synthesis = commands.add_parser("synthesis", help="the LLM of the synthesis (default: the bot's output category)")
    synthesis.add_argument("bot", metavar="BOT")
    _llm_arguments(synthesis)
    synthesis.set_defaults(func=_synthesis)

    remove = commands.add_parser("remove", help="remove an advisor")
    remove.add_argument("bot", metavar="BOT")
    remove.add_argument("advisor", metavar="ADVISOR")
    remove.set_defaults(func=_remove)

    reset = commands.add_parser("reset", help="back to the five default advisors")
    reset.add_argument("bot", metavar="BOT")
    reset.set_defaults(func=_reset)

    ask = commands.add_parser("ask", help="put a question to the council now and print it as the advisors answer")
    ask.add_argument("bot", metavar="BOT")
    ask.add_argument("question", metavar="QUESTION")
    ask.add_argument("--json", action="store_true", help="print the stored deliberation as JSON at the end")
    ask.set_defaults(func=_ask)

    history = commands.add_parser("list", help="a bot's past deliberations, newest first")
    history.add_argument("bot", metavar="BOT")
    history.add_argument("--limit", type=int, default=20)
    history.add_argument("--json", action="store_true")
    history.set_defaults(func=_list)

    view = commands.add_parser("view", help="one deliberation in full")
    view.add_argument("id", metavar="ID", type=int)
    view.add_argument("--json", action="store_true")
    view.set_defaults(func=_view)


def _llm_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--category", choices=CATEGORIES, help="which of the bot's LLM settings it starts from")
    parser.add_argument("--provider", help="another provider ('' = the category's)")
    parser.add_argument("--model", help="another model ('' = the category's)")


def _bot_id(ref: str, session: Any) -> int:
    return bots.get_bot(ref, session=session).id or 0


def _show(args: argparse.Namespace) -> int:
    with session_scope() as session:
        bot_id = _bot_id(args.bot, session)
        row = council.get_council(bot_id, session=session)
        plan = council.council_plan(bot_id, session=session)
        uses = {a.name: council.describe_llm(a.llm) for a in plan.advisors}
        members: list[dict[str, Any]] = [
            {"name": a.name, "enabled": a.enabled, "category": a.category, "provider": a.provider, "model": a.model,
             "uses": uses.get(a.name, ""), "role": a.role} for a in council.advisors(bot_id, session=session)]
        synthesis = council.describe_llm(plan.synthesizer)
        enabled = bool(row.enabled)
    if args.json:
        print_json({"enabled": enabled, "synthesis": synthesis, "advisors": members})
        return 0
    print(f"council: {'enabled' if enabled else 'disabled'}; synthesis on {synthesis}")
    print_table([(m["name"], "yes" if m["enabled"] else "no", m["category"], m["uses"], _short(m["role"], 60))
                 for m in members], ["ADVISOR", "ON", "CATEGORY", "LLM", "ROLE"])
    return 0


def _toggle(args: argparse.Namespace) -> int:
    with session_scope() as session:
        council.set_council(_bot_id(args.bot, session), session=session, enabled=args.on)
    print(f"council {'enabled' if args.on else 'disabled'}")
    return 0


def _set(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {"role": args.role, "category": args.category, "provider": args.provider,
                              "model": args.model, "new_name": args.rename}
    if args.enabled is not None:
        fields["enabled"] = args.enabled == "true"
    with session_scope() as session:
        row = council.set_advisor(_bot_id(args.bot, session), args.advisor, session=session,
                                  **{k: v for k, v in fields.items() if v is not None})
        name = row.name
    print(f"advisor {name} saved")
    return 0


def _synthesis(args: argparse.Namespace) -> int:
    fields = {f"synthesis_{k}": getattr(args, k) for k in ("category", "provider", "model")
              if getattr(args, k) is not None}
    if not fields:
        raise ValidationError("nothing to change: give --category, --provider or --model")
    with session_scope() as session:
        council.set_council(_bot_id(args.bot, session), session=session, **fields)
    print("synthesis LLM saved")
    return 0


def _remove(args: argparse.Namespace) -> int:
    with session_scope() as session:
        council.delete_advisor(_bot_id(args.bot, session), args.advisor, session=session)
    print(f"advisor {args.advisor} removed")
    return 0


def _reset(args: argparse.Namespace) -> int:
    with session_scope() as session:
        council.reset_advisors(_bot_id(args.bot, session), session=session)
    print("the council has the five default advisors again")
    return 0


def _ask(args: argparse.Namespace) -> int:
    from grobot.core.agents.types import Event, EventKind
    from grobot.core.store.council_run import run_council

    with session_scope(readonly=True) as session:
        bot_id = _bot_id(args.bot, session)
        llms = _council_llms(bot_id, args.bot, session)  # before any model is loaded: can the council meet?
    found: dict[str, Any] = {}

    async def sink(event: Event) -> None:
        if event.kind is EventKind.TOKEN and not args.json:
            sys.stdout.write(str(event.data.get("text", "")))
            sys.stdout.flush()
        elif event.kind is EventKind.DONE:
            found.update(event.data)

    async def ask() -> str | None:
        servers = await serve_embedded(llms)  # an embedded model no worker serves runs here
        try:
            return (await run_council(bot_id, args.question, asked_by="cli", platform="cli", sink=sink))[1]
        finally:
            await stop_embedded(servers)

    error = asyncio.run(ask())
    if error:
        raise ValidationError(error)
    with session_scope(readonly=True) as session:
        failed = council.get_deliberation(int(found["deliberation_id"]), session=session).error
    if args.json:
        _view(argparse.Namespace(id=found.get("deliberation_id"), json=True))
    else:
        print()
    if failed:  # the advisors answered (shown, stored) but there is no synthesis: the question has no answer
        print(f"error: the synthesis could not be made: {' '.join(failed.split())}", file=sys.stderr)
        return 2
    return 0


def _council_llms(bot_id: int, ref: str, session: Any) -> list[Any]:
    """The LLMs a deliberation of the bot would use; an error when its council is off or has no advisor."""
    try:
        plan = council.council_plan(bot_id, session=session)
    except GroBotError:
        return []  # the run says why
    if not plan.enabled:
        raise ValidationError(f"the council of {plan.bot_name} is not enabled: turn it on with "
                              f"python -m grobot council enable {_quoted(ref)}")
    if not plan.advisors:
        raise ValidationError(f"the council of {plan.bot_name} has no enabled advisor: add one with "
                              f"python -m grobot council set {_quoted(ref)} ADVISOR, or council reset {_quoted(ref)}")
    return [advisor.llm for advisor in plan.advisors] + [plan.synthesizer]


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _list(args: argparse.Namespace) -> int:
    from grobot.core.services import costs

    with session_scope(readonly=True) as session:
        rows = [_as_dict(r) for r in council.list_deliberations(_bot_id(args.bot, session), session=session,
                                                                limit=max(1, args.limit))]
        currency = costs.get_currency(session=session)
    if args.json:
        print_json(rows)
    elif not rows:
        print("no deliberations yet")
    else:
        print_table([(r["id"], r["created_at"].strftime("%Y-%m-%d %H:%M"), _short(r["question"], 50),
                      len(r["advisors"]), r["status"] if r["confidence"] is None else r["confidence"],
                      r["tokens_in"] + r["tokens_out"], costs.money(r["cost"], currency), f"{r['seconds']:.1f} s")
                     for r in rows],
                    ["ID", "WHEN (UTC)", "QUESTION", "ADVISORS", "CONFIDENCE", "TOKENS", "COST", "TIME"])
    return 0


def _view(args: argparse.Namespace) -> int:
    from grobot.core.services import costs

    with session_scope(readonly=True) as session:
        row = _as_dict(council.get_deliberation(int(args.id), session=session))
        currency = costs.get_currency(session=session)
    if args.json:
        print_json(row)
        return 0
    print(f"deliberation {row['id']} ({row['created_at']:%Y-%m-%d %H:%M} UTC, {row['platform']}, "
          f"asked by {row['asked_by'] or '?'}): {row['question']}\n")
    for a in row["advisors"]:
        status = f"could not answer: {a.get('error')}" if a.get("error") else a.get("answer", "")
        if a.get("state"):  # the deliberation is still running
            status = "answering…" if a["state"] == "answering" else "waiting for its turn on the model"
        print(f"## {a.get('name')} ({a.get('provider')} {a.get('model')}, {float(a.get('seconds') or 0):.1f} s)")
        print(f"{status}\n")
    print(row["synthesis"] or f"(the synthesis comes once the advisors have answered: {row['status']})")
    print(f"\n{row['tokens_in']} tokens in, {row['tokens_out']} out, {row['seconds']:.1f} s"
          + (f", cost {costs.money(row['cost'], currency)}" if row["cost"] is not None else ""))
    return 0


def _as_dict(row: Any) -> dict[str, Any]:
    return {**row.model_dump(), "status": council.deliberation_status(row)}


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
