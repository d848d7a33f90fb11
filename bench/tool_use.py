"""Tool-use evaluation: a suite of tasks, run in the ``chain`` and ``native`` agent modes on one model, judged twice.

Run: ``.venv/bin/python bench/tool_use.py`` (the embedded demo model, SmolLM2-135M, in llama.cpp)
or on any model: ``--provider ollama --model qwen2.5:7b --base-url http://host:11434`` (an API
key from the variable named by ``--api-key-env``). ``--modes chain``, ``--split dev|heldout|fresh|all``,
``--only plain,tool``, ``--match WORDS``, ``--sample N --seed S`` (a fixed random sample of N
tasks per split, each kind in its share, when the whole suite cannot run in time), ``--json FILE``
for the per-task results.

The tasks (``bench/tool_use_suite/tasks.py``) are messages to a bot with the real built-in tools
(date and time, files, notes, memory) and real MCP servers (``mcp-server-time``, and
``@modelcontextprotocol/server-everything``'s ``echo`` and ``get-sum``, installed by
``cd tests/npm && npm ci``), run through the product's whole path (``run_chain`` on a database);
a ``followup`` task is two turns of one conversation. They come in two splits: ``dev``, which the
chain may be tuned on, and ``heldout``, which it must never be tuned on (only run to report).

Each run is judged twice (``bench/tool_use_suite/judge.py``):

- **lenient**, the bench's first judge: the tools called (and their arguments), an answer, a
  question where one is due;
- **strict**, what the user reads: the lenient judge, every reply in prose (a reply that is
  tool-call markup, JSON, code or a repetition loop fails), and where a tool ran, the reply states
  what it returned in that run (the time in the zone asked, the file's items, the date, the note or
  memory confirmed, the error said plainly).

Printed per split and mode: lenient and strict success, replies that are markup/JSON/code/loop, and
strict success per kind; per mode: LLM calls per task (Archivist excluded), tokens in and out per
task (all calls, the Archivist's included), wall time per task to the answer (p50/p95) for plain
and tool tasks, the share of runs where a call hit its output cap, and the most tokens any plain
message generated.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.tool_use_suite.judge import FORM_WORDS, ToolRun, Turn, lenient, strict  # noqa: E402 - after the path
from bench.tool_use_suite.tasks import (  # noqa: E402
    FILES,
    KINDS,
    MEMORIES,
    NOTES,
    SPLITS,
    TASKS,
    Task,
    sample,
    select,
)

logger = logging.getLogger(__name__)

EVERYTHING_JS = ROOT / "tests" / "npm" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
EVERYTHING_TOOLS = ["echo", "get-sum"]  # argument names of their own: message; a, b


@dataclass
class Outcome:
    mode: str
    kind: str
    text: str
    ok: bool  # the lenient judge
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
    split: str = ""
    strict_ok: bool = False
    strict_why: str = ""
    forms: list[str] = field(default_factory=list)  # per reply: "" (prose), markup, json, code, loop
    replies: list[str] = field(default_factory=list)  # every turn's reply, in full
    turns: list[dict[str, Any]] = field(default_factory=list)  # what the judges read (a --resume judges it again)


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


def _server(session: Any, name: str, **fields: Any) -> Any:
    from grobot.core.services import mcp_servers

    existing = [s for s in mcp_servers.list_servers(session=session) if s.name == name]
    return existing[0] if existing else mcp_servers.create_server(session=session, name=name, **fields)


def _make_bot(name: str, mode: str, args: argparse.Namespace) -> int:
    from grobot.core.db import session_scope
    from grobot.core.services import bots, files, llm_settings, mcp_servers
    from grobot.core.tools.mcp_presets import node_binary

    node = node_binary()
    if not EVERYTHING_JS.exists() or not node:
        raise SystemExit("server-everything is not installed: run `cd tests/npm && npm ci` (node from .venv)")
    with session_scope() as session:
        bot = bots.create_bot(session=session, name=name, personality="You are a helpful assistant.", agent_mode=mode)
        bot_id = bot.id or 0
        for category in ("decision", "tools", "output"):
            llm_settings.set_llm(session=session, category=category, bot_id=bot_id, provider=args.provider,
                                 base_url=args.base_url, model=args.model, context_window=args.context,
                                 api_key=os.environ.get(args.api_key_env) if args.api_key_env else None,
                                 temperature=0.2 if category != "output" else 0.7)
        time_server = _server(session, "time", command=str(Path(sys.executable).parent / "mcp-server-time"))
        mcp_servers.enable_for_bot(session=session, bot_id=bot_id, server=time_server, timeout_seconds=20)
        everything = _server(session, "everything", command=node, args=[str(EVERYTHING_JS), "stdio"])
        mcp_servers.enable_for_bot(session=session, bot_id=bot_id, server=everything, timeout_seconds=20,
                                   allowed_tools=EVERYTHING_TOOLS)
        # As the Files tab stores them (a file is the bot's once it has its row).
        for path, text in FILES.items():
            files.write_file(session=session, bot_id=bot_id, path=path, data=text.encode())
    return bot_id


def _user(bot_id: int, task: Task) -> str:
    """A user of its own per task (the notes of :data:`NOTES` about them): no task reads another's writes."""
    from grobot.core.db import session_scope
    from grobot.core.services import user_notes

    user = str(1000 + TASKS.index(task))
    with session_scope() as session:
        if not user_notes.list_notes(session=session, bot_id=bot_id, discord_user_id=user):
            for note in NOTES:
                user_notes.add_note(session=session, bot_id=bot_id, discord_user_id=user, note=note, reliability=0.9,
                                    source="admin")
    return user


async def _turn(bot_id: int, key: str, user: str, text: str, deps: Any) -> tuple[Turn, Any, list[Any], float]:
    """One message of the user: what the run did (its tool calls with their results, the reply), its
    result, its events and its seconds to the answer."""
    from grobot.core.agents.chain import wait_for_background
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.store.local import run_chain

    events: list[Any] = []

    async def sink(event: Any) -> None:
        events.append(event)

    catalog = await deps.catalog(bot_id)
    msg = IncomingMessage(bot_id=bot_id, conversation_key=key, content=text, author_id=user, author_name="ada",
                          platform="test_chat")
    started = time.perf_counter()
    result = await run_chain(msg, deps, sink=sink, tools=catalog)
    seconds = time.perf_counter() - started
    await wait_for_background(timeout=120)
    results = {e.data.get("id"): e.data for e in events if e.kind.value == "tool_result"}
    calls = []
    for e in events:
        if e.kind.value == "tool_call":
            outcome = results.get(e.data.get("id"), {})
            calls.append(ToolRun(e.data["name"], e.data.get("arguments") or {}, str(outcome.get("content", "")),
                                 bool(outcome.get("is_error"))))
    return Turn(result.text or "", tuple(calls), result.error), result, events, seconds


async def _run_task(bot_id: int, mode: str, index: int, task: Task, deps: Any) -> Outcome:
    from sqlmodel import select as where

    from grobot.core.db import session_scope
    from grobot.core.models import LLMCall

    user = _user(bot_id, task)
    turns, results, all_events, seconds = [], [], [], []
    for text in task.messages:
        turn, result, events, took = await _turn(bot_id, f"bench:{mode}:{index}", user, text, deps)
        seconds.append(took)
        turns.append(turn)
        results.append(result)
        all_events.extend(events)
        if turn.error:
            break
    shown = [f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)}) -> "
             f"{'error: ' + ' '.join(c.content.split()) if c.is_error else 'ok: ' + ' '.join(c.content.split())[:120]}"
             for t in turns for c in t.calls]
    run_ids = [r.run_id for r in results if r.run_id]
    with session_scope(readonly=True) as session:
        rows = session.exec(where(LLMCall).where(LLMCall.run_id.in_(run_ids))).all() if run_ids else []  # type: ignore[union-attr]
    done = [e for e in all_events if e.kind.value == "done"]
    capped = any(d.data.get("usage", {}).get("capped_calls") for d in done)
    ok, why = lenient(task, turns)
    verdict = strict(task, turns)
    steps = [f"{e.data.get('step')}: {e.data.get('text')}" for e in all_events if e.kind.value == "thinking"]
    last = turns[-1]
    return Outcome(steps=steps, tool_calls=shown, mode=mode, kind=task.kind, text=" / ".join(task.messages), ok=ok,
                   why=why, seconds=seconds[0], calls=sum(r.llm_calls for r in results),
                   tokens_in=sum(r.tokens_in for r in rows), tokens_out=sum(r.tokens_out for r in rows), capped=capped,
                   tools_called=[c.name for t in turns for c in t.calls],
                   answer=(last.reply or last.error or "")[:300], split=task.split, strict_ok=verdict.ok,
                   strict_why=verdict.why, forms=list(verdict.forms), replies=[t.reply for t in turns],
                   turns=[asdict(t) for t in turns])


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _save(path: str, outcomes: list[Outcome]) -> None:
    if path:
        Path(path).write_text(json.dumps([asdict(o) for o in outcomes], indent=1, ensure_ascii=False))


def _load(path: str) -> list[Outcome]:
    """The outcomes a ``--json`` file holds (those of an earlier, interrupted run, for ``--resume``)."""
    if not path or not Path(path).exists():
        return []
    by_text = {(t.split, " / ".join(t.messages)): t for t in TASKS}
    outcomes = []
    for data in json.loads(Path(path).read_text()):
        outcome = Outcome(**data)
        task = by_text.get((outcome.split, outcome.text))
        if task is None:
            continue  # a task since changed or removed
        turns = [Turn(t["reply"], tuple(ToolRun(**c) for c in t["calls"]), t["error"]) for t in outcome.turns]
        outcome.ok, outcome.why = lenient(task, turns)  # judged again: the judges may have changed since
        verdict = strict(task, turns)
        outcome.strict_ok, outcome.strict_why, outcome.forms = verdict.ok, verdict.why, list(verdict.forms)
        outcomes.append(outcome)
    return outcomes


async def _evaluate(args: argparse.Namespace, tasks: list[Task], outcomes: list[Outcome],
                    others: list[Outcome]) -> list[Outcome]:
    """Run ``tasks`` in each mode, after ``outcomes`` (those already run are not run again); ``others``:
    outcomes of tasks not chosen this time, kept in the ``--json`` file."""
    from grobot.core.llm import embedded
    from grobot.core.llm.embedded_servers import EmbeddedServers
    from grobot.core.llm.registry import close_all
    from grobot.core.memory.local import LocalMemory
    from grobot.core.store.local import local_deps

    servers = None
    if args.provider == embedded.PROVIDER:
        servers = EmbeddedServers(parallel=1)
        embedded.set_local_directory(servers)
        info = await servers.ensure(args.model, args.context)
        if info.status != "running":
            raise SystemExit(f"the embedded model cannot run: {info.error}")
    memory = LocalMemory()
    await memory.warm()
    deps = local_deps(memory)
    done = {(o.mode, o.split, o.text) for o in outcomes}
    outcomes = list(outcomes)
    try:
        for mode in args.modes.split(","):
            bot_id = _make_bot(f"eval-{mode}", mode, args)
            await memory.remember(bot_id, list(MEMORIES), {"source": "admin"})
            for task in tasks:
                if (mode, task.split, " / ".join(task.messages)) in done:
                    continue
                index = TASKS.index(task)
                outcome = await _run_task(bot_id, mode, index, task, deps)
                outcomes.append(outcome)
                _save(args.json, others + outcomes)  # a long run on a busy machine keeps what it did
                if args.verbose:
                    mark = {(True, True): "ok  ", (True, False): "LENI", (False, False): "FAIL"}.get(
                        (outcome.ok, outcome.strict_ok), "STRI")
                    why = outcome.strict_why or outcome.why
                    print(f"{mode:6} {task.split[:4]:4} {mark} {outcome.seconds:5.1f}s {outcome.calls} calls "
                          f"{outcome.text[:50]:50} {why}", flush=True)
                    if args.steps:
                        lines = [*outcome.steps, *(f"call {call}" for call in outcome.tool_calls),
                                 *(f"reply {' '.join(r.split())}" for r in outcome.replies)]
                        print("".join(f"         {line[:150]}\n" for line in lines), end="", flush=True)
    finally:
        await deps.aclose()
        await close_all()
        memory.close()
        if servers is not None:
            await servers.stop_all()
    return outcomes


# --------------------------------------------------------------------------- report


def _rate(outcomes: list[Outcome], strict_judge: bool) -> float:
    return sum(o.strict_ok if strict_judge else o.ok for o in outcomes) / len(outcomes) if outcomes else 0.0


def report(outcomes: list[Outcome], args: argparse.Namespace) -> None:
    splits = [s for s in SPLITS if any(o.split == s for o in outcomes)]
    modes = list(dict.fromkeys(o.mode for o in outcomes))
    counts = ", ".join(f"{len({o.text for o in outcomes if o.split == s})} {s}" for s in splits)
    print(f"Tool-use evaluation: {args.provider} {args.model} ({counts} tasks per mode"
          f"{', only ' + args.only if args.only else ''}{', matching ' + repr(args.match) if args.match else ''}"
          f"{f', a fixed random sample (seed {args.seed}) of {args.sample} per split' if args.sample else ''})")
    print("The held-out split was never tuned on: it is run only to report.")
    kinds = [k for k in KINDS if any(o.kind == k for o in outcomes)]
    forms = list(FORM_WORDS)
    print(f"{'split':8} {'mode':7} {'lenient':>8} {'strict':>7} {'bad replies':>12} {'(' + '/'.join(forms) + ')':>23}   "
          "strict per kind: " + " ".join(f"{k:>9}" for k in kinds))
    strict_rates: dict[tuple[str, str], float] = {}
    for split in splits:
        for mode in modes:
            mine = [o for o in outcomes if o.split == split and o.mode == mode]
            if not mine:
                continue
            strict_rates[split, mode] = _rate(mine, True)
            bad = [f for o in mine for f in o.forms if f]
            per_form = "/".join(str(bad.count(f)) for f in forms)
            per_kind = []
            for kind in kinds:
                of_kind = [o for o in mine if o.kind == kind]
                per_kind.append(f"{sum(o.strict_ok for o in of_kind)}/{len(of_kind)}" if of_kind else "-")
            print(f"{split:8} {mode:7} {_rate(mine, False) * 100:7.0f}% {strict_rates[split, mode] * 100:6.0f}% "
                  f"{len(bad):>12} {per_form:>23}   {'':17}" + " ".join(f"{k:>9}" for k in per_kind))
    for split in splits:
        if (split, "chain") in strict_rates and (split, "native") in strict_rates:
            gap = (strict_rates[split, "chain"] - strict_rates[split, "native"]) * 100
            print(f"{split}: chain - native, strict: {gap:+.0f} points")
    for mode in modes:
        if all((s, mode) in strict_rates for s in ("dev", "heldout")):
            print(f"{mode}: dev - heldout, strict: {(strict_rates['dev', mode] - strict_rates['heldout', mode]) * 100:+.0f} points")
    print(f"{'mode':7} {'calls':>6} {'tok in':>7} {'tok out':>8} {'plain p50/p95 s':>16} {'tool p50/p95 s':>15} {'capped':>7}"
          f"  (all splits)")
    for mode in modes:
        mine = [o for o in outcomes if o.mode == mode]
        plain = [o.seconds for o in mine if o.kind == "plain"]
        tools = [o.seconds for o in mine if o.kind != "plain"]
        print(f"{mode:7} {statistics.mean(o.calls for o in mine):6.2f} {statistics.mean(o.tokens_in for o in mine):7.0f}"
              f" {statistics.mean(o.tokens_out for o in mine):8.0f}"
              f" {_pct(plain, 0.5):7.2f}/{_pct(plain, 0.95):<7.2f} {_pct(tools, 0.5):7.2f}/{_pct(tools, 0.95):<6.2f}"
              f" {sum(o.capped for o in mine) / len(mine) * 100:6.0f}%")
        most = max((o.tokens_out for o in mine if o.kind == "plain"), default=0)
        print(f"        most tokens generated by one plain message (all its calls): {most}")


def main() -> int:
    from grobot.core.llm import embedded

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default=embedded.PROVIDER)
    parser.add_argument("--model", default=embedded.DEMO_MODEL)
    parser.add_argument("--base-url", default="")
    parser.add_argument("--api-key-env", default="", help="the environment variable holding the API key")
    parser.add_argument("--context", type=int, default=4096, help="context window of the model")
    parser.add_argument("--modes", default="chain,native")
    parser.add_argument("--split", default="all", choices=["all", *SPLITS],
                        help="dev (tune on it), heldout (never tune on it: only run it to report), "
                             "fresh (the same, written after the Router's request cues) or all")
    parser.add_argument("--only", default="", help=f"kinds of task, e.g. plain,tool (of {', '.join(KINDS)})")
    parser.add_argument("--match", default="", help="only the tasks whose text holds this")
    parser.add_argument("--sample", type=int, default=0,
                        help="a fixed random sample of this many tasks per split (each kind in its share), "
                             "when the whole suite cannot run in the time there is")
    parser.add_argument("--seed", type=int, default=0, help="with --sample: which sample")
    parser.add_argument("--json", default="", help="write every task's outcome to this file (as each ends)")
    parser.add_argument("--resume", action="store_true",
                        help="with --json: keep the outcomes the file holds and run only the tasks it lacks")
    parser.add_argument("--verbose", action="store_true", help="print each task as it ends")
    parser.add_argument("--steps", action="store_true", help="with --verbose: and the chain's steps of each task")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    tasks = select(args.split, args.only, args.match)
    if args.sample:
        tasks = sample(tasks, args.sample, args.seed)
    if not tasks:
        raise SystemExit("no task matches")
    with tempfile.TemporaryDirectory() as tmp:
        _setup_env(Path(tmp))
        loaded = _load(args.json) if args.resume else []
        wanted = {(t.split, " / ".join(t.messages)) for t in tasks}
        chosen = [(o.split, o.text) in wanted and o.mode in args.modes.split(",") for o in loaded]
        kept = [o for o, c in zip(loaded, chosen) if c]
        others = [o for o, c in zip(loaded, chosen) if not c]
        if len(kept) < len(tasks) * len(args.modes.split(",")):
            outcomes = asyncio.run(_evaluate(args, tasks, kept, others))
        else:
            outcomes = kept  # all run already: the report only
        from grobot.core.db import dispose_engines

        dispose_engines()
    report(outcomes, args)
    _save(args.json, others + outcomes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
