"""The command line: what an admin types and sees."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from grobot.cli.main import main
from tests.conftest import TEST_SECRET_KEY
from tests.helpers import make_token

TOKEN = make_token(666666666666666666)


def run(capsys, *args: str, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_bot_lifecycle(grobot_env, capsys, monkeypatch):
    code, out, _ = run(capsys, "bot", "add", "--name", "alpha", "--token-stdin", stdin=TOKEN + "\n", monkeypatch=monkeypatch)
    assert code == 0 and "alpha" in out and TOKEN not in out
    assert run(capsys, "bot", "add", "--name", "beta", "--personality", "grumpy", "--disabled")[0] == 0

    code, out, _ = run(capsys, "bot", "list", "--json")
    listed = json.loads(out)
    assert [b["name"] for b in listed] == ["alpha", "beta"]
    for entry in listed:
        assert {"id", "name", "enabled", "status", "status_detail"} <= set(entry)
        assert entry["status"] in {"starting", "online", "offline", "error", "stopped"}
    assert [b["enabled"] for b in listed] == [True, False]

    code, out, _ = run(capsys, "bot", "set", "alpha", "personality=cheerful pirate", "keywords=ahoy,arr")
    assert code == 0
    code, out, _ = run(capsys, "bot", "show", "alpha", "--json")
    shown = json.loads(out)
    assert shown["personality"] == "cheerful pirate" and shown["keywords"] == ["ahoy", "arr"]
    assert shown["token"] == "set" and TOKEN not in out

    assert run(capsys, "bot", "enable", "beta")[0] == 0
    assert run(capsys, "bot", "disable", "alpha")[0] == 0
    listed = json.loads(run(capsys, "bot", "list", "--json")[1])
    assert {b["name"]: b["enabled"] for b in listed} == {"alpha": False, "beta": True}
    assert next(b for b in listed if b["name"] == "alpha")["status"] == "stopped"

    assert run(capsys, "bot", "delete", "beta")[0] == 0
    assert [b["name"] for b in json.loads(run(capsys, "bot", "list", "--json")[1])] == ["alpha"]


@pytest.mark.parametrize(
    "args, stdin, expected",
    [
        (("bot", "add", "--name", "bad/name"), None, "name"),
        (("bot", "add", "--name", "1"), None, "must not be only digits: a bot is found by its name or its number"),
        (("bot", "set", "one", "name=42"), None, "must not be only digits"),
        (("bot", "add", "--name", "x", "--token-stdin"), "not-a-token\n", "does not look like a Discord bot token"),
        (("bot", "set", "ghost", "personality=x"), None, "no bot named"),
        (("bot", "set", "one", "colour=red"), None, "unknown field 'colour'"),
        (("bot", "set", "one", "max_tool_rounds=lots"), None, "max_tool_rounds"),
        (("bot", "set", "one", "token=abc"), None, "--token-stdin"),
        (("bot", "set", "one", "novalue"), None, "FIELD=VALUE"),
        (("llm", "set", "--category", "output", "--provider", "ollama", "--model", "m", "--base-url", "ftp://x"), None, "http"),
        (("llm", "set", "--category", "output", "--provider", "ollama", "--context-window", "-5"), None,
         "error: --context-window: must be between 256 and 10000000\n"),
        (("llm", "set", "--category", "output", "--provider", "llamacpp"), None,
         "error: --model: required with --provider llamacpp: the GGUF file to run"),
        (("mcp", "add", "--preset", "brave-search", "--no-test"), None,
         "needs BRAVE_API_KEY (Brave Search API key): give it with --secret BRAVE_API_KEY=... (or --secrets-stdin)\n"),
        (("mcp", "add", "plain", "--no-test"), None, "error: --command: required for a stdio server\n"),
        (("usage", "--days", "-1"), None, "error: --days: must be between 1 and 366\n"),
        (("usage", "one", "--days", "0"), None, "error: --days: must be between 1 and 366\n"),
        (("usage", "--by", "model", "--days", "100000"), None, "error: --days: must be between 1 and 366\n"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_code_2(grobot_env, capsys, monkeypatch, args, stdin, expected):
    assert run(capsys, "bot", "add", "--name", "one")[0] == 0
    before = run(capsys, "bot", "show", "one", "--json")[1]
    code, out, err = run(capsys, *args, stdin=stdin, monkeypatch=monkeypatch)
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and expected in err
    assert "Traceback" not in err
    assert run(capsys, "bot", "show", "one", "--json")[1] == before  # nothing half-written


def test_llm_set_never_prints_the_api_key(grobot_env, capsys, monkeypatch):
    code, out, err = run(capsys, "llm", "set", "--category", "output", "--provider", "openai", "--model", "gpt-x",
                         "--base-url", "https://api.example.test/v1", "--api-key-stdin", "--no-check",
                         stdin="sk-very-secret-123\n", monkeypatch=monkeypatch)
    assert code == 0
    code, out, err = run(capsys, "llm", "show", "--json")
    rows = {r["category"]: r for r in json.loads(out)}
    assert rows["output"]["model"] == "gpt-x" and rows["output"]["api_key"] == "set"
    assert "sk-very-secret" not in out + err


def test_admin_create_generates_a_password_once(grobot_env, capsys, monkeypatch):
    code, out, _ = run(capsys, "admin", "create", "--username", "root", "--if-none", stdin="", monkeypatch=monkeypatch)
    assert code == 0 and "password" in out
    code, out, _ = run(capsys, "admin", "create", "--username", "other", "--if-none", stdin="", monkeypatch=monkeypatch)
    assert code == 0 and out == ""  # an admin exists: nothing to do
    users = json.loads(run(capsys, "users", "list", "--json")[1])
    assert [(u["username"], u["role"]) for u in users] == [("root", "admin")]


def test_cli_as_a_process_reports_errors_without_traceback(grobot_env):
    result = subprocess.run([sys.executable, "-m", "grobot", "bot", "show", "nobody"], env=grobot_env.environ(),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: no bot named or numbered 'nobody'"
    broken = grobot_env.environ(DATABASE_URL="postgresql+psycopg2://u@127.0.0.1:1/none")
    result = subprocess.run([sys.executable, "-m", "grobot", "bot", "list"], env=broken,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_llm_set_clear_api_key_removes_the_stored_key(grobot_env, capsys, monkeypatch):
    base = ("llm", "set", "--category", "output", "--provider", "openai", "--model", "gpt-x",
            "--base-url", "https://api.example.test/v1")
    assert run(capsys, *base, "--api-key-stdin", "--no-check", stdin="sk-old-key\n", monkeypatch=monkeypatch)[0] == 0
    code, out, err = run(capsys, *base, "--clear-api-key")
    assert code == 0 and out.strip() == "output LLM set for global default: openai gpt-x; API key removed"
    rows = {r["category"]: r for r in json.loads(run(capsys, "llm", "show", "--json")[1])}
    assert rows["output"]["api_key"] == "not set"
    with pytest.raises(SystemExit) as exited:
        run(capsys, *base, "--clear-api-key", "--api-key-stdin", stdin="sk-x\n", monkeypatch=monkeypatch)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "not allowed with argument --clear-api-key" in err and err.count("\n") == 1


def test_secrets_rotate_refuses_a_single_env_key(grobot_env, capsys, monkeypatch):
    from grobot.core.settings import get_settings

    assert run(capsys, "bot", "add", "--name", "rot", "--token-stdin", stdin=TOKEN + "\n", monkeypatch=monkeypatch)[0] == 0
    code, out, err = run(capsys, "secrets", "rotate")  # GROBOT_SECRET_KEY is one key: no new key to rotate to
    assert code == 2 and out == ""
    assert err == ("error: GROBOT_SECRET_KEY holds one key, nothing to rotate to: set GROBOT_SECRET_KEY=NEW,OLD "
                   "(the new key first), run secrets rotate, then keep only NEW\n")

    monkeypatch.setenv("GROBOT_SECRET_KEY", f"new-key,{TEST_SECRET_KEY}")  # the documented way
    get_settings.cache_clear()
    code, out, err = run(capsys, "secrets", "rotate")
    assert code == 0 and out == "1 secrets re-encrypted with the new key\n"
    monkeypatch.setenv("GROBOT_SECRET_KEY", "new-key")
    get_settings.cache_clear()
    from grobot.core.db import session_scope
    from grobot.core.services import bots

    with session_scope(readonly=True) as session:  # readable with NEW alone
        assert bots.get_token(bots.get_bot("rot", session=session)) == TOKEN


def test_admin_create_reads_stdin_only_with_password_stdin(grobot_env, capsys, monkeypatch):
    from grobot.core.db import session_scope
    from grobot.core.services import users

    piped = io.StringIO("y\ny\n")  # `yes | python -m grobot admin create ...`
    monkeypatch.setattr(sys, "stdin", piped)
    code, out, _ = run(capsys, "admin", "create", "--username", "bob4")
    assert code == 0 and out.startswith("admin 'bob4' created with the password: ")
    assert piped.tell() == 0  # not read
    generated = out.splitlines()[0].rsplit(": ", 1)[1]
    code, out, _ = run(capsys, "admin", "create", "--username", "carol", "--password-stdin", stdin="chosen-pw-123\n",
                       monkeypatch=monkeypatch)
    assert code == 0 and out == "admin 'carol' created\n"
    with session_scope() as session:
        assert users.authenticate(session=session, username="bob4", password=generated) is not None
        assert users.authenticate(session=session, username="bob4", password="y") is None
        assert users.authenticate(session=session, username="carol", password="chosen-pw-123") is not None


def test_mcp_test_of_a_server_that_is_not_mcp_is_one_line(grobot_env):
    def grobot(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "grobot", *args], env=grobot_env.environ(),
                              capture_output=True, text=True, timeout=60)

    assert grobot("mcp", "add", "envsrv", "--command", "echo", "--arg", "hello", "--no-test").returncode == 0
    result = grobot("mcp", "test", "envsrv", "--timeout", "5")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: MCP server 'envsrv' sent something that is not MCP JSON-RPC")
    assert result.stderr.count("\n") == 1  # no library log, no traceback, no warning before it
    verbose = grobot("-v", "mcp", "test", "envsrv", "--timeout", "5")
    assert verbose.returncode == 2 and "mcp.client" in verbose.stderr  # -v shows what the library said


def test_database_and_environment_errors_say_what_to_do(grobot_env, tmp_path):
    def grobot(*args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "grobot", *args], env=grobot_env.environ(**env),
                              capture_output=True, text=True, timeout=60)

    empty = tmp_path / "empty.db"
    empty.touch()
    result = grobot("bot", "list", DATABASE_URL=f"sqlite:///{empty}")
    assert (result.returncode, result.stderr) == (2, f"error: cannot use the database sqlite:///{empty}: no such table: "
                                                     "bot (no schema yet, or an old one): run python -m grobot db upgrade\n")

    missing = tmp_path / "new" / "dir" / "grobot.db"
    for command in (("bot", "list"), ("db", "current"), ("health",)):  # read-only: nothing is created
        result = grobot(*command, DATABASE_URL=f"sqlite:///{missing}")
        assert result.returncode != 0 and "Traceback" not in result.stderr + result.stdout
        assert not (tmp_path / "new").exists()
    assert "database  FAIL" in result.stdout and "does not exist" in result.stdout  # health's line (cut to its width)
    assert grobot("bot", "list", DATABASE_URL=f"sqlite:///{missing}").stderr == (
        f"error: the database {missing} does not exist (DATABASE_URL, default GROBOT_DATA_DIR/grobot.db): "
        "create it with python -m grobot db upgrade\n")
    assert grobot("db", "upgrade", DATABASE_URL=f"sqlite:///{missing}").returncode == 0  # as make run does
    assert grobot("bot", "list", "--json", DATABASE_URL=f"sqlite:///{missing}").stdout.strip() == "[]"

    result = grobot("bot", "list", DATABASE_URL="bogus")
    assert (result.returncode, result.stderr) == (2, "error: DATABASE_URL is not a database URL: e.g. "
                                                     "sqlite:///data/grobot.db or postgresql+psycopg2://USER:PASSWORD@HOST/DB\n")
    result = grobot("bot", "list", GROBOT_POLL_SECONDS="abc")
    assert (result.returncode, result.stderr) == (2, "error: GROBOT_POLL_SECONDS must be a number (got 'abc')\n")


def test_a_chat_that_fails_is_one_error_line_and_exit_code_2(grobot_env):
    from tests.ui.webapp import free_port

    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there

    def grobot(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "grobot", *args], env=grobot_env.environ(OLLAMA_HOST=dead),
                              capture_output=True, text=True, timeout=60)

    assert grobot("bot", "add", "--name", "second").returncode == 0
    result = grobot("chat", "second", "hi")
    assert result.returncode == 2
    assert result.stderr == f"[error] cannot reach the ollama server at {dead} (is it running?)\n"  # no log before it
    verbose = grobot("-v", "chat", "second", "hi")
    assert verbose.returncode == 2
    assert f"WARNING grobot.core.agents.chain: The chain failed for bot 1: cannot reach the ollama server at {dead}" \
        in verbose.stderr  # -v shows the log


def test_bot_mcp_list_shows_the_bot_s_servers_or_only_the_one_named(grobot_env, capsys):
    assert run(capsys, "bot", "add", "--name", "helper")[0] == 0
    for name in ("clock", "notes", "unused"):
        assert run(capsys, "mcp", "add", name, "--command", "echo", "--no-test")[0] == 0
    assert run(capsys, "bot", "mcp", "helper", "enable", "clock", "--timeout", "7")[0] == 0
    assert run(capsys, "bot", "mcp", "helper", "enable", "notes")[0] == 0

    code, out, _ = run(capsys, "bot", "mcp", "helper", "list", "--json")
    assert code == 0 and [r["server"] for r in json.loads(out)] == ["clock", "notes"]
    code, out, _ = run(capsys, "bot", "mcp", "helper", "list", "clock")  # as README shows it: list SERVER
    assert code == 0 and out.splitlines()[0].split() == ["SERVER", "ENABLED", "TOOLS", "TIMEOUT", "TOOL", "SETTINGS"]
    assert out.splitlines()[1:] == ["clock   yes      all    7        -"]
    assert run(capsys, "bot", "mcp", "helper", "list", "unused") == (
        2, "", "error: bot 'helper' does not use MCP server 'unused' (python -m grobot bot mcp helper enable unused)\n")
    assert run(capsys, "bot", "mcp", "helper", "list", "ghost") == (2, "", "error: no MCP server named or numbered 'ghost'\n")


def test_each_command_is_registered_by_the_module_named_for_it_and_runs_with_only_that_module(grobot_env):
    """A command imports only its own group (most of its start-up was importing what the others use), so the
    map from command to module must name every command the groups register."""
    import argparse
    import importlib

    from grobot.cli.main import COMMAND_MODULES, COMMANDS

    registered = {}
    for module in COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"grobot.cli.{module}").register(sub)
        registered.update(dict.fromkeys(sub.choices, module))
    assert registered == COMMANDS

    probe = ("import json, sys; from grobot.cli.main import main; code = main(['-v', 'bot', 'list', '--json']); "
             "print(json.dumps([m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('grobot.cli.')]))")
    result = subprocess.run([sys.executable, "-c", probe], env=grobot_env.environ(), capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    listed, imported = result.stdout.splitlines()
    assert listed == "[]" and set(json.loads(imported)) & set(COMMAND_MODULES) == {"bots"}


def test_the_list_of_commands_is_the_whole_parsers_and_imports_no_command_group(grobot_env):
    """``--help`` (and a mistyped command) lists every command with its line without importing any group: the
    same text as the parser that imports them all."""
    from grobot.cli.main import COMMAND_MODULES, build_parser

    assert build_parser(["--help"]).format_help() == build_parser().format_help()
    probe = ("import json, sys\nfrom grobot.cli.main import main\ntry:\n    main(sys.argv[1:])\nfinally:\n"
             "    print(json.dumps([m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('grobot.cli.')]), file=sys.stderr)")
    for argv, code, said in ((["--help"], 0, "worker       run the bot fleet supervisor"), (["bots"], 2, "invalid choice: 'bots'")):
        result = subprocess.run([sys.executable, "-c", probe, *argv], env=grobot_env.environ(), capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == code, result.stderr
        assert not set(json.loads(result.stderr.splitlines()[-1])) & set(COMMAND_MODULES), (argv, result.stderr)
        assert said in (result.stdout if code == 0 else result.stderr), (argv, result.stdout, result.stderr)
