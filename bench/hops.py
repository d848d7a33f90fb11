"""How far one plain Discord message travels through GroBot's code, and how often the bot asks its supervisor.

    .venv/bin/python bench/hops.py [--messages 3]

Runs a fleet of one bot on the fake Discord and an instant fake LLM (the harness of
``bench/fleet.py``), sends it plain messages one at a time, and follows each one inside the bot
process from ``FleetBot.on_message`` to its completing edit: a profile hook (``sys.setprofile``,
installed through a ``sitecustomize`` this script writes, switched on and off by signals) marks the
asyncio context of that message's ``on_message`` (tasks started from it copy the mark, the background
archivist included) and records, in that context only, every first call of a function of
``grobot/`` or ``bot_worker/`` (a coroutine's resumption is not a call) and every request over the
bot link (``BotLinkClient.call_in_parts``, which every request goes through), placed before or after the
request of the model's answer (the fake LLM's record of it; a background structured call, the archivist's, aside).

Prints, per message (the figures of the last; they do not vary), the modules visited, the
cross-module calls (a call whose function's module is not its caller's: how many, and how many
distinct caller -> callee pairs; a task's first step has no caller), the module hops along its path
as issue 31 counts them (:func:`path_hops`: calls and returns between modules in the order they
happen, each function once, a module's private helpers folded into it; the target is <= 15) and the bot's
requests to its supervisor before the model's answer call, after it, and from the background
archivist (which reviews the exchange after the answer).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fleet import Bench, wait_until  # noqa: E402
from grobot.core.agents.worth_keeping import worth_a_look  # noqa: E402

MARKER = "hops-probe"

# Installed in every process of the fleet (PYTHONPATH); active only in a process that gets SIGUSR1
# (the measured bot), which then records until SIGUSR2 and writes what it saw to HOPS_OUT/<pid>.json.
SITECUSTOMIZE = r'''
import contextvars, json, os, signal, sys, time

_ROOT = os.environ.get("HOPS_ROOT", "")
_OUT = os.environ.get("HOPS_OUT", "")
_MARKER = os.environ.get("HOPS_MARKER", "")
_mark = contextvars.ContextVar("hops_mark", default=False)
_state = {"armed": False, "events": [], "seen": set()}
_modules = {}


def _module(code):
    name = _modules.get(code.co_filename)
    if name is None:
        path = code.co_filename
        name = ""
        for top in ("grobot", "bot_worker"):
            prefix = os.path.join(_ROOT, top) + os.sep
            if path.startswith(prefix):
                name = path[len(_ROOT) + 1:-3].replace(os.sep, ".")
        _modules[code.co_filename] = name
    return name


def _caller(frame):
    back = frame.f_back
    while back is not None:
        if os.sep + "asyncio" + os.sep in back.f_code.co_filename:
            return ""  # a task's first step: started, not called
        name = _module(back.f_code)
        if name:
            return name
        back = back.f_back
    return ""


def _profile(frame, event, arg):
    if event != "call":
        return
    code = frame.f_code
    module = _module(code)
    if not module:
        return
    if not _mark.get():
        if (event == "call" and _state["armed"] and code.co_name == "on_message" and module == "bot_worker.fleet_bot"
                and _MARKER in str(getattr(frame.f_locals.get("message"), "content", ""))):
            _state["armed"] = False
            _mark.set(True)
        else:
            return
    if id(frame) in _state["seen"]:
        return  # a coroutine resumed
    _state["seen"].add(id(frame))
    _state.setdefault("frames", []).append(frame)  # kept alive: ids stay unique
    if code.co_name == "call_in_parts" and module == "bot_worker.bot_link":  # every request goes through it
        chain, back = [], frame.f_back
        while back is not None and len(chain) < 12:
            if _module(back.f_code):
                chain.append(back.f_code.co_qualname)
            back = back.f_back
        _state["events"].append(["link", str(frame.f_locals.get("path")), time.monotonic(), chain])
    _state["events"].append(["call", _caller(frame), module, code.co_qualname])


def _start(*_):
    _state.update(armed=True, events=[], seen=set(), frames=[])
    sys.setprofile(_profile)
    open(os.path.join(_OUT, f"{os.getpid()}.armed"), "w").close()  # the bench waits for this


def _stop(*_):
    sys.setprofile(None)
    path = os.path.join(_OUT, f"{os.getpid()}.json")
    with open(path + ".part", "w") as handle:
        json.dump(_state["events"], handle)
    os.replace(path + ".part", path)  # whole, or not there yet
    _state["frames"] = []


if _OUT:
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
'''


def path_hops(calls: list[list[Any]]) -> tuple[int, int, int]:
    """``(hops, returns, stops)`` along the message's path as a reader follows it (issue 31's count):
    the walk through the grobot/bot_worker modules in the order the calls happen, each function read
    once (its first call; a function called again is known already), calls into the standard library
    and third-party packages no stops (a callback from one counts from the module that called it). A
    call into another module is a hop, and so is coming back to the caller's module before its next
    call (a return; a task's first step continues from where the walk was). A module's private helpers
    fold into it: a call within a module is no hop. ``stops``: functions read in another module than
    the walk's."""
    at, hops, returns, stops = "", 0, 0, 0
    seen: set[tuple[str, str]] = set()
    for _, caller, module, qualname in calls:
        if (module, qualname) in seen:
            continue
        seen.add((module, qualname))
        origin = caller or at
        if at and origin != at:  # back in the caller's module (a return, as the next call shows)
            hops += 1
            returns += 1
        at = origin
        if module != at:
            if at:
                hops += 1
            stops += 1
            at = module
    return hops, returns, stops


def summarize(events: list[list[Any]], answer_at: float) -> dict[str, Any]:
    """Modules, hops and link requests (before / after the model's answer call, at ``answer_at``) of one message."""
    calls = [e for e in events if e[0] == "call"]
    modules = list(dict.fromkeys(e[2] for e in calls))
    hops = [(e[1], e[2]) for e in calls if e[1] and e[1] != e[2]]
    links: dict[str, list[str]] = {"before": [], "after": [], "background": []}
    for event in events:
        if event[0] == "link":
            background = any("_archive" in name for name in event[3])  # the archivist, after the answer
            links["background" if background else "before" if event[2] < answer_at else "after"].append(event[1])
    path, returns, stops = path_hops(calls)
    return {"modules": modules, "hops": len(hops), "distinct": list(dict.fromkeys(hops)), "links": links,
            "path": path, "returns": returns, "stops": stops}


def _archivist_calls(session: Any = None) -> int:
    """The Archivist's LLM calls stored so far (each stored by its background write)."""
    from sqlmodel import func, select

    from grobot.core.db import session_scope
    from grobot.core.models import LLMCall

    query = select(func.count()).select_from(LLMCall).where(LLMCall.agent_role == "archivist")
    if session is not None:
        return int(session.exec(query).one())
    with session_scope(readonly=True) as own:
        return int(own.exec(query).one())


def _written(answer: str, *, archivist_calls: int) -> bool:
    """The answer ``answer`` is stored, and ``archivist_calls`` Archivist calls are (one read)."""
    from sqlmodel import select

    from grobot.core.db import session_scope
    from grobot.core.models import Message

    with session_scope(readonly=True) as session:
        stored = session.exec(select(Message.id).where(Message.role == "assistant", Message.content == answer)).first()
        return stored is not None and _archivist_calls(session) >= archivist_calls


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=3)
    parser.add_argument("--verbose", action="store_true", help="print the distinct hops in order")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="grobot-hops-") as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        bench = Bench(Path(tmp))
        # The bench's own sitecustomize (on the fleet's PYTHONPATH) gets the probe after its counters.
        with (Path(tmp) / "site" / "sitecustomize.py").open("a") as handle:
            handle.write("\n" + SITECUSTOMIZE)
        try:
            ids = bench.add_bots(1)
            bench.start_supervisor(HOPS_OUT=str(out), HOPS_ROOT=str(ROOT), HOPS_MARKER=MARKER)
            wait_until(lambda: bench.all_online(ids), 120, "the bot online")
            uid, pid = bench.discord_ids[ids[0]], bench.statuses()[ids[0]].pid
            channel = bench.discord.channel_id
            for i in range(2):  # warm up: first reads, connections, imports
                msg = bench.discord.send_message(channel, f"<@{uid}> warm up {i}", mentions=[uid])
                wait_until(lambda: any(f"warm up {i}" in r["content"] for r in bench.discord.replies_to(msg["id"])), 30,
                           "the warm-up answer")
                wait_until(lambda: _written(f"Echo: alice: warm up {i}", archivist_calls=0), 30, "the warm-up's writes")
            result: dict[str, Any] = {}
            events: list[list[Any]] = []
            for i in range(args.messages):
                os.kill(pid, signal.SIGUSR1)
                armed = out / f"{pid}.armed"
                wait_until(armed.exists, 10, "the probe armed in the bot")
                armed.unlink()
                text = f"{MARKER} question number {i}"
                archivist_calls = _archivist_calls() + worth_a_look(text, with_memory=True)
                msg = bench.discord.send_message(channel, f"<@{uid}> {text}", mentions=[uid])
                wait_until(lambda: any(r["content"] == f"Echo: alice: {text}" for r in bench.discord.replies_to(msg["id"])),
                           30, "the completing edit")
                # The run's write and the background Archivist's (when the message is one it looks at).
                wait_until(lambda: _written(f"Echo: alice: {text}", archivist_calls=archivist_calls), 30,
                           "the run's writes")
                os.kill(pid, signal.SIGUSR2)
                dump = out / f"{pid}.json"
                wait_until(dump.exists, 10, "the bot's record")
                chats = [r for r in bench.llm.requests if r.path == "/api/chat" and text in str(r.json)]
                answer_at = min(r.time for r in chats if not (r.json or {}).get("format"))
                events = json.loads(dump.read_text())
                result = summarize(events, answer_at)
                dump.unlink()
                print(f"message {i + 1}: {len(result['modules'])} modules, {result['hops']} cross-module calls "
                      f"({len(result['distinct'])} distinct caller -> callee pairs); {result['path']} module hops along "
                      f"its path as a reader follows it, each function once ({result['returns']} of them returns to a module "
                      f"left; {result['stops']} stops in another module); LLM calls: {len(chats)} "
                      f"({sum(1 for r in chats if (r.json or {}).get('format'))} structured); requests to the supervisor: "
                      f"{len(result['links']['before'])} before the model's answer call {result['links']['before']}, "
                      f"{len(result['links']['after'])} after it {result['links']['after']}, "
                      f"{len(result['links']['background'])} from the background archivist {result['links']['background']}")
            if args.verbose:
                for event in events:
                    if event[0] == "link":
                        print(f"  request {event[1]} from " + " < ".join(event[3]))
            print("modules visited, in order: " + " > ".join(m.split(".")[-1] for m in result["modules"]))
            if args.verbose:
                for caller, callee in result["distinct"]:
                    print(f"  {caller} -> {callee}")
        finally:
            bench.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
