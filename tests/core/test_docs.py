"""The README stays a ten-minute read and the references in docs/ keep up with the code: every
environment variable the code reads and every command of the CLI is documented."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _env_names(text: str) -> set[str]:
    """The variables a module reads: ``env.get("X")``, ``_number(env, "X", ...)``, ``"${X:-...}"`` ..."""
    names = set(re.findall(r"""env(?:\.get\(|, )\s*["']((?:GROBOT|DATABASE|OLLAMA|CHROMA|DISCORD)[A-Z_]*)["']""", text))
    names |= set(re.findall(r"""positive\(["'](GROBOT_[A-Z_]+)["']""", text))
    names |= set(re.findall(r"\$\{(GROBOT_[A-Z_]+)", text))
    return names


def test_the_readme_is_a_ten_minute_read_that_points_into_docs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for heading in ("## The two commands", "## How it runs", "## Where things live", "## Glossary", "## Features"):
        assert heading in readme
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)", readme))
    written = {p.name for p in DOCS.glob("*.md")}
    assert written - {"DESIGN.md"} <= linked, f"docs not linked from the README: {written - linked}"
    assert (linked - written) <= {"DESIGN.md"}, f"README links to missing docs: {linked - written}"


def test_every_environment_variable_the_code_reads_is_in_the_configuration_reference():
    read = _env_names((ROOT / "grobot/core/settings.py").read_text()) | _env_names((ROOT / "scripts/run.sh").read_text())
    assert {"DATABASE_URL", "GROBOT_HEARTBEAT_SECONDS", "GROBOT_HEALTHY_RESET", "GROBOT_WEB_PORT"} <= read
    documented = (DOCS / "configuration.md").read_text()
    missing = sorted(name for name in read if f"`{name}`" not in documented)
    assert not missing, f"not in docs/configuration.md: {missing}"


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*path, name)) or [(*path, name)]
    return found


def test_every_command_of_the_cli_is_in_the_cli_reference():
    from grobot.cli.main import build_parser

    commands = _commands(build_parser())
    assert ("mcp", "enable") in commands and ("bot", "mcp", "list") in commands
    reference = (DOCS / "cli.md").read_text()
    missing = []
    for command in commands:
        group, action = " ".join(command[:-1]), command[-1]
        if group == "bot mcp":
            group = "bot mcp BOT"
        # as written: "mcp enable NAME", or grouped: "mcp enable\|disable\|delete NAME", "mcp list\|show NAME"
        pattern = rf"`{re.escape(group)} (?:BOT )?(?:[\w-]+\\\|)*{re.escape(action)}[\\| `\[]" if group else rf"`{re.escape(action)}[ `\[]"
        if not re.search(pattern, reference):
            missing.append(" ".join(command))
    assert not missing, f"not in docs/cli.md: {missing}"


def test_every_field_of_bot_set_and_every_global_setting_is_documented():
    from grobot.core.services import app_settings, bots

    reference = (DOCS / "cli.md").read_text()
    assert not [f for f in bots.EDITABLE_FIELDS if f"`{f}`" not in reference], "a bot set field is not in docs/cli.md"
    configuration = (DOCS / "configuration.md").read_text()
    keys = list(app_settings.DEFAULTS)
    assert "web_search_url" in keys
    assert not [k for k in keys if f"`{k}`" not in configuration], "a global setting is not in docs/configuration.md"
