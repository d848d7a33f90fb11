"""Helpers of the browser suites (``tests/ui``, ``tests/security``): bots, a Test Chat message
claimed and answered by the real chain job as a supervisor does, and a real MCP server
(``tests.fakes.mcp_servers``) set up as an admin does."""

from __future__ import annotations

import asyncio
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from grobot.core.db import session_scope
from grobot.core.models import Conversation, Message, utcnow
from grobot.core.services import bots, tester_chat
from grobot.core.store.local import local_deps

logger = logging.getLogger(__name__)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def fresh_heartbeat() -> datetime:
    """A live bot's heartbeat, dated a few minutes ahead: the web app of the browser suites counts a bot
    silent for 13 s as stopped (its heartbeat is 1 s: ``tests/browser_fixtures.py``), and a step of a
    test on a loaded machine can take longer than that."""
    return utcnow() + timedelta(minutes=5)


def add_bot(name: str, **fields: object) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name, **fields).id or 0


def claim(supervisor_id: str | None = None) -> int:
    """Claim the one pending Test Chat message as a supervisor does; returns its id."""
    with session_scope() as session:
        claimed = tester_chat.claim_pending(supervisor_id or unique("sup"), session=session)
        assert len(claimed) == 1, claimed
        return claimed[0].id or 0


def run_real_job(run_id: int, bot_id: int, author: str = "ui-admin") -> str | None:
    """What a supervisor does with a claimed message: the real Test Chat job, then done or error."""
    from bot_worker.tester_chat_job import run_tester_chat_job
    from grobot.core.answering import FloodGate

    with session_scope(readonly=True) as session:
        message = session.get(Message, run_id)
        key = session.get(Conversation, message.conversation_id).key
        content = message.content

    async def job() -> str | None:
        deps = local_deps()
        try:
            return await run_tester_chat_job(run_id, bot_id, key, content, "tester", author, deps=deps, gate=FloodGate())
        finally:
            await deps.aclose()

    with ThreadPoolExecutor(max_workers=1) as pool:  # Playwright's sync API holds this thread's loop
        error = pool.submit(lambda: asyncio.run(job())).result(timeout=90)
    with session_scope() as session:
        if error:
            tester_chat.fail(run_id, error, session=session)
        else:
            tester_chat.finish(run_id, session=session)
    return error


def stdio_server(bot_id: int, kind: str, prefix: str, *enable: str) -> str:
    """A real stdio MCP server (``tests.fakes.mcp_servers`` ``kind``) set up as an admin does:
    ``mcp add``, ``mcp test`` (which stores its tool list), then ``bot mcp BOT enable SERVER *enable``.
    Returns the server's name."""
    from grobot.cli.main import main
    from tests.fakes.mcp_servers import stdio_config

    name = unique(prefix)
    cfg = stdio_config(name, kind)
    commands = [
        ["mcp", "add", name, "--command", cfg.command, "--cwd", cfg.cwd, *[f"--arg={a}" for a in cfg.args],
         "--env", f"PYTHONPATH={cfg.env['PYTHONPATH']}"],
        ["mcp", "test", name],
        ["bot", "mcp", str(bot_id), "enable", name, *enable],
    ]
    with ThreadPoolExecutor(max_workers=1) as pool:  # `mcp test` runs an event loop: not in Playwright's thread
        for argv in commands:
            assert pool.submit(main, argv).result(timeout=60) == 0, argv
    return name


def echo_server(bot_id: int) -> str:
    """A real stdio MCP server with an ``echo`` tool, enabled for the bot; returns the tool's name."""
    return f"{stdio_server(bot_id, 'ok', 'echo')}__echo"


def start_worker(env, log_path, **extra: str):
    """A real bot worker (``python -m bot_worker``) on the web app's database; Discord points nowhere
    (no bot has to connect) unless ``extra`` says where (a fake Discord's ``env()``)."""
    import subprocess
    import sys

    from tests.worker.harness import FAST_ENV, ROOT

    environ = env.environ(**{**FAST_ENV, "DISCORD_API_BASE": "http://127.0.0.1:9/api/v10",
                             "DISCORD_GATEWAY_URL": "ws://127.0.0.1:9", **extra})
    with log_path.open("ab") as log:
        return subprocess.Popen([sys.executable, "-m", "bot_worker"], env=environ, cwd=ROOT, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)


def stop_worker(worker) -> None:
    import signal
    import subprocess

    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(5)
