"""A fresh install with no LLM configured answers with the embedded demo model, in Test Chat and on Discord."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grobot.core.db import session_scope
from grobot.core.llm import embedded
from grobot.core.services import embedded_models, tester_chat
from tests.helpers import wait_for
from tests.worker.harness import ROOT, fleet

pytestmark = pytest.mark.real_llm  # and e2e, by its name


def _status(conversation_id: int, message_id: int) -> str | None:
    with session_scope(readonly=True) as session:
        for m in tester_chat.messages(conversation_id, session=session):
            if m.id == message_id:
                return m.status
    return None


def _servers() -> list[embedded.ServerInfo]:
    with session_scope(readonly=True) as session:
        return embedded_models.advertised(session=session)


def test_no_llm_configured_answers_with_the_demo_model(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path, configure_llm=False) as world:
        env = world.environ()
        world.start_supervisor()
        world.wait_started()
        # The supervisor starts the demo model's server and advertises it.
        servers = wait_for(lambda: [s for s in _servers() if s.status == "running"], 60,
                           message=lambda: f"the demo model running; log:\n{world._tail()}")
        assert [s.model for s in servers] == [embedded.DEMO_MODEL] and servers[0].url.startswith("http://127.0.0.1:")
        health = subprocess.run([sys.executable, "-m", "grobot", "health"], env=env, cwd=ROOT, capture_output=True,
                                text=True, timeout=60)
        assert "embedded llama.cpp server runs SmolLM2-135M-Instruct (tiny demo model)" in health.stdout

        bot_id = world.add_bot("demo")
        with session_scope() as session:
            conv = tester_chat.create_session(bot_id, session=session)
            mid = tester_chat.submit(conv.id, "Hello! Who are you?", session=session).id
        wait_for(lambda: _status(conv.id, mid) in ("done", "error"), 60, message=world._tail())
        assert _status(conv.id, mid) == "done"
        with session_scope(readonly=True) as session:
            answers = [m.content for m in tester_chat.messages(conv.id, session=session) if m.role == "assistant"]
        assert len(answers) == 1 and answers[0].strip()

        # A bot process gets the embedded server's address from its supervisor and answers on Discord.
        world.wait_online(bot_id, timeout=60)
        asked = world.mention(bot_id, "hello there")
        reply = world.wait_reply(asked, timeout=60)
        assert reply["content"].strip()
        assert not world.llm.chat_requests()  # nothing went to the fake LLM: no LLM was configured
