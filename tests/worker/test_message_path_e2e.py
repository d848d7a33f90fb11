"""One plain Discord message asks the supervisor once before the model's answer call and once after it
(issue 31's target), as ``bench/hops.py`` follows it inside a real bot process; the bench itself stays runnable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from grobot.core.agents.worth_keeping import worth_a_look

ROOT = Path(__file__).resolve().parents[2]


def test_a_plain_message_asks_the_supervisor_once_before_the_answer_call_and_once_after(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "hops.py"), "--messages", "1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=240, env={**_env(), "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    line = next((line for line in done.stdout.splitlines() if line.startswith("message 1:")), "")
    assert "module hops along its path" in line, done.stdout[-2000:]
    assert "1 before the model's answer call ['store/prepare'], 1 after it ['store/write_run']" in line, line
    # The answer's call, and the Archivist's: the bench's message is a statement its rule looks at.
    assert worth_a_look("hops-probe question number 0", with_memory=True)
    assert "LLM calls: 2 (1 structured)" in line, line


def _env() -> dict[str, str]:
    """This process's environment without GroBot's settings: the bench sets up its own fleet."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("GROBOT_", "DATABASE_URL", "DISCORD_"))}
