"""``chat BOT MESSAGE``: answer one message on the path Discord and Test Chat take
(:mod:`grobot.core.answering`) and print the answer as it streams, with the events."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from typing import Any

from grobot.cli.embedded_models import serve_embedded, stop_embedded
from grobot.cli.main import COMMAND_HELP
from grobot.cli.output import print_json
from grobot.core.errors import ValidationError
from grobot.core.llm.embedded_servers import EmbeddedServers
from grobot.core.store.local import local_deps

logger = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("chat", help=COMMAND_HELP["chat"])
    parser.add_argument("bot", metavar="BOT", help="bot name or id")
    parser.add_argument("message", metavar="MESSAGE", help="the message to send")
    parser.add_argument("--user", default="cli", help="who is talking (default: cli); one conversation per user")
    parser.add_argument("--reset", action="store_true", help="forget this user's CLI conversation first")
    parser.add_argument("--quiet", action="store_true", help="print only the answer, not the events")
    parser.add_argument("--json", action="store_true", help="print one JSON document: answer, events, usage, timings")
    # A failed run is its [error] line: the chain's log of it only with -v.
    parser.set_defaults(func=_chat, reported_loggers=("grobot.core.agents.chain",))


def _describe(kind: str, data: dict[str, Any]) -> str:
    if kind == "thinking":
        return f"[thinking] {data.get('step', '')}: {data.get('text', '')}"
    if kind == "progress":
        if "acknowledgement" in data:
            return f"[progress] {data['acknowledgement']}"
        extra = f" ({data['error']})" if data.get("error") else ""
        return f"[progress] {data.get('tool', '')} {data.get('status', '')}{extra}"
    if kind == "tool_call":
        return f"[tool call] {data.get('name')}({json.dumps(data.get('arguments', {}), ensure_ascii=False)})"
    if kind == "tool_result":
        content = str(data.get("content", "")).replace("\n", " ")
        return f"[tool result] {data.get('name')}{' (error)' if data.get('is_error') else ''}: {content[:200]}"
    if kind == "done":
        usage, timings = data.get("usage", {}), data.get("timings", {})
        return (f"[done] {usage.get('llm_calls', 0)} LLM call(s), {usage.get('tokens_in', 0)} tokens in, "
                f"{usage.get('tokens_out', 0)} out, {timings.get('total_ms', 0):.0f} ms")
    if kind == "error":
        return f"[error] {data.get('message', '')}"
    return f"[{kind}] {json.dumps(data)}"


def _chat(args: argparse.Namespace) -> int:
    from grobot.core.db import session_scope
    from grobot.core.services import bots, conversations

    text = (args.message or "").strip()
    if not text:
        raise ValidationError("the message is empty")
    user = (args.user or "cli").strip() or "cli"
    with session_scope() as session:
        bot = bots.get_bot(args.bot, session=session)
        bot_id = bot.id or 0
        key = f"cli:{user}"
        if args.reset and conversations.find_conversation(session=session, bot_id=bot_id, key=key):
            conversations.reset_conversation(session=session, bot_id=bot_id, key=key)
    return asyncio.run(_run(args, bot_id, key, user, text))


async def _run(args: argparse.Namespace, bot_id: int, key: str, user: str, text: str) -> int:
    from grobot.core.agents.chain import wait_for_background
    from grobot.core.agents.types import Event, IncomingMessage
    from grobot.core.answering import FloodGate, answer_message
    from grobot.core.llm.registry import close_all
    from grobot.core.memory.runtime import close_memory, discovered_memory

    events: list[dict[str, Any]] = []
    state: dict[str, Any] = {"mid_line": False, "streamed": ""}

    async def sink(event: Event) -> None:
        kind = event.kind.value
        events.append({"kind": kind, "data": event.data})
        if args.json:
            return
        if kind == "token":
            sys.stdout.write(event.data.get("text", ""))
            sys.stdout.flush()
            state["mid_line"] = True
            state["streamed"] += event.data.get("text", "")
            return
        final = str(event.data.get("text") or "") if kind == "done" else ""
        if final.strip() and final.strip() != state["streamed"].strip():
            # The answer ended otherwise than it streamed (a part held back, or replaced): shown as it ends.
            if state["mid_line"]:
                sys.stdout.write("\n")
            print(f"[answer] {final}" if state["streamed"] else final, flush=True)
            state["mid_line"] = False
        if args.quiet and kind != "error":
            return
        if state["mid_line"]:
            sys.stdout.write("\n")
            state["mid_line"] = False
        stream = sys.stderr if kind == "error" else sys.stdout
        print(_describe(kind, event.data), file=stream, flush=True)

    msg = IncomingMessage(bot_id=bot_id, conversation_key=key, content=text, author_id=f"cli:{user}"[:32],
                          author_name=user, platform="cli")
    deps = local_deps(memory=discovered_memory())
    servers = await _own_embedded_servers(bot_id)
    try:
        result = await answer_message(msg, deps, FloodGate(), sink=sink)
        await wait_for_background(timeout=30)
    finally:
        await close_all()
        await deps.aclose()
        await close_memory(deps.memory)
        await stop_embedded(servers)
    if args.json:
        print_json({"bot_id": bot_id, "replied": result.replied, "text": result.text, "error": result.error,
                    "run_id": result.run_id, "llm_calls": result.llm_calls, "timings": result.timings, "events": events})
    return 2 if result.error else 0  # an error, as every command's (docs/cli.md)


async def _own_embedded_servers(bot_id: int) -> EmbeddedServers | None:
    """Run the bot's embedded models in this process when no bot worker serves them (None: not needed)."""
    from grobot.core.db import session_scope
    from grobot.core.services import llm_settings

    with session_scope(readonly=True) as session:
        llms = llm_settings.effective_llms(session=session, bot_id=bot_id)
    return await serve_embedded(llms.values())
