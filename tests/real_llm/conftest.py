"""A real model for the tests: the embedded demo model (SmolLM2-135M-Instruct) in llama.cpp's server.

One server for the whole session (its runner process, as the bot worker starts it); each test
that needs the settings to resolve to it plants a directory that answers with its URL.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from grobot.core.llm import embedded
from grobot.core.llm.embedded import ServerInfo


@pytest.fixture(autouse=True)
def loaded_machine_memory_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Tool Router's embedding of the message may take up to 5 s (0.3 s by default, which a loaded
    2-core machine overran: the router then went by words alone and a clock question called no tool).
    The budget itself has its test in tests/core/test_memory_chain.py."""
    from grobot.core.settings import get_settings

    monkeypatch.setenv("GROBOT_MEMORY_BUDGET_SECONDS", "5")
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def demo_server() -> Iterator[str]:
    """The URL of a llama.cpp server running the demo model (with GroBot's tool template)."""
    if not embedded.demo_available():
        pytest.fail("the demo model or xllamacpp is not installed: make test installs both")
    args = [sys.executable, "-m", "grobot.core.llm.embedded_runner", "--model-file", str(embedded.demo_model_file()),
            "--ctx", "4096", "--parallel", "2"]
    if embedded.TOOLS_TEMPLATE.is_file():
        args += ["--template", str(embedded.TOOLS_TEMPLATE)]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        payload = json.loads(line or "{}")
        assert payload.get("url"), f"the demo model did not start: {payload or proc.poll()}"
        yield payload["url"]
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.terminate()
        proc.wait(10)


class StaticDirectory:
    """Answers every embedded model with one running server (the supervisor's role in these tests)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.asked: list[str] = []

    def request(self, model: str, context_window: int) -> ServerInfo:
        self.asked.append(model)
        return ServerInfo(model=model, status="running", url=self.url, supports_tools=True)


@pytest.fixture
def demo_directory(demo_server: str) -> Iterator[StaticDirectory]:
    directory = StaticDirectory(demo_server)
    embedded.set_local_directory(directory)
    try:
        yield directory
    finally:
        embedded.set_local_directory(None)


@pytest.fixture
def short_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test that looks at the run's steps, not at its answer:
    the demo model writes 24 tokens of it (the answer's cap, as the Synthesizer reads it)."""
    from grobot.core.agents import prompts

    monkeypatch.setattr(prompts, "DEMO_ANSWER_MAX_TOKENS", 24)
