"""End-to-end harness: a real supervisor subprocess with real bot processes, the fake Discord and a fake LLM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlmodel import col, select

from grobot.core.db import session_scope
from grobot.core.models import AgentEvent, Bot, BotStatus, LogEntry, Message
from grobot.core.services import bots
from tests.fakes.discord import FakeDiscord
from tests.fakes.llm import FakeLLM, use_fake_llm
from tests.helpers import pid_alive, wait_for

ROOT = Path(__file__).resolve().parents[2]

FAST_ENV = {
    "GROBOT_POLL_SECONDS": "0.5",
    "GROBOT_HEARTBEAT_SECONDS": "1",
    "GROBOT_GUILD_READY_TIMEOUT": "0.1",
    "GROBOT_STOP_GRACE_SECONDS": "2",
    "GROBOT_STREAM_EDIT_SECONDS": "0.2",
    "GROBOT_START_INTERVAL": "0.05",
    "GROBOT_TEST_CHAT_POLL_SECONDS": "0.2",
    "GROBOT_LOG_LEVEL": "INFO",
    "GROBOT_HOUSEKEEPING_SECONDS": "2",
    "GROBOT_MEMORY_PRELOAD": "0",  # the memory tests turn it on
}


def asks(text: str) -> Any:
    """Match the answer request for ``text`` (not the JSON-schema calls of other chain steps)."""
    return lambda body: text in str(body.get("messages", [])[-1:]) and not body.get("format") \
        and not body.get("response_format")


def bot_log(bot_id: int) -> list[tuple[str, str]]:
    """The bot's log as its Logs tab shows it: ``(level, message)``, oldest first."""
    with session_scope(readonly=True) as session:
        rows = session.exec(select(LogEntry.level, LogEntry.message).where(LogEntry.bot_id == bot_id)
                            .order_by(col(LogEntry.id))).all()
    return [(level, message) for level, message in rows]


def terminal_events(content: str) -> list[dict[str, Any]]:
    """The final events of the run that answered the stored user message ``content``."""
    with session_scope(readonly=True) as session:
        run_id = session.exec(select(Message.id).where(Message.role == "user", col(Message.content).contains(content))
                              .order_by(col(Message.id).desc())).first()
        if run_id is None:
            return []
        rows = session.exec(select(AgentEvent).where(AgentEvent.run_id == run_id,
                                                     col(AgentEvent.kind).in_(["done", "error"]))).all()
        return [dict(r.data or {}, kind=r.kind) for r in rows]


class Fleet:
    """One test's world: fake Discord, fake LLM, database, supervisors."""

    def __init__(self, env: Any, tmp_path: Path, discord: FakeDiscord, llm: FakeLLM, *, configure_llm: bool = True) -> None:
        self.env = env
        self.configure_llm = configure_llm
        self.tmp_path = tmp_path
        self.discord = discord
        self.llm = llm
        self.supervisors: list[subprocess.Popen[bytes]] = []
        self.discord_ids: dict[int, int] = {}  # bot id -> Discord user id
        if configure_llm:
            use_fake_llm(llm)

    def environ(self, **extra: str) -> dict[str, str]:
        """The supervisor's environment (without a configured LLM: no OLLAMA_HOST either, as on a fresh install)."""
        env = self.env.environ(**{**self.discord.env(), **FAST_ENV, "OLLAMA_HOST": self.llm.url, **extra})
        if not self.configure_llm:
            env.pop("OLLAMA_HOST", None)
        return env

    def start_supervisor(self, **extra: str) -> subprocess.Popen[bytes]:
        log = open(self.tmp_path / f"supervisor{len(self.supervisors)}.log", "wb")
        proc = subprocess.Popen([sys.executable, "-m", "bot_worker"], env=self.environ(**extra), cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT)
        self.supervisors.append(proc)
        return proc

    def log(self, index: int = 0) -> str:
        return (self.tmp_path / f"supervisor{index}.log").read_text(errors="replace")

    def add_bot(self, name: str, **fields: Any) -> int:
        token, user_id = self.discord.new_bot_token(name)
        with session_scope() as session:
            bot = bots.create_bot(session=session, name=name, token=token, **fields)
            self.discord_ids[bot.id] = user_id
            return bot.id

    def status(self, bot_id: int) -> BotStatus | None:
        with session_scope(readonly=True) as session:
            return session.get(BotStatus, bot_id)

    def wait_started(self, timeout: float = 120.0) -> None:
        """Every supervisor still running has logged its start: its imports take many seconds on a loaded
        2-core machine, and what a test waits for from a supervisor has its deadline from then on."""
        def started() -> bool:
            return all(proc.poll() is not None or re.search(r"Supervisor \S+ started", self.log(index))
                       for index, proc in enumerate(self.supervisors))

        wait_for(started, timeout, message=lambda: f"the supervisors started; log:\n{self._tail()}")

    def wait_state(self, bot_id: int, state: str, timeout: float = 30.0) -> BotStatus:
        """Bot ``bot_id`` in ``state`` within ``timeout`` seconds of its supervisors' start."""
        self.wait_started()

        def check() -> BotStatus | None:
            status = self.status(bot_id)
            return status if status is not None and status.state == state else None

        return wait_for(check, timeout, message=lambda: f"bot {bot_id} {state}; log:\n{self._tail()}")

    def wait_online(self, bot_id: int, timeout: float = 45.0) -> BotStatus:
        """Online in the database and connected to the fake Discord (a first start includes the
        fork server's imports: seconds on a loaded 2-core machine)."""
        status = self.wait_state(bot_id, "online", timeout)
        wait_for(lambda: self.discord.session_of(self.discord_ids[bot_id]), timeout)
        return status

    def mention(self, bot_id: int, text: str, channel_id: int | None = None, *,
                author: dict[str, Any] | None = None) -> dict[str, Any]:
        """``author`` (default: alice) mentions the bot in a message."""
        uid = self.discord_ids[bot_id]
        return self.discord.send_message(channel_id or self.discord.channel_id, f"<@{uid}> {text}", mentions=[uid],
                                         author=author)

    def wait_reply(self, message: dict[str, Any], *, containing: str = "", timeout: float = 30.0) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            for reply in self.discord.replies_to(message["id"]):
                if containing in reply["content"]:
                    return reply
            return None

        return wait_for(check, timeout, message=lambda: f"reply containing {containing!r}; log:\n{self._tail()}")

    def _tail(self) -> str:
        """The last lines of each supervisor's log (a failure with two shows both sides)."""
        parts = []
        for index in range(len(self.supervisors)):
            try:
                lines = self.log(index).splitlines()[-30:]
            except OSError:
                continue
            parts.append((f"--- supervisor {index}:\n" if len(self.supervisors) > 1 else "") + "\n".join(lines))
        return "\n".join(parts)

    def begin_test(self) -> None:
        """A clean slate for the next test on this fleet: nothing scripted, recorded or answered yet."""
        self.llm.reset()
        self.llm.hangups = 0
        self.discord.forget_calls()

    def remove_bots(self) -> None:
        """Delete the bots added so far and wait until their processes have ended and left Discord."""
        pids = {bot_id: getattr(self.status(bot_id), "pid", None) for bot_id in self.discord_ids}
        with session_scope() as session:
            for bot_id in self.discord_ids:
                bot = session.get(Bot, bot_id)
                if bot is not None:
                    bots.delete_bot(bot, session=session)
        for bot_id, user_id in self.discord_ids.items():
            wait_for(lambda user_id=user_id: self.discord.session_of(user_id) is None, 20,
                     message=lambda: f"bot {bot_id} off Discord; log:\n{self._tail()}")
            if pids[bot_id]:
                wait_for(lambda pid=pids[bot_id]: not pid_alive(pid), 20, message=f"bot {bot_id} process ended")
        self.discord_ids.clear()

    def stop(self) -> None:
        for proc in self.supervisors:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.supervisors:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@contextmanager
def fleet(env: Any, tmp_path: Path, *, configure_llm: bool = True) -> Iterator[Fleet]:
    """``configure_llm``: point every bot at the fake LLM (else nothing is configured, as on a fresh install)."""
    discord = FakeDiscord().start()
    llm = FakeLLM().start()
    world = Fleet(env, tmp_path, discord, llm, configure_llm=configure_llm)
    try:
        yield world
    finally:
        world.stop()
        discord.stop()
        llm.stop()
