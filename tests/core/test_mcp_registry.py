"""The MCP server registry: services, bot associations, and the ``mcp`` / ``bot mcp`` commands."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from grobot.cli.main import main
from grobot.core.db import session_scope
from grobot.core.errors import ConflictError, NotFoundError, ValidationError
from grobot.core.services import bots, mcp_servers
from grobot.core.tools.mcp_results import namespaced
from tests.fakes.mcp_servers import stdio_config


def test_servers_are_validated(grobot_env):
    with session_scope() as session:
        for fields, message in [
            (dict(name="bad name", command="x"), "name: must be 1-32 characters"),
            (dict(name="a__b", command="x"), "without '__'"),
            (dict(name="nocmd"), "command: required for a stdio server"),
            (dict(name="nourl", transport="streamable_http"), "url: required"),
            (dict(name="badurl", transport="sse", url="ftp://x"), "url: .*http"),
            (dict(name="t", transport="carrier-pigeon", command="x"), "transport"),
        ]:
            with pytest.raises(ValidationError, match=message):
                mcp_servers.create_server(session=session, **fields)
        mcp_servers.create_server(session=session, name="dup", command="x")
        with pytest.raises(ConflictError, match="already exists"):
            mcp_servers.create_server(session=session, name="dup", command="y")


def test_env_and_headers_are_encrypted_and_never_shown(grobot_env):
    with session_scope() as session:
        server = mcp_servers.create_server(
            session=session, name="remote", transport="streamable_http", url="https://mcp.example.com/mcp",
            headers={"Authorization": "Bearer sk-very-secret"},
        )
        raw = session.execute(text("SELECT headers_enc FROM mcp_server WHERE id = :i"), {"i": server.id}).scalar()
        summary = mcp_servers.server_summary(server)
        config = mcp_servers.server_config(server)
    assert "sk-very-secret" not in raw
    assert summary["headers"] == ["Authorization"] and "sk-very-secret" not in json.dumps(summary, default=str)
    assert config.headers == {"Authorization": "Bearer sk-very-secret"}
    assert "sk-very-secret" not in repr(config)


def test_bot_associations(any_db_env):
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="b")
        server = mcp_servers.create_server(session=session, name="time", command="mcp-server-time")
        server.tools_cache = [{"name": "get_current_time"}, {"name": "convert_time"}]
        link = mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=server,
                                          allowed_tools="get_current_time", timeout_seconds=5)
        assert (link.allowed_tools, link.timeout_seconds) == (["get_current_time"], 5.0)
        with pytest.raises(ValidationError, match="has no tool named nope"):
            mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=server, allowed_tools=["nope"])
        with pytest.raises(ValidationError, match="timeout must be between"):
            mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=server, timeout_seconds=0)
        links = mcp_servers.bot_servers(session=session, bot_id=bot.id)
        assert [(link.config.name, link.allowed_tools, link.timeout_seconds) for link in links] == [
            ("time", ["get_current_time"], 5.0)]
        mcp_servers.disable_for_bot(session=session, bot_id=bot.id, server=server)
        assert mcp_servers.bot_servers(session=session, bot_id=bot.id) == []
        with pytest.raises(NotFoundError):
            mcp_servers.disable_for_bot(session=session, bot_id=bot.id, server=server)
        mcp_servers.delete_server(server, session=session)
        assert mcp_servers.bot_links(session=session, bot_id=bot.id, enabled_only=False) == []


def test_namespaced_names_are_safe_and_unique():
    assert namespaced("time", "get_current_time") == "time__get_current_time"
    assert namespaced("my-srv", "files.read/all") == "my-srv__files_read_all"
    long_a = namespaced("server", "x" * 80 + "a")
    long_b = namespaced("server", "x" * 80 + "b")
    assert len(long_a) == len(long_b) == 64 and long_a != long_b


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_mcp_and_bot_mcp_commands(grobot_env, capsys):
    fake = stdio_config("fake", "ok")
    args = ["mcp", "add", "fake", "--command", fake.command, "--cwd", fake.cwd]
    for arg in fake.args:
        args += [f"--arg={arg}"]
    args += ["--env", f"PYTHONPATH={fake.env['PYTHONPATH']}"]
    code, out, _ = _cli(capsys, *args)
    assert code == 0 and "MCP server 'fake' added" in out
    assert _cli(capsys, "mcp", "add", "broken", "--command", "/nonexistent/server")[0] == 0
    code, out, _ = _cli(capsys, "mcp", "add", "web", "--url", "http://127.0.0.1:9/mcp", "--json")
    assert json.loads(out)["transport"] == "streamable_http"

    code, out, _ = _cli(capsys, "mcp", "test", "fake")
    assert code == 0 and "MCP server 'fake' OK: fake-ok" in out
    assert "echo [read-only]: Return the text as it was given." in out
    assert '"text": {"title": "Text", "type": "string"}' in out  # the input schema is printed

    code, out, err = _cli(capsys, "mcp", "test", "broken")
    assert code == 2 and err.strip() == (
        "error: MCP server 'broken' could not be started: No such file or directory: '/nonexistent/server'")

    code, out, _ = _cli(capsys, "mcp", "list")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "TRANSPORT", "WHERE", "ENABLED", "TOOLS", "LAST", "ERROR"]
    assert any(line.startswith("fake ") and line.endswith("yes      4") for line in lines)
    assert any(line.startswith("broken ") and "could not be started" in line for line in lines)

    assert _cli(capsys, "bot", "add", "--name", "helper")[0] == 0
    code, out, _ = _cli(capsys, "bot", "mcp", "helper", "enable", "fake", "--tools", "echo,whoami", "--timeout", "9")
    assert code == 0 and out.strip() == "Bot 'helper' may use MCP server 'fake' (echo, whoami; timeout 9 s)"
    code, _, err = _cli(capsys, "bot", "mcp", "helper", "enable", "fake", "--tools", "rm_rf")
    assert code == 2 and "has no tool named rm_rf" in err
    code, out, _ = _cli(capsys, "bot", "mcp", "helper", "list", "--json")
    assert json.loads(out) == [{"server": "fake", "enabled": True, "server_enabled": True,
                                "allowed_tools": ["echo", "whoami"], "timeout_seconds": 9.0, "tool_settings": {}}]
    assert _cli(capsys, "bot", "mcp", "helper", "disable", "fake")[0] == 0
    code, _, err = _cli(capsys, "bot", "mcp", "helper", "disable", "fake")
    assert code == 2 and "not enabled for this bot" in err

    assert _cli(capsys, "mcp", "delete", "web")[0] == 0
    code, _, err = _cli(capsys, "mcp", "delete", "web")
    assert code == 2 and err.strip() == "error: no MCP server named or numbered 'web'"
