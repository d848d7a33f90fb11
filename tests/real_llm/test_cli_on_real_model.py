"""The command line on the embedded demo model, with no bot worker running: the command runs the model itself."""

from __future__ import annotations

import subprocess
import sys

from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import LLMCall
from grobot.core.services import bots, council


def test_council_ask_runs_the_embedded_model_itself_when_no_worker_serves_it(grobot_env) -> None:
    """The whole command (its start, the model's load, five advisors and the synthesis) within a minute, also on a
    busy machine: the council keeps to the demo model's pace."""
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Sage").id
        council.set_council(bot_id, session=session, enabled=True)
    out = subprocess.run([sys.executable, "-m", "grobot", "council", "ask", "Sage", "Should we ship on Friday?"],
                         env=grobot_env.environ(), capture_output=True, text=True, timeout=60)
    assert "[embedded] loading" in out.stderr, out.stderr
    assert "no bot worker serves this model" not in out.stdout + out.stderr
    assert "**Analyst**" in out.stdout and "**Devil's Advocate**" in out.stdout, out.stdout
    with session_scope(readonly=True) as session:
        calls = session.exec(select(LLMCall).where(LLMCall.bot_id == bot_id)).all()
    advisors = [c for c in calls if c.agent_role == "council_advisor"]
    assert len(advisors) == 5 and all(c.provider == "llamacpp" and not c.error for c in advisors), \
        [(c.provider, c.error) for c in advisors]
    with session_scope(readonly=True) as session:
        [row] = council.list_deliberations(bot_id, session=session)
    # A synthesis, or none marked failed (exit code 2, the reason on stderr): never an empty one shown as made.
    assert (row.status, out.returncode) in (("done", 0), ("failed", 2)), (row.status, out.returncode, out.stderr)
