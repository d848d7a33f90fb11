"""What the Test Chat tab reads and writes: the conversation as turns, a run's steps and LLM calls,
sending, stopping and forgetting (blocking: call them with ``asyncio.to_thread``), and where a run
can be followed live (:mod:`grobot.core.tester_chat_link`).

Every function checks the session and the user's access to the bot (:func:`run_for_bot`); those that
name a run also check that it is a Test Chat message to that bot, a tester's own (:func:`run_for_run`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import func
from sqlmodel import Session, col, select

from grobot.core import tester_chat_link
from grobot.core.errors import NotFoundError
from grobot.core.models import AgentEvent, AppUser, Bot, LLMCall, Message, Role
from grobot.core.services import conversations, tester_chat
from grobot.state.bot_page import run_for_bot

logger = logging.getLogger(__name__)

T = TypeVar("T")

HISTORY_LIMIT = 100  # messages shown
CALLS_LIMIT = 2000  # LLM-call lines read for the turns shown
DETAIL_CHARS = 2000
TITLE_CHARS = 160
OPEN_STATUSES = ("pending", "running")
STOPPED_BY_YOU = "stopped by the tester"


@dataclass
class ChatStep:
    """One step of the chain in a run: a thought, a tool call or its result."""

    kind: str
    title: str
    detail: str = ""
    failed: bool = False


@dataclass
class ChatCall:
    """The LLM calls of one agent (role) on one model in a run: tokens and time."""

    role: str
    model: str
    calls: int
    tokens_in: int
    tokens_out: int
    seconds: str


@dataclass
class ChatTurn:
    """A user message and the bot's answer to it."""

    id: int
    question: str
    author: str
    status: str  # pending | running | done | error | cancelled ("" for messages not from the Test Chat)
    error: str = ""
    answer: str = ""
    steps: list[ChatStep] = field(default_factory=list)
    calls: list[ChatCall] = field(default_factory=list)


def _short(value: Any, limit: int = DETAIL_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def step_of(kind: str, data: dict[str, Any]) -> ChatStep | None:
    """How one event of a run reads in the step list (None: not worth a line)."""
    if kind == "thinking":
        step = str(data.get("step") or "thinking").replace("_", " ")
        text = str(data.get("text") or "")
        title = f"{step[:1].upper()}{step[1:]}: {text}" if text else step[:1].upper() + step[1:]
        failed = bool(data.get("failed"))  # e.g. a council advisor that could not answer
        if len(title) <= TITLE_CHARS:
            return ChatStep(kind, title, failed=failed)
        return ChatStep(kind, title[:TITLE_CHARS] + "…", _short(text), failed)
    if kind == "tool_call":
        return ChatStep(kind, f"Calls {data.get('name', 'a tool')}", _short(data.get("arguments") or {}))
    if kind == "tool_result":
        failed = bool(data.get("is_error"))
        took = data.get("duration_ms")
        timing = f" in {float(took) / 1000:.1f} s" if isinstance(took, (int, float)) else ""
        verb = "was abandoned" if data.get("abandoned") else "failed" if failed else "answered"
        return ChatStep(kind, f"{data.get('name', 'The tool')} {verb}{timing}", _short(data.get("content") or ""), failed)
    if kind == "progress" and data.get("acknowledgement"):
        return ChatStep(kind, "Told the user", _short(data["acknowledgement"]))
    if kind == "progress" and data.get("status") == "retrying":
        return ChatStep(kind, f"Retrying {data.get('tool', 'the tool')} (attempt {data.get('attempt', '?')})",
                        _short(data.get("error") or ""))
    return None


def build_turns(messages: list[Message], events: list[AgentEvent],
                calls: dict[int, list[ChatCall]] | None = None) -> list[ChatTurn]:
    """The conversation as turns: each user message with the final answer, the steps of its run
    and its LLM calls."""
    steps: dict[int, list[ChatStep]] = {}
    for event in events:
        step = step_of(event.kind, event.data or {})
        if step is not None:
            steps.setdefault(event.run_id, []).append(step)
    calls = calls or {}
    turns: list[ChatTurn] = []
    for message in messages:
        if message.role == "user":
            turns.append(ChatTurn(id=message.id or 0, question=message.content, author=message.author_name or "tester",
                                  status=message.status or "", error=message.error or "",
                                  steps=steps.get(message.id or 0, []), calls=calls.get(message.id or 0, [])))
        elif message.role == "assistant" and message.content and turns:
            turns[-1].answer = message.content  # the last words of the run are its answer
    return turns


def run_calls(run_ids: list[int], *, session: Session) -> dict[int, list[ChatCall]]:
    """Per run, its LLM calls summed per agent and model (in the order the agents first called)."""
    if not run_ids:
        return {}
    stmt = (select(LLMCall.run_id, LLMCall.agent_role, LLMCall.model, func.count(), func.sum(LLMCall.tokens_in),
                   func.sum(LLMCall.tokens_out), func.sum(LLMCall.latency_ms), func.min(LLMCall.id))
            .where(col(LLMCall.run_id).in_(run_ids))
            .group_by(LLMCall.run_id, LLMCall.agent_role, LLMCall.model)
            .order_by(LLMCall.run_id, func.min(LLMCall.id)).limit(CALLS_LIMIT))
    out: dict[int, list[ChatCall]] = {}
    for run_id, role, model, count, tokens_in, tokens_out, latency, _first in session.exec(stmt).all():
        out.setdefault(int(run_id), []).append(ChatCall(
            role=str(role).replace("_", " ").capitalize(), model=str(model), calls=int(count),
            tokens_in=int(tokens_in or 0), tokens_out=int(tokens_out or 0), seconds=f"{float(latency or 0) / 1000:.2f} s"))
    return out


@dataclass
class ChatView:
    """What the tab shows when it (re)loads."""

    turns: list[ChatTurn]
    worker_running: bool


def load_chat(token: str, bot_id: int) -> ChatView:
    """The signed-in user's conversation with the bot."""

    def work(session: Session, user: AppUser, bot: Bot) -> ChatView:
        conv = tester_chat.latest_session(bot.id or 0, user.id or 0, session=session)
        messages = tester_chat.recent_messages(conv.id or 0, session=session, limit=HISTORY_LIMIT) if conv else []
        run_ids = [m.id or 0 for m in messages if m.role == "user"]
        events = tester_chat.run_steps(run_ids, session=session)
        return ChatView(build_turns(messages, events, run_calls(run_ids, session=session)),
                        tester_chat.worker_running(session=session))

    return run_for_bot(token, bot_id, work, admin=False)


def send_message(token: str, bot_id: int, content: str) -> int:
    """Store the user's message as pending in their conversation with the bot; returns its id."""

    def work(session: Session, user: AppUser, bot: Bot) -> int:
        conv = tester_chat.open_session(bot.id or 0, user.id or 0, session=session)
        # Each web user is their own "user" to the bot: notes and memories are not shared between testers.
        message = tester_chat.submit(conv.id or 0, content, session=session, author_name=user.username,
                                   author_id=f"app-user:{user.id}")
        logger.info("User %s sent a Test Chat message to bot %s", user.username, bot.id)
        return message.id or 0

    return run_for_bot(token, bot_id, work, admin=False, readonly=False)


def retry_message(token: str, bot_id: int, run_id: int) -> int:
    """Send the user's failed or stopped last message to the bot again, in place (its failed answer goes);
    returns its id."""

    def work(session: Session, user: AppUser, bot: Bot) -> int:
        conv = tester_chat.latest_session(bot.id or 0, user.id or 0, session=session)
        asked = session.get(Message, run_id)
        if conv is None or asked is None or asked.conversation_id != conv.id:  # only the user's own message
            raise NotFoundError("this message is not in your conversation with the bot any more")
        tester_chat.retry(run_id, session=session)
        logger.info("User %s sent Test Chat message %s to bot %s again", user.username, run_id, bot.id)
        return run_id

    return run_for_bot(token, bot_id, work, admin=False, readonly=False)


def forget_chat(token: str, bot_id: int) -> int:
    """Forget the user's conversation with the bot; returns how many messages were removed."""

    def work(session: Session, user: AppUser, bot: Bot) -> int:
        conv = tester_chat.latest_session(bot.id or 0, user.id or 0, session=session)
        if conv is None:
            return 0
        return conversations.reset_conversation(session=session, bot_id=bot.id or 0, key=conv.key)

    return run_for_bot(token, bot_id, work, admin=False, readonly=False)


@dataclass
class RunUpdate:
    """What changed in a followed run since the last read of the database."""

    status: str
    error: str
    events: list[tuple[int, str, dict[str, Any]]]
    worker_running: bool


def run_for_run(token: str, bot_id: int, run_id: int, work: Callable[[Session], T], *, readonly: bool = True) -> T:
    """``work(session)`` once the session may see bot ``bot_id`` and ``run_id`` is a Test Chat message
    to that bot (for a tester: their own); else ``NotFoundError``, as for a run that does not exist."""

    def checked(session: Session, user: AppUser, bot: Bot) -> T:
        owner = None if user.role == Role.ADMIN.value else user.id
        tester_chat.check_run(int(run_id), session=session, bot_id=bot.id or 0, app_user_id=owner)
        return work(session)

    return run_for_bot(token, bot_id, checked, admin=False, readonly=readonly)


def poll_run(token: str, bot_id: int, run_id: int, after_seq: int) -> RunUpdate:
    """The run's status and its stored events after ``after_seq``."""

    def work(session: Session) -> RunUpdate:
        status, error = tester_chat.run_status(run_id, session=session)
        events = [(e.seq, e.kind, dict(e.data or {})) for e in conversations.run_events(session=session, run_id=run_id,
                                                                                      after_seq=after_seq)]
        running = tester_chat.worker_running(session=session) if status == "pending" else True
        return RunUpdate(status, error, events, running)

    return run_for_run(token, bot_id, run_id, work)


@dataclass
class RunPlace:
    """Where a run is: its status, the runner that holds it (if it advertises one) and every live runner."""

    status: str
    holder: tester_chat_link.Runner | None
    runners: list[tester_chat_link.Runner]


def locate_run(token: str, bot_id: int, run_id: int) -> RunPlace:
    def work(session: Session) -> RunPlace:
        status, claimed_by = tester_chat.run_holder(run_id, session=session)
        runners = tester_chat_link.live_runners(session=session) if status in OPEN_STATUSES else []
        holder = next((r for r in runners if claimed_by and r.supervisor_id == claimed_by), None)
        return RunPlace(status, holder, runners)

    return run_for_run(token, bot_id, run_id, work)


def end_if_abandoned(token: str, bot_id: int, run_id: int) -> bool:
    """End the run when the worker that was answering it has stopped (else it stays "running" until a
    worker starts again); True when it did."""
    return run_for_run(token, bot_id, run_id, lambda session: tester_chat.end_abandoned_run(run_id, session=session),
                       readonly=False)


def cancel_pending(token: str, bot_id: int, run_id: int) -> bool:
    """Stop a message no worker has claimed yet; True when it was still waiting."""

    def work(session: Session) -> bool:
        return tester_chat.cancel(run_id, f"the run was cancelled ({STOPPED_BY_YOU})", session=session,
                                pending_only=True)

    return run_for_run(token, bot_id, run_id, work, readonly=False)
