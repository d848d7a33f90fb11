"""Tool-use evaluation: a fixed suite of tasks, run in the ``chain`` and ``native`` agent modes on one model.

Run: ``.venv/bin/python bench/tool_use.py`` (the embedded demo model, SmolLM2-135M, in llama.cpp)
or on any model: ``--provider ollama --model qwen2.5:7b --base-url http://host:11434`` (an API
key from the variable named by ``--api-key-env``). ``--modes chain``, ``--only plain,tool``,
``--json FILE`` for the per-task results.

Each task is a message to a bot with the real built-in tools (date and time, files, notes,
memory) and a real MCP server (``mcp-server-time``), run through the product's whole path
(``run_chain`` on a database), with a checkable expectation:

- ``plain``: chat that needs no tool: no tool is called and an answer comes;
- ``tool``: the named tool (or one of a group, e.g. either time tool) is called and works, and
  its arguments pass the task's check (e.g. the file asked for);
- ``two``: two tools in one message, both called;
- ``clarify``: a tool's required argument is missing: no call of it, and the answer asks (a "?");
- ``fails``: the tool fails (a missing file, an unknown time zone): it is called, its error is
  a result, and the run still ends with an answer.

Printed per mode: success rate (overall and per kind), LLM calls per task (Archivist excluded),
tokens in and out per task (all calls, the Archivist's included), wall time per task to the
answer (p50/p95) for plain and tool tasks, the share of runs where a call hit its output cap,
and the most tokens any plain message generated.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

logger = logging.getLogger(__name__)

TIME_TOOLS = ("datetime_now", "time__get_current_time")


def _zone(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda args: text.lower() in json.dumps(args).lower()


@dataclass(frozen=True)
class Task:
    kind: str  # plain, tool, two, clarify, fails
    text: str
    tools: tuple[tuple[str, ...], ...] = ()  # each group: one of these must be called
    check: Callable[[dict[str, Any]], bool] | None = None  # on the arguments of the first expected call
    missing_tool: str = ""  # clarify: the tool that must not be called


TASKS: list[Task] = [
    # -- plain chat: no tool
    Task("plain", "Hello!"),
    Task("plain", "What is the capital of France?"),
    Task("plain", "Tell me a joke."),
    Task("plain", "How are you today?"),
    Task("plain", "Write a haiku about autumn."),
    Task("plain", "Explain recursion in one sentence."),
    Task("plain", "Thanks, that's all for now."),
    Task("plain", "What's your name?"),
    Task("plain", "Translate 'good morning' into Spanish."),
    Task("plain", "Give me one tip for sleeping better."),
    Task("plain", "Who wrote Romeo and Juliet?"),
    Task("plain", "What is 12 times 12?"),
    # -- each built-in tool
    Task("tool", "What is the date today?", (TIME_TOOLS,)),
    Task("tool", "What day of the week is it?", (TIME_TOOLS,)),
    Task("tool", "What time is it in UTC?", (TIME_TOOLS,)),
    Task("tool", "List your files.", (("files_list",),)),
    Task("tool", "Which files do you have?", (("files_list",),)),
    Task("tool", "Read the file notes.txt.", (("files_read",),), _zone("notes.txt")),
    Task("tool", "Show me what is in recipes.md", (("files_read",),), _zone("recipes.md")),
    Task("tool", "What do you know about me?", (("user_notes_read",),)),
    Task("tool", "Read your notes about me.", (("user_notes_read",),)),
    Task("tool", "Please note that my favourite colour is blue.", (("user_notes_add",),), _zone("blue")),
    Task("tool", "Note that I live in Berlin.", (("user_notes_add",),), _zone("Berlin")),
    Task("tool", "Remember that the team meeting is on Friday.", (("memory_remember",),), _zone("Friday")),
    Task("tool", "Search your memory for the team meeting.", (("memory_search",),), _zone("meeting")),
    # -- an MCP server's tools (mcp-server-time)
    Task("tool", "What time is it now in Tokyo?", (TIME_TOOLS,), _zone("Tokyo")),
    Task("tool", "What's the current time in New York?", (TIME_TOOLS,), _zone("New_York")),
    Task("tool", "Current time in Europe/Paris, please.", (TIME_TOOLS,), _zone("Paris")),
    Task("tool", "What time is it in Sydney right now?", (TIME_TOOLS,), _zone("Sydney")),
    Task("tool", "Convert 15:00 from Europe/London to America/New_York.", (("time__convert_time",),), _zone("15:00")),
    Task("tool", "Convert 09:30 in Asia/Tokyo to Europe/Berlin time.", (("time__convert_time",),), _zone("09:30")),
    # -- two tools in one message
    Task("two", "List your files and tell me the time in UTC.", (("files_list",), TIME_TOOLS)),
    Task("two", "What time is it in London, and what do you know about me?", (TIME_TOOLS, ("user_notes_read",))),
    Task("two", "Read notes.txt and tell me today's date.", (("files_read",), TIME_TOOLS)),
    Task("two", "Remember that I like tea, and list your files.", (("memory_remember",), ("files_list",))),
    # -- a required argument is missing: ask
    Task("clarify", "Read a file for me.", missing_tool="files_read"),
    Task("clarify", "Convert a time for me.", missing_tool="time__convert_time"),
    Task("clarify", "Please remember something for me.", missing_tool="memory_remember"),
    # -- a tool that fails
    Task("fails", "Read the file missing.txt.", (("files_read",),), _zone("missing.txt")),
    Task("fails", "What time is it in the time zone Mars/Olympus?", (TIME_TOOLS,), _zone("Mars")),
    Task("fails", "Show me the file ../../etc/passwd", (("files_read",),), _zone("passwd")),
]


@dataclass
class Outcome:
    mode: str
    kind: str
    text: str
    ok: bool
    why: str
    seconds: float
    calls: int
    tokens_in: int
    tokens_out: int
    capped: bool
    tools_called: list[str] = field(default_factory=list)
    answer: str = ""
    steps: list[str] = field(default_factory=list)  # the chain's steps, as Test Chat shows them
    tool_calls: list[str] = field(default_factory=list)  # each call, its arguments and how it ended


def judge(task: Task, calls: list[tuple[str, dict[str, Any], bool]], answer: str, error: str | None) -> tuple[bool, str]:
    """Whether a run met the task's expectation, and why not."""
    if error:
        return False, f"the run failed: {error}"
    if not answer.strip():
        return False, "no answer"
    names = [name for name, _, _ in calls]
    if task.kind == "plain":
        return (not calls, f"called {', '.join(names)}" if calls else "")
    if task.kind == "clarify":
        if task.missing_tool in names:
            return False, f"called {task.missing_tool} without its argument"
        return ("?" in answer, "" if "?" in answer else "did not ask")
    for group in task.tools:
        if not any(name in group for name in names):
            return False, f"expected one of {', '.join(group)}; called {', '.join(names) or 'nothing'}"
    first = next(c for c in calls if c[0] in task.tools[0])
    if task.check is not None and not task.check(first[1]):
        return False, f"{first[0]} got {json.dumps(first[1])}"
    failed = [name for name, _, is_error in calls if is_error]
    if task.kind == "fails":
        return (bool(failed), "" if failed else "the tool did not fail")
    if failed:
        return False, f"{', '.join(failed)} failed"
    return True, ""


# --------------------------------------------------------------------------- set-up


def _setup_env(tmp: Path) -> None:
    os.environ["GROBOT_DATA_DIR"] = str(tmp)
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'grobot.db'}"
    os.environ.setdefault("GROBOT_SECRET_KEY", "bench-secret-key")
    os.environ.pop("OLLAMA_HOST", None)
    from grobot.core import migrations
    from grobot.core.settings import get_settings

    get_settings.cache_clear()
    migrations.upgrade(os.environ["DATABASE_URL"])


def _make_bot(name: str, mode: str, args: argparse.Namespace) -> int:
    from grobot.core.db import session_scope
    from grobot.core.services import bots, files, llm_settings, mcp_servers

    time_command = str(Path(sys.executable).parent / "mcp-server-time")
    with session_scope() as session:
        bot = bots.create_bot(session=session, name=name, personality="You are a helpful assistant.", agent_mode=mode)
        for category in ("decision", "tools", "output"):
            llm_settings.set_llm(session=session, category=category, bot_id=bot.id, provider=args.provider,
                                 base_url=args.base_url, model=args.model, context_window=args.context,
                                 api_key=os.environ.get(args.api_key_env) if args.api_key_env else None,
                                 temperature=0.2 if category != "output" else 0.7)
        existing = [s for s in mcp_servers.list_servers(session=session) if s.name == "time"]
        server = existing[0] if existing else mcp_servers.create_server(session=session, name="time",
                                                                        command=time_command)
        mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=server, timeout_seconds=20)
        bot_id = bot.id or 0
        # As the Files tab stores them (a file is the bot's once it has its row).
        files.write_file(session=session, bot_id=bot_id, path="notes.txt", data=b"Shopping list: milk, eggs, bread.\n")
        files.write_file(session=session, bot_id=bot_id, path="recipes.md",
                         data=b"# Pancakes\nFlour, milk, eggs; fry in butter.\n")
    return bot_id


async def _run_task(bot_id: int, mode: str, index: int, task: Task, deps: Any) -> Outcome:
    from sqlmodel import select

    from grobot.core.agents.chain import run_chain, wait_for_background
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.db import session_scope
    from grobot.core.models import LLMCall
    events: list[Any] = []

    async def sink(event: Any) -> None:
        events.append(event)

    catalog = await deps.catalog(bot_id)
    msg = IncomingMessage(bot_id=bot_id, conversation_key=f"bench:{mode}:{index}", content=task.text, author_id="42",
                          author_name="ada", platform="test_chat")
    started = time.perf_counter()
    result = await run_chain(msg, deps, sink=sink, tools=catalog)
    seconds = time.perf_counter() - started
    await wait_for_background(timeout=120)
    results = {e.data.get("id"): e.data for e in events if e.kind.value == "tool_result"}
    calls, shown = [], []
    for e in events:
        if e.kind.value == "tool_call":
            outcome = results.get(e.data.get("id"), {})
            calls.append((e.data["name"], e.data.get("arguments") or {}, bool(outcome.get("is_error"))))
            ended = f"error: {outcome.get('content')}" if outcome.get("is_error") else "ok"
            shown.append(f"{e.data['name']}({json.dumps(e.data.get('arguments') or {})}) -> {' '.join(str(ended).split())}")
    with session_scope(readonly=True) as session:
        rows = session.exec(select(LLMCall).where(LLMCall.run_id == result.run_id)).all() if result.run_id else []
    done = [e for e in events if e.kind.value == "done"]
    capped = bool(done and done[-1].data.get("usage", {}).get("capped_calls"))
    ok, why = judge(task, calls, result.text or "", result.error)
    steps = [f"{e.data.get('step')}: {e.data.get('text')}" for e in events if e.kind.value == "thinking"]
    return Outcome(steps=steps, tool_calls=shown, mode=mode, kind=task.kind, text=task.text, ok=ok, why=why, seconds=seconds,
                   calls=result.llm_calls, tokens_in=sum(r.tokens_in for r in rows),
                   tokens_out=sum(r.tokens_out for r in rows), capped=capped,
                   tools_called=[c[0] for c in calls], answer=(result.text or result.error or "")[:300])


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _evaluate(args: argparse.Namespace) -> list[Outcome]:
    from grobot.core.agents.deps import ChainDeps
    from grobot.core.llm import embedded
    from grobot.core.llm.llama_servers import LlamaServers
    from grobot.core.llm.registry import close_all
    from grobot.core.memory.local import LocalMemory

    servers = None
    if args.provider == embedded.PROVIDER:
        servers = LlamaServers(parallel=1)
        embedded.set_local_directory(servers)
        info = await servers.ensure(args.model, args.context)
        if info.status != "running":
            raise SystemExit(f"the embedded model cannot run: {info.error}")
    memory = LocalMemory()
    await memory.warm()
    deps = ChainDeps.local(memory)
    tasks = [t for t in TASKS if (not args.only or t.kind in args.only.split(","))
             and (not args.match or args.match.lower() in t.text.lower())]
    outcomes: list[Outcome] = []
    try:
        for mode in args.modes.split(","):
            bot_id = _make_bot(f"eval-{mode}", mode, args)
            for index, task in enumerate(tasks):
                outcome = await _run_task(bot_id, mode, index, task, deps)
                outcomes.append(outcome)
                if args.verbose:
                    mark = "ok  " if outcome.ok else "FAIL"
                    print(f"{mode:6} {mark} {outcome.seconds:5.1f}s {outcome.calls} calls {task.text[:50]:50} "
                          f"{outcome.why}", flush=True)
                    if args.steps:
                        lines = [*outcome.steps, *(f"call {call}" for call in outcome.tool_calls)]
                        print("".join(f"         {line[:150]}\n" for line in lines), end="", flush=True)
    finally:
        await deps.aclose()
        await close_all()
        memory.close()
        if servers is not None:
            await servers.stop_all()
    return outcomes


def report(outcomes: list[Outcome], args: argparse.Namespace) -> None:
    print(f"Tool-use evaluation: {args.provider} {args.model} ({len(TASKS)} tasks per mode"
          f"{', only ' + args.only if args.only else ''})")
    kinds = ["plain", "tool", "two", "clarify", "fails"]
    header = (f"{'mode':7} {'success':>8} " + " ".join(f"{k:>8}" for k in kinds) +
              f" {'calls':>6} {'tok in':>7} {'tok out':>8} {'plain p50/p95 s':>16} {'tool p50/p95 s':>15} {'capped':>7}")
    print(header)
    rates: dict[str, float] = {}
    for mode in dict.fromkeys(o.mode for o in outcomes):
        mine = [o for o in outcomes if o.mode == mode]
        rate = sum(o.ok for o in mine) / len(mine)
        rates[mode] = rate
        per_kind = []
        for kind in kinds:
            of_kind = [o for o in mine if o.kind == kind]
            per_kind.append(f"{sum(o.ok for o in of_kind)}/{len(of_kind)}" if of_kind else "-")
        plain = [o.seconds for o in mine if o.kind == "plain"]
        tools = [o.seconds for o in mine if o.kind != "plain"]
        print(f"{mode:7} {rate * 100:7.0f}% " + " ".join(f"{k:>8}" for k in per_kind) +
              f" {statistics.mean(o.calls for o in mine):6.2f} {statistics.mean(o.tokens_in for o in mine):7.0f}"
              f" {statistics.mean(o.tokens_out for o in mine):8.0f}"
              f" {_pct(plain, 0.5):7.2f}/{_pct(plain, 0.95):<7.2f} {_pct(tools, 0.5):7.2f}/{_pct(tools, 0.95):<6.2f}"
              f" {sum(o.capped for o in mine) / len(mine) * 100:6.0f}%")
        most = max((o.tokens_out for o in mine if o.kind == "plain"), default=0)
        print(f"        most tokens generated by one plain message (all its calls): {most}")
    if "chain" in rates and "native" in rates:
        print(f"chain - native: {(rates['chain'] - rates['native']) * 100:+.0f} points")


def main() -> int:
    from grobot.core.llm import embedded

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default=embedded.PROVIDER)
    parser.add_argument("--model", default=embedded.DEMO_MODEL)
    parser.add_argument("--base-url", default="")
    parser.add_argument("--api-key-env", default="", help="the environment variable holding the API key")
    parser.add_argument("--context", type=int, default=4096, help="context window of the model")
    parser.add_argument("--modes", default="chain,native")
    parser.add_argument("--only", default="", help="kinds of task, e.g. plain,tool")
    parser.add_argument("--match", default="", help="only the tasks whose text holds this")
    parser.add_argument("--json", default="", help="write every task's outcome to this file")
    parser.add_argument("--verbose", action="store_true", help="print each task as it ends")
    parser.add_argument("--steps", action="store_true", help="with --verbose: and the chain's steps of each task")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        _setup_env(Path(tmp))
        outcomes = asyncio.run(_evaluate(args))
        from grobot.core.db import dispose_engines

        dispose_engines()
    report(outcomes, args)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
