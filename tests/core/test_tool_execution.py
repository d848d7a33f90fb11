"""Tool execution as a bot meets it with real MCP servers: the admin's fallback and read/write
settings per bot and tool (``bot mcp ... --fallback/--writes/--read-only``), retries of a hanging
tool with backoff, and which calls run in parallel.

The chain runs in ``native`` mode (the output model calls the tools), on the fake LLM server,
against ``python -m tests.fakes.mcp_servers flaky`` (a real MCP server over stdio).
"""

from __future__ import annotations

import json

import pytest
import pytest_asyncio

from grobot.cli.main import main
from grobot.core.agents import executor
from grobot.core.agents.chain import wait_for_background
from grobot.core.agents.executor import PlannedCall
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.services import bots, mcp_servers
from grobot.core.services.mcp_tool_lists import read_links
from grobot.core.store.local import run_chain
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.base import ToolSpec
from grobot.core.tools.catalog import Link, catalog_for_bot
from grobot.core.tools.mcp_hub import HubLimits, McpHub
from tests.fakes.llm import EventCollector, Reply, is_write_check, use_fake_llm
from tests.fakes.mcp_servers import stdio_config


@pytest_asyncio.fixture
async def hub():
    shared = McpHub(HubLimits(connect_timeout=20, retry_after=0))
    yield shared
    await shared.aclose()


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _register(name: str, mode: str) -> None:
    cfg = stdio_config(name, mode)
    with session_scope() as session:
        server = mcp_servers.create_server(session=session, name=name, command=cfg.command, args=list(cfg.args),
                                           cwd=cfg.cwd, env=cfg.env)
        server_id = server.id
    # What `mcp test NAME` and the scheduled refresh store: the server's tool list.
    tools = {"flaky": ["backup_forecast", "flaky_time", "forecast", "lookup_a", "lookup_b", "lookup_c", "wipe"],
             "ok": ["crash", "echo", "sleep", "whoami"]}[mode]
    with session_scope() as session:
        mcp_servers.record_tools(session=session, server_id=server_id,
                                 tools=[{"name": t, "writes": t == "wipe"} for t in tools])


@pytest.fixture
def bot(grobot_env, fake_llm, capsys) -> int:
    _register("weather", "flaky")
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="forecaster", agent_mode="native").id
    use_fake_llm(fake_llm, bot_id=bot_id)
    return bot_id


def _message(bot_id: int, text: str) -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key="test:tools", content=text, author_id="7",
                           author_name="bob", platform="test_chat")


def _calls(*calls: tuple[str, dict]) -> Reply:
    return Reply(tool_calls=[{"name": name, "arguments": args} for name, args in calls])


async def _ask(bot_id: int, hub: McpHub, text: str) -> tuple[EventCollector, object]:
    sink = EventCollector()
    catalog = await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub)
    result = await run_chain(_message(bot_id, text), sink=sink, tools=catalog)
    await wait_for_background()
    return sink, result


def _steps(sink: EventCollector, tool: str) -> list[str]:
    """What happened to ``tool``, in order: call, retrying, fallback, result (as the events say)."""
    steps = []
    for event in sink.events:
        data = event.data or {}
        if event.kind.value == "tool_call" and data.get("name") == tool:
            steps.append("call")
        elif event.kind.value == "progress" and data.get("tool") == tool and data.get("status") in ("retrying", "fallback"):
            steps.append(data["status"])
        elif event.kind.value == "tool_result" and data.get("name") == tool:
            steps.append("error" if data["is_error"] else "answer")
    return steps


# --------------------------------------------------------------------------- fallback (item 1)


async def test_an_admin_sets_a_fallback_and_a_hanging_tool_is_retried_then_the_fallback_answers(bot, hub, fake_llm,
                                                                                                 capsys):
    code, out, err = _cli(capsys, "bot", "mcp", "forecaster", "enable", "weather", "--timeout", "1",
                          "--fallback", "forecast=backup_forecast")
    assert code == 0, err
    assert "Tool settings: forecast: fallback backup_forecast" in out
    fake_llm.script(_calls(("weather__forecast", {"city": "Bern"})), Reply(text="Rain in Bern, says the backup."))

    sink, result = await _ask(bot, hub, "Weather in Bern?")

    assert result.text == "Rain in Bern, says the backup." and result.error is None
    assert _steps(sink, "weather__forecast") == ["call", "retrying", "retrying", "fallback", "answer"]
    retries = [e.data for e in sink.of("progress") if e.data.get("status") == "retrying"]
    assert [(r["attempt"], r["wait_seconds"]) for r in retries] == [(2, 0.25), (3, 0.5)]
    assert "did not answer tool 'forecast' within 1 s" in retries[0]["error"]
    thinking = [e.data["text"] for e in sink.of("thinking") if e.data.get("step") == "executor"]
    assert thinking == ["weather__forecast failed after 3 tries; trying its fallback weather__backup_forecast"]
    answered = sink.of("tool_result")[0].data
    assert answered["fallback"] == "weather__backup_forecast" and answered["attempts"] == 4
    assert answered["content"] == ("(answered by the fallback tool weather__backup_forecast)\n"
                                   "Backup forecast: rain in Bern")
    final = fake_llm.chat_requests()[-1]["messages"]
    assert final[-1]["role"] == "tool" and "Backup forecast: rain in Bern" in final[-1]["content"]


async def test_without_a_fallback_a_hanging_tool_fails_after_three_tries_and_a_flaky_one_answers(bot, hub, fake_llm,
                                                                                                 capsys):
    assert _cli(capsys, "bot", "mcp", "forecaster", "enable", "weather", "--timeout", "1")[0] == 0
    fake_llm.script(_calls(("weather__forecast", {"city": "Oslo"}), ("weather__flaky_time", {})),
                    Reply(text="No forecast, but it is 12:00 (call 2)."))

    sink, result = await _ask(bot, hub, "Weather in Oslo, and the time?")

    # The model's words miss why there is no forecast: the reply says what each tool returned.
    assert result.text == ("That did not work: its MCP server could not be used right now (after 3 tries).\n"
                           'Flaky time: "12:00 (call 2)"')
    assert _steps(sink, "weather__forecast") == ["call", "retrying", "retrying", "error"]
    assert _steps(sink, "weather__flaky_time") == ["call", "retrying", "answer"]
    results = {e.data["name"]: e.data for e in sink.of("tool_result")}
    assert results["weather__forecast"]["content"] == (
        "Tool weather__forecast failed: MCP server 'weather' did not answer tool 'forecast' within 1 s (after 3 tries)")
    assert results["weather__forecast"]["attempts"] == 3
    assert results["weather__flaky_time"]["content"] == "12:00 (call 2)"
    tool_messages = [m for m in fake_llm.chat_requests()[-1]["messages"] if m["role"] == "tool"]
    assert [("after 3 tries" in m["content"]) for m in tool_messages] == [True, False]


async def test_a_timed_out_call_of_a_destructive_tool_is_not_sent_again(bot, hub, fake_llm, capsys):
    assert _cli(capsys, "bot", "mcp", "forecaster", "enable", "weather", "--timeout", "1",
                "--fallback", "wipe=lookup_a")[0] == 0
    fake_llm.script(_calls(("weather__wipe", {"seconds": 30})), Reply(text="The wipe did not finish."))

    sink, _ = await _ask(bot, hub, "Wipe it all")

    assert _steps(sink, "weather__wipe") == ["call", "error"]
    content = sink.of("tool_result")[0].data["content"]
    assert "(not sent again: it may have run, and it changes things)" in content
    assert "Its fallback weather__lookup_a was not tried" in content


def test_backoff_doubles_and_is_capped_at_ten_seconds():
    assert [executor.backoff_seconds(n) for n in range(1, 9)] == [0.25, 0.5, 1, 2, 4, 8, 10, 10]
    assert executor.MAX_ATTEMPTS == 3


# --------------------------------------------------------------------------- parallel calls (item 4)


def _overlap(sink: EventCollector) -> list[list[str]]:
    """The calls in groups that ran at the same time: a group ends when all its calls have answered."""
    groups: list[list[str]] = []
    running: set[str] = set()
    for event in sink.events:
        if event.kind.value == "tool_call":
            if not running:
                groups.append([])
            groups[-1].append(event.data["name"].removeprefix("weather__"))
            running.add(event.data["id"])
        elif event.kind.value == "tool_result":
            running.discard(event.data["id"])
    return groups


async def test_unannotated_tools_run_in_parallel_a_destructive_one_alone_and_the_admin_can_say_otherwise(
        bot, hub, fake_llm, capsys):
    assert _cli(capsys, "bot", "mcp", "forecaster", "enable", "weather")[0] == 0
    four = _calls(*((f"weather__{name}", {"seconds": 0.3}) for name in ("lookup_a", "lookup_b", "wipe", "lookup_c")))
    fake_llm.script(four, Reply(text="Done."))

    sink, result = await _ask(bot, hub, "Look a, b and c up, and wipe")

    assert result.text == 'A: "a looked up"\nB: "b looked up"\nWiped.\nC: "c looked up"'  # each result, in order
    assert _overlap(sink) == [["lookup_a", "lookup_b"], ["wipe"], ["lookup_c"]]

    # The admin knows better: lookup_b writes, wipe only reads.
    code, out, err = _cli(capsys, "bot", "mcp", "forecaster", "enable", "weather", "--writes", "lookup_b",
                          "--read-only", "wipe")
    assert code == 0, err
    assert "Tool settings: lookup_b: writes; wipe: read-only" in out
    fake_llm.script(four, Reply(text="Done again."))
    fake_llm.script_for(is_write_check, Reply(json={"asked": "yes"}), persistent=True)  # "once more" asks for them

    sink, _ = await _ask(bot, hub, "Once more")

    assert _overlap(sink) == [["lookup_a"], ["lookup_b"], ["wipe", "lookup_c"]]


def test_plan_runs_every_call_in_parallel_unless_its_tool_writes():
    specs = {name: ToolSpec(name=name, description="", input_schema={}, writes=name.startswith("w"))
             for name in ("r1", "r2", "w1", "r3", "w2", "w3")}
    calls = [PlannedCall(id=n, name=n, arguments={}) for n in ("r1", "r2", "unknown", "w1", "r3", "w2", "w3")]
    assert [[c.name for c in batch] for batch in executor.plan(calls, specs)] == [
        ["r1", "r2", "unknown"], ["w1"], ["r3"], ["w2"], ["w3"]]


# --------------------------------------------------------------------------- settings: CLI, service, catalog


def test_bot_mcp_tool_options_and_their_errors(bot, capsys):
    _register("other", "ok")

    def enable(*options: str) -> tuple[int, str, str]:
        return _cli(capsys, "bot", "mcp", "forecaster", "enable", "weather", *options)

    code, _, err = enable("--fallback", "teleport=backup_forecast")
    assert code == 2 and err.strip() == (
        "error: MCP server 'weather' has no tool named 'teleport' (known: backup_forecast, flaky_time, forecast, "
        "lookup_a, lookup_b, lookup_c, wipe)")
    code, _, err = enable("--fallback", "forecast=forecast")
    assert code == 2 and err.strip() == "error: a tool cannot be its own fallback ('forecast')"
    code, _, err = enable("--fallback", "forecast=weather__forecast")
    assert code == 2 and "a tool cannot be its own fallback" in err
    code, _, err = enable("--fallback", "forecast=nowcast")
    assert code == 2 and "there is no tool named 'nowcast' for a fallback of 'forecast'" in err
    code, _, err = enable("--fallback", "forecast")
    assert code == 2 and "expected TOOL=FALLBACK" in err
    code, _, err = enable("--fallback", "forecast=other__echo")
    assert code == 2 and "is on MCP server 'other', which this bot does not use: enable it first" in err
    code, _, err = enable("--writes", "wipe", "--read-only", "wipe")
    assert code == 2 and "'wipe' is given as both writes and read_only" in err
    code, _, err = enable("--tools", "forecast,lookup_a", "--fallback", "forecast=backup_forecast")
    assert code == 2 and ("the fallback 'backup_forecast' of 'forecast' is not among this bot's allowed tools "
                          "of 'weather'") in err
    with session_scope(readonly=True) as session:  # nothing of a refused command was stored
        assert mcp_servers.bot_links(session=session, bot_id=bot) == []

    assert _cli(capsys, "bot", "mcp", "forecaster", "enable", "other", "--tools", "echo")[0] == 0
    code, out, err = enable("--fallback", "forecast=other__echo", "--fallback", "lookup_a=datetime_now",
                            "--fallback", "lookup_b=lookup_c", "--writes", "lookup_a,lookup_b", "--read-only", "wipe")
    assert code == 0, err
    assert out.splitlines()[1] == ("Tool settings: forecast: fallback other__echo; lookup_a: fallback datetime_now, "
                                   "writes; lookup_b: fallback lookup_c, writes; wipe: read-only")
    code, out, err = enable("--fallback", "lookup_b=", "--auto", "lookup_a")
    assert code == 0, err
    code, out, _ = _cli(capsys, "bot", "mcp", "forecaster", "list", "--json")
    weather = next(row for row in json.loads(out) if row["server"] == "weather")
    assert weather["tool_settings"] == {"forecast": {"fallback": "other__echo"}, "lookup_a": {"fallback": "datetime_now"},
                                        "lookup_b": {"access": "writes"}, "wipe": {"access": "read_only"}}
    code, out, _ = _cli(capsys, "bot", "mcp", "forecaster", "list")
    assert out.splitlines()[0].split() == ["SERVER", "ENABLED", "TOOLS", "TIMEOUT", "TOOL", "SETTINGS"]
    assert "lookup_b: writes" in out


async def test_the_catalog_gives_each_tool_its_fallback_and_access_and_bot_processes_get_them(bot, hub, capsys):
    _register("other", "ok")
    assert _cli(capsys, "bot", "mcp", "forecaster", "enable", "other")[0] == 0
    assert _cli(capsys, "bot", "mcp", "forecaster", "enable", "weather", "--fallback", "forecast=backup_forecast",
                "--fallback", "flaky_time=datetime_now", "--fallback", "lookup_a=other__echo",
                "--writes", "lookup_b", "--read-only", "wipe")[0] == 0
    with session_scope(readonly=True) as session:
        links = read_links(bot, session=session)
    # A bot process gets its links from its supervisor as JSON.
    links = [Link.from_dict(json.loads(json.dumps(link.as_dict()))) for link in links]

    specs = {s.name: s for s in await (await catalog_for_bot(bot, store=DatabaseStore(), hub=hub, links=links)).list_tools()}

    assert specs["weather__forecast"].fallback == "weather__backup_forecast"
    assert specs["weather__flaky_time"].fallback == "datetime_now"
    assert specs["weather__lookup_a"].fallback == "other__echo"
    assert specs["weather__lookup_c"].fallback is None
    assert (specs["weather__lookup_b"].writes, specs["weather__lookup_b"].read_only) == (True, False)
    assert (specs["weather__wipe"].writes, specs["weather__wipe"].read_only) == (False, True)
    assert (specs["weather__lookup_c"].writes, specs["weather__backup_forecast"].read_only) == (False, True)
    assert specs["other__sleep"].writes is False and specs["files_list"].writes is False
    assert specs["user_notes_add"].writes is True  # a built-in that writes says so
