"""One Settings object reads the environment: its defaults, its errors, and no other reader."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grobot.core.settings import Settings, WorkerSettings

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_MODULE = ROOT / "grobot" / "core" / "settings.py"
# Writes for child processes, not reads: the supervisor sets what its bots get, a forked bot
# takes what its supervisor set for it, an exec'd bot inherits the environment plus its own.
ALLOWED = {
    ("bot_worker/spawn.py", "update"),  # Spawner.prepare: what every bot gets
    ("bot_worker/spawn.py", "**"),  # a bot started by exec: the environment and its own variables
    ("bot_worker/bot_process.py", "update"),  # forked_main: the variables of this bot
    ("grobot/core/documents/isolated.py", "**"),  # the document converter's child: the environment and its path
}


def _environment_uses(path: Path) -> list[tuple[int, str]]:
    """``(line, how)`` of each use of ``os.environ`` / ``os.getenv`` / ``environ`` imported from os."""
    tree = ast.parse(path.read_text(), filename=str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    uses: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os" and any(
                alias.name in ("environ", "getenv", "environb", "getenvb") for alias in node.names):
            uses.append((node.lineno, "from os import"))
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"
                and node.attr in ("environ", "getenv", "environb", "getenvb")):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.attr == "update" and isinstance(parents.get(parent), ast.Call):
            uses.append((node.lineno, "update"))
        elif isinstance(parent, ast.Dict) and None in parent.keys and node in parent.values \
                and parent.keys[parent.values.index(node)] is None:
            uses.append((node.lineno, "**"))
        else:
            uses.append((node.lineno, "read"))
    return sorted(uses)


def test_no_module_but_settings_reads_the_environment():
    found = []
    for package in ("grobot", "bot_worker"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == SETTINGS_MODULE:
                continue
            relative = path.relative_to(ROOT).as_posix()
            found += [f"{relative}:{line} ({how})" for line, how in _environment_uses(path)
                      if (relative, how) not in ALLOWED]
    assert not found, "read the environment through grobot.core.settings.get_settings():\n" + "\n".join(found)


def test_the_scan_sees_reads_and_writes(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom os import getenv\na = os.environ.get('X')\nb = os.getenv('Y')\n"
                      "os.environ.update({})\nc = {**os.environ}\nd = os.environ['Z']\n")
    assert _environment_uses(sample) == [(2, "from os import"), (3, "read"), (4, "read"), (5, "update"), (6, "**"),
                                         (7, "read")]


def test_defaults():
    settings = Settings.from_env({})
    assert settings.poll_seconds == 2 and settings.llm_timeout_seconds == 120 and settings.ollama_api_key is None
    assert settings.mcp_node_modules == () and not settings.debug
    assert settings.worker == WorkerSettings()
    assert (settings.worker.heartbeat_seconds, settings.worker.lease_seconds, settings.worker.spawn) == (5, 15, "fork")
    assert settings.worker.supervisor_id is None and settings.worker.memory_preload


def test_worker_values_from_the_environment():
    worker = Settings.from_env({
        "GROBOT_HEARTBEAT_SECONDS": "1", "GROBOT_SPAWN": "EXEC", "GROBOT_GUILD_READY_TIMEOUT": "0",
        "GROBOT_SUPERVISOR_ID": "host:1:abc", "GROBOT_SUPERVISOR_URL": " http://127.0.0.1:5 ",
        "GROBOT_MEMORY_PRELOAD": "0", "GROBOT_TRACE_TIMINGS": "1", "GROBOT_LEASE_SECONDS": "",  # blank: the default
    }).worker
    assert (worker.heartbeat_seconds, worker.lease_seconds, worker.spawn, worker.start_interval) == (1, 3, "exec", 0.25)
    assert worker.guild_ready_timeout == 0 and worker.supervisor_id == "host:1:abc"
    assert worker.supervisor_url == "http://127.0.0.1:5" and not worker.memory_preload and worker.trace_timings


@pytest.mark.parametrize(("env", "error"), [
    ({"GROBOT_HEARTBEAT_SECONDS": "soon"}, "GROBOT_HEARTBEAT_SECONDS must be a number (got 'soon')"),
    ({"GROBOT_HEARTBEAT_SECONDS": "0"}, "GROBOT_HEARTBEAT_SECONDS must be positive"),
    ({"GROBOT_STOP_GRACE_SECONDS": "-1"}, "GROBOT_STOP_GRACE_SECONDS must be positive"),
    ({"GROBOT_POLL_SECONDS": "x"}, "GROBOT_POLL_SECONDS must be a number (got 'x')"),
    ({"GROBOT_GUILD_READY_TIMEOUT": "-1"}, "GROBOT_GUILD_READY_TIMEOUT must be at least 0"),
    ({"GROBOT_LLM_TIMEOUT_SECONDS": "long"}, "GROBOT_LLM_TIMEOUT_SECONDS must be a number (got 'long')"),
    ({"GROBOT_SPAWN": "thread"}, "GROBOT_SPAWN must be 'fork' or 'exec'"),
])
def test_invalid_values_name_the_variable(env, error):
    with pytest.raises(ValueError) as info:
        Settings.from_env(env)
    assert str(info.value) == error
