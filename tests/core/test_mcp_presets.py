"""MCP presets: the keyless ones for real (installed from PyPI and npm by ``make test``: added with
``mcp add --preset``, connected, tools listed, one call each, as a bot's catalog makes it), the keyed
ones' secrets (required, encrypted, never shown), and the one-line test result the pages read."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from grobot.cli.main import main
from grobot.core.db import session_scope
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.services import bots, mcp_presets, mcp_servers, mcp_tool_lists
from grobot.core.services.files import bot_root
from grobot.core.services.mcp_tool_lists import check_and_store, read_links, report_line
from grobot.core.settings import get_settings
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.base import ToolContext
from grobot.core.tools.catalog import catalog_for_bot
from grobot.core.tools.mcp_hub import McpHub
from grobot.core.tools.mcp_presets import KEYLESS, PRESETS, launch

NPM_MODULES = Path(__file__).resolve().parents[1] / "npm" / "node_modules"


@pytest.fixture
def preset_env(grobot_env, monkeypatch):
    """The npm presets are found where ``make test`` installs them (tests/npm)."""
    monkeypatch.setenv("GROBOT_MCP_NODE_MODULES", str(NPM_MODULES))
    get_settings.cache_clear()  # grobot_env clears it again afterwards
    return grobot_env


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_error(404)
            return
        body = b"<html><head><title>Menu</title></head><body><h1>Menu</h1><p>Soup of the day: tomato.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def web_page():
    """A web page on 127.0.0.1 for the fetch preset to read."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/menu"
    httpd.shutdown()
    httpd.server_close()


def _call(bot_id: int, tool: str, arguments: dict[str, Any]) -> Any:
    """One call through the bot's catalog (its links read as a message does), with a hub of its own."""

    async def run() -> Any:
        hub = McpHub()
        try:
            with session_scope(readonly=True) as session:
                links = read_links(bot_id, session=session)
            catalog = await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub, links=links)
            assert tool in {spec.name for spec in await catalog.list_tools()}, catalog.unavailable()
            return await catalog.call_tool(tool, arguments, context=ToolContext(bot_id=bot_id), timeout=30)
        finally:
            await hub.aclose()

    return asyncio.run(run())


KEYLESS_PRESETS = [p.name for p in PRESETS if p.tier == KEYLESS]


def test_every_keyless_preset_is_installed_for_the_tests(preset_env):
    # The presets the Settings page offers without a key (each one also called for real below).
    assert KEYLESS_PRESETS == ["time", "fetch", "filesystem", "sequential-thinking", "memory"]
    missing = [p.package for p in PRESETS if p.name in KEYLESS_PRESETS and not launch(p).installed]
    assert missing == [], f"not installed: {missing}: run `make test`"


@pytest.mark.slow
@pytest.mark.parametrize("name", KEYLESS_PRESETS)
def test_keyless_preset_added_connected_and_called(preset_env, capsys, web_page, name):
    code, out, err = _cli(capsys, "mcp", "add", "--preset", name)
    assert code == 0, err
    assert f"MCP server '{name}' added" in out
    assert out.splitlines()[1].startswith("OK: "), out  # connected and listed at once
    with session_scope() as session:
        bot = bots.create_bot(session=session, name=f"bot-{name}")
        other = bots.create_bot(session=session, name=f"other-{name}")
        server = mcp_servers.get_server(name, session=session)
        assert server.tools_cache and server.last_error == ""
        for bot_id in (bot.id, other.id):
            mcp_servers.enable_for_bot(session=session, bot_id=bot_id, server=server)
        bot_id, other_id = bot.id, other.id

    if name == "time":
        result = _call(bot_id, "time__get_current_time", {"timezone": "Europe/Paris"})
        assert "Europe/Paris" in result.content
    elif name == "fetch":
        refused = _call(bot_id, "fetch__fetch", {"url": web_page})  # no private addresses by default
        assert refused.is_error and "not a public address" in refused.content
        with session_scope() as session:  # an admin allows them (an intranet page)
            server = mcp_servers.get_server(name, session=session)
            mcp_servers.update_server(server, {"args": [*server.args, "--allow-private-ips"]}, session=session)
        result = _call(bot_id, "fetch__fetch", {"url": web_page})
        assert "Soup of the day: tomato." in result.content
    elif name == "filesystem":
        (bot_root(bot_id) / "hello.txt").write_text("hello from the bot's folder")
        (bot_root(other_id) / "secret.txt").write_text("another bot's file")
        result = _call(bot_id, "filesystem__read_text_file", {"path": str(bot_root(bot_id) / "hello.txt")})
        assert "hello from the bot's folder" in result.content
        outside = _call(bot_id, "filesystem__read_text_file", {"path": str(bot_root(other_id) / "secret.txt")})
        assert outside.is_error and "another bot's file" not in outside.content  # confined to its own folder
    elif name == "sequential-thinking":
        result = _call(bot_id, "sequential-thinking__sequentialthinking",
                       {"thought": "First, list the facts.", "thoughtNumber": 1, "totalThoughts": 2, "nextThoughtNeeded": True})
        assert not result.is_error and json.loads(result.content)["thoughtNumber"] == 1
    elif name == "memory":
        entity = {"name": "Alice", "entityType": "person", "observations": ["likes tea"]}
        created = _call(bot_id, "memory__create_entities", {"entities": [entity]})
        assert not created.is_error
        assert "likes tea" in _call(bot_id, "memory__read_graph", {}).content
        assert "likes tea" not in _call(other_id, "memory__read_graph", {}).content  # one graph per bot
    else:  # pragma: no cover - a new keyless preset needs its call here
        pytest.fail(f"no call written for the {name} preset")


def test_keyed_preset_needs_its_secrets_and_stores_them_encrypted(preset_env, capsys):
    code, _, err = _cli(capsys, "mcp", "add", "--preset", "github")
    assert code == 2 and err.strip() == ("error: the github preset needs Authorization (Personal access token): "
                                         "give it with --secret Authorization=... (or --secrets-stdin)")
    code, _, err = _cli(capsys, "mcp", "add", "--preset", "github", "--secret", "TOKEN=x")
    assert code == 2 and "has no secret TOKEN (it takes: Authorization)" in err
    code, _, err = _cli(capsys, "mcp", "add", "--preset", "gopher")
    assert code == 2 and "no MCP preset named 'gopher'" in err

    code, out, _ = _cli(capsys, "mcp", "add", "--preset", "github", "gh", "--secret", "Authorization=ghp_secret123",
                        "--no-test", "--json")
    assert code == 0
    shown = json.loads(out)
    assert (shown["name"], shown["transport"], shown["url"], shown["headers"]) == (
        "gh", "streamable_http", "https://api.githubcopilot.com/mcp/", ["Authorization"])
    assert "ghp_secret123" not in out
    with session_scope() as session:
        server = mcp_presets.add_from_preset(session=session, preset="brave-search",
                                             secrets={"BRAVE_API_KEY": "bsk-secret456"})
        raw = session.execute(text("SELECT env_enc, headers_enc FROM mcp_server WHERE name IN ('gh', 'brave-search')")).all()
        assert mcp_servers.server_config(server).env == {"BRAVE_API_KEY": "bsk-secret456"}
        assert mcp_servers.server_config(mcp_servers.get_server("gh", session=session)).headers == {
            "Authorization": "Bearer ghp_secret123"}
    assert not any("secret" in str(value) for row in raw for value in row)
    with session_scope() as session, pytest.raises(NotFoundError):
        mcp_presets.add_from_preset(session=session, preset="nope")
    with session_scope() as session, pytest.raises(ValidationError, match="needs SLACK_BOT_TOKEN"):
        mcp_presets.add_from_preset(session=session, preset="slack", secrets={"SLACK_TEAM_ID": "T1"})

    code, out, _ = _cli(capsys, "mcp", "presets")
    assert code == 0 and "No key needed:" in out and "Needs a key or token:" in out
    assert "brave-search" in out and "BRAVE_API_KEY" in out
    code, out, _ = _cli(capsys, "mcp", "presets", "--json")
    listed = {row["name"]: row for row in json.loads(out)}
    assert {"time", "fetch", "filesystem", "sequential-thinking", "memory", "github", "brave-search", "slack",
            "notion"} <= set(listed)
    assert listed["filesystem"]["installed"] and listed["filesystem"]["per_bot"]
    assert [s["key"] for s in listed["slack"]["secrets"]] == ["SLACK_BOT_TOKEN", "SLACK_TEAM_ID"]
    assert listed["github"]["secrets"][0]["header"] is True


def test_a_test_stores_the_tools_or_the_one_line_error(preset_env):
    with session_scope() as session:
        mcp_presets.add_from_preset(session=session, preset="time")
        mcp_servers.create_server(session=session, name="foo", command="foo")
    ok = asyncio.run(check_and_store("time"))
    assert report_line(ok) == "OK: 2 tools (get_current_time, convert_time)"
    failed = asyncio.run(check_and_store("foo"))
    assert report_line(failed) == "MCP server 'foo' could not be started: command not found: foo"
    with session_scope(readonly=True) as session:
        rows = {s.name: s for s in mcp_servers.list_servers(session=session)}
        assert [t["name"] for t in rows["time"].tools_cache] == ["get_current_time", "convert_time"]
        assert rows["foo"].last_error == "MCP server 'foo' could not be started: command not found: foo"


def test_one_hub_gives_each_bot_its_own_folder(preset_env):
    """The supervisor answers Test Chat for many bots with one hub: a per-bot server gets one session
    per bot, each confined to that bot's folder."""
    with session_scope() as session:
        server = mcp_presets.add_from_preset(session=session, preset="filesystem")
        ids = [bots.create_bot(session=session, name=f"fs-{n}").id for n in (1, 2)]
        for bot_id in ids:
            mcp_servers.enable_for_bot(session=session, bot_id=bot_id, server=server)

    async def allowed(hub: McpHub, bot_id: int) -> str:
        with session_scope(readonly=True) as session:
            links = read_links(bot_id, session=session)
        catalog = await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub, links=links)
        result = await catalog.call_tool("filesystem__list_allowed_directories", {},
                                         context=ToolContext(bot_id=bot_id), timeout=30)
        return result.content

    async def run() -> list[str]:
        hub = McpHub()
        try:
            return list(await asyncio.gather(*(allowed(hub, bot_id) for bot_id in ids)))
        finally:
            await hub.aclose()

    first, second = asyncio.run(run())
    assert str(bot_root(ids[0]).resolve()) in first and str(bot_root(ids[1]).resolve()) not in first
    assert str(bot_root(ids[1]).resolve()) in second and str(bot_root(ids[0]).resolve()) not in second


def test_a_preset_not_installed_starts_through_npx_or_uvx(preset_env, monkeypatch):
    from grobot.core.tools import mcp_presets as catalogue

    brave = catalogue.get_preset("brave-search")
    started = launch(brave)
    assert not started.installed
    assert started.args[-4:] == ("-y", "@brave/brave-search-mcp-server", "--transport", "stdio")
    assert started.command.endswith(("/node", "npx"))
    monkeypatch.setattr(catalogue, "_script", lambda name: None)  # neither mcp-server-time nor uv installed
    monkeypatch.setattr(catalogue, "_found", lambda command: False)
    started = launch(catalogue.get_preset("time"))
    assert (started.command, started.args, started.installed) == ("uvx", ("mcp-server-time", "--local-timezone=UTC"),
                                                                  False)
    assert started.missing.startswith("mcp-server-time is not installed here (uvx, which would download it, is not "
                                      "either). Install it, then test the server again: ")
    assert started.missing.endswith(" -m pip install mcp-server-time")
    for preset in PRESETS:  # every preset says how it runs and what it needs
        assert preset.package or preset.url, preset.name
        assert (preset.tier == KEYLESS) == (not preset.secrets), preset.name


def test_a_preset_stored_before_its_package_was_installed_runs_the_installed_package(preset_env):
    """A preset added while its package was not installed is stored as ``uvx PACKAGE`` / ``npx -y PACKAGE``
    (with the uvx or npx of that time, gone since): once the package is installed, connecting runs it."""
    gone = "/nowhere/bin"
    with session_scope() as session:
        mcp_servers.create_server(session=session, name="clock", command=f"{gone}/uvx",
                                  args=["mcp-server-time", "--local-timezone=UTC"])
        mcp_servers.create_server(session=session, name="graph", command=f"{gone}/npx",
                                  args=["-y", "@modelcontextprotocol/server-memory"],
                                  env={"MEMORY_FILE_PATH": "{bot_state}/memory.jsonl"})
        mcp_servers.create_server(session=session, name="thinking", command=f"{gone}/node",
                                  args=[f"{gone}/../lib/node_modules/npm/bin/npx-cli.js", "-y",
                                        "@modelcontextprotocol/server-sequential-thinking"])
        mcp_servers.create_server(session=session, name="missing", command=f"{gone}/uvx", args=["mcp-server-nope"])
    for name, tool in (("clock", "get_current_time"), ("graph", "create_entities"),
                       ("thinking", "sequentialthinking")):
        report = asyncio.run(check_and_store(name))
        assert report.ok, report.error
        assert tool in [t.name for t in report.tools]
    missing = asyncio.run(check_and_store("missing"))
    assert report_line(missing).startswith(
        f"MCP server 'missing' could not be started: No such file or directory: '{gone}/uvx'. mcp-server-nope is not "
        "installed here (uvx, which would download it, is not either). Install it, then test the server again: ")


def test_the_worker_lists_servers_added_without_a_test(preset_env, capsys):
    """What the supervisor does every poll: a server added with --no-test is listed (or its error
    stored) at once, not at the 5-minute refresh; a listed or failed one is not asked again."""
    assert _cli(capsys, "mcp", "add", "--preset", "time", "--no-test")[0] == 0
    assert _cli(capsys, "mcp", "add", "ghost", "--command", "ghost-server", "--no-test")[0] == 0
    assert _cli(capsys, "mcp", "add", "off", "--command", "off-server", "--no-test", "--disabled")[0] == 0

    async def refresh_new() -> dict[str, str]:
        hub = McpHub()
        try:
            return await mcp_tool_lists.refresh_new(hub)
        finally:
            await hub.aclose()

    assert asyncio.run(refresh_new()) == {
        "ghost": "MCP server 'ghost' could not be started: command not found: ghost-server", "time": ""}
    with session_scope(readonly=True) as session:
        rows = {s.name: s for s in mcp_servers.list_servers(session=session)}
    assert [t["name"] for t in rows["time"].tools_cache] == ["get_current_time", "convert_time"]
    assert rows["ghost"].last_error.endswith("command not found: ghost-server")
    assert rows["off"].tools_cache is None and rows["off"].last_error == ""  # disabled: left alone
    assert asyncio.run(refresh_new()) == {}


def test_unchecked_servers_on_both_databases(any_db_env):
    with session_scope() as session:
        fresh = mcp_servers.create_server(session=session, name="fresh", command="x")
        listed = mcp_servers.create_server(session=session, name="listed", command="x")
        failed = mcp_servers.create_server(session=session, name="failed", command="x")
        mcp_servers.create_server(session=session, name="off", command="x", enabled=False)
        mcp_servers.record_tools(session=session, server_id=listed.id, tools=[{"name": "a"}])
        mcp_servers.record_tools(session=session, server_id=failed.id, tools=None, error="it failed")
        assert [c.name for c in mcp_servers.unchecked_configs(session=session)] == [fresh.name]


def test_a_deleted_bot_takes_its_mcp_state_along(preset_env):
    """The memory preset's graph of a bot (its {bot_state} folder) goes when the bot is deleted."""
    with session_scope() as session:
        server = mcp_presets.add_from_preset(session=session, preset="memory")
        bot = bots.create_bot(session=session, name="forgetful")
        bot_id = bot.id
        config = mcp_servers.server_config(server, bot_id=bot_id)
    graph = Path(config.env["MEMORY_FILE_PATH"])
    assert graph.parent.is_dir() and f"bot-{bot_id}" in str(graph)
    graph.write_text('{"type": "entity", "name": "Alice"}\n')
    with session_scope() as session:
        bots.delete_bot(bots.get_bot(bot_id, session=session), session=session)
    assert not graph.exists() and not graph.parent.exists()


def test_a_stdio_server_finds_a_recent_node_whatever_comes_first_on_path(preset_env, capsys, web_page, monkeypatch):
    """The fetch server runs ``node`` from ``PATH`` (readabilipy): a worker started with only the
    system's folders on ``PATH`` (an old or no Node there) still gets the virtualenv's Node first."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    code, out, err = _cli(capsys, "mcp", "add", "--preset", "fetch")
    assert code == 0, err
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="bot-node-path")
        server = mcp_servers.get_server("fetch", session=session)
        mcp_servers.update_server(server, {"args": [*server.args, "--allow-private-ips"]}, session=session)
        mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=server)
        bot_id = bot.id
    result = _call(bot_id, "fetch__fetch", {"url": web_page})
    assert not result.is_error and "Soup of the day: tomato." in result.content, result.content
