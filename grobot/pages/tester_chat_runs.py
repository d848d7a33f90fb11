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

from grobot.core import plain_text, tester_chat_link
from grobot.core.agents.roles import role_name
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import AgentEvent, AppUser, Bot, LLMCall, Message, Role
from grobot.core.services import channel_personas, conversations, run_images, tester_chat
from grobot.core.services.llm_settings import effective_llm, effective_llms
from grobot.core.tools.images import checked_image
from grobot.core.wording import duration
from grobot.run_images import image_url
from grobot.state.bot_page import run_for_bot

logger = logging.getLogger(__name__)

T = TypeVar("T")

HISTORY_LIMIT = 100  # messages shown
CALLS_LIMIT = 2000  # LLM-call lines read for the turns shown
DETAIL_CHARS = 2000
TITLE_CHARS = 160
OPEN_STATUSES = ("pending", "running")


def stopped_by(username: str) -> str:
    """Why a run was stopped, as its Stop button gives it: who pressed it."""
    return f"stopped by {username}" if username else "stopped in the Test Chat"


@dataclass
class ChatStep:
    """One step of the chain in a run: a thought, a tool call or its result."""

    kind: str
    title: str
    detail: str = ""  # what folds out under the title: a tool's arguments or result; for admins, the technical detail
    failed: bool = False


@dataclass
class ChatCall:
    """The LLM calls of one agent (role) on one model in a run: tokens and time."""

    role: str
    model: str
    calls: int
    tokens_in: str
    tokens_out: str
    seconds: str


@dataclass
class ChatTurn:
    """A user message and the bot's answer to it."""

    id: int
    question: str
    author: str
    status: str  # pending | running | done | error | cancelled ("" for messages not from the Test Chat)
    error: str = ""  # in plain words
    error_detail: str = ""  # admins: the whole error, when the plain words leave part of it out
    answer: str = ""
    steps: list[ChatStep] = field(default_factory=list)
    calls: list[ChatCall] = field(default_factory=list)
    images: list[str] = field(default_factory=list)  # the tools' images (served by the app itself)
    sent: list[str] = field(default_factory=list)  # the images the user sent with the message


def _short(value: Any, limit: int = DETAIL_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def step_of(kind: str, data: dict[str, Any], *, admin: bool) -> ChatStep | None:
    """How one event of a run reads in the step list (None: not worth a line). Everyone reads plain
    words; the technical detail of a step (the Tool Router's scores, an error's own text) folds out
    for ``admin`` only."""
    if kind == "thinking":
        said = plain_text.without_technical(str(data.get("text") or ""), fallback="a step did not work as planned")
        name = role_name(str(data.get("step") or "thinking"))
        title = f"{name}: {said.text}" if said.text else name
        extra = [str(data["detail"])] if data.get("detail") else []
        detail = "\n".join([said.detail, *extra]).strip() if admin else ""
        failed = bool(data.get("failed"))  # e.g. a council advisor that could not answer
        if len(title) > TITLE_CHARS:
            detail = "\n".join([title, detail]).strip()
            title = title[:TITLE_CHARS] + "…"
        return ChatStep(kind, title, _short(detail) if detail else "", failed)
    if kind == "tool_call":
        return ChatStep(kind, f"Calls {data.get('name', 'a tool')}", _short(data.get("arguments") or {}))
    if kind == "tool_result":
        failed = bool(data.get("is_error"))
        took = data.get("duration_ms")
        timing = f" in {duration(float(took) / 1000)}" if isinstance(took, (int, float)) else ""
        verb = "was abandoned" if data.get("abandoned") else "failed" if failed else "answered"
        shown = "" if failed and not admin else _short(data.get("content") or "")  # an error's text: admins only
        return ChatStep(kind, f"{data.get('name', 'The tool')} {verb}{timing}", shown, failed)
    if kind == "progress" and data.get("acknowledgement"):
        return ChatStep(kind, "Told the user", _short(data["acknowledgement"]))
    if kind == "progress" and data.get("status") == "retrying":
        return ChatStep(kind, f"Retrying {data.get('tool', 'the tool')} (attempt {data.get('attempt', '?')})",
                        _short(data.get("error") or "") if admin else "")
    return None


def plain_error(error: str, *, admin: bool) -> tuple[str, str]:
    """A run's error as the Test Chat shows it: plain words, and for ``admin`` the whole error when the
    plain words leave part of it out."""
    said = plain_text.run_error(error)
    return said.text, said.detail if admin else ""


def build_turns(messages: list[Message], events: list[AgentEvent],
                calls: dict[int, list[ChatCall]] | None = None,
                images: dict[int, list[run_images.ImageRef]] | None = None, *, admin: bool = False) -> list[ChatTurn]:
    """The conversation as turns: each user message with the final answer, the steps of its run,
    its LLM calls and its images (the user's and the tools'); the technical detail of steps and
    errors for an ``admin`` only."""
    steps: dict[int, list[ChatStep]] = {}
    for event in events:
        step = step_of(event.kind, event.data or {}, admin=admin)
        if step is not None:
            steps.setdefault(event.run_id, []).append(step)
    calls = calls or {}
    turns: list[ChatTurn] = []
    for message in messages:
        if message.role == "user":
            shown = (images or {}).get(message.id or 0, [])
            error, detail = plain_error(message.error or "", admin=admin)
            turns.append(ChatTurn(id=message.id or 0, question=message.content, author=message.author_name or "tester",
                                  status=message.status or "", error=error, error_detail=detail,
                                  steps=steps.get(message.id or 0, []), calls=calls.get(message.id or 0, []),
                                  images=[image_url(i.id) for i in shown if i.origin == run_images.TOOL],
                                  sent=[image_url(i.id) for i in shown if i.origin == run_images.USER]))
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
            role=role_name(str(role)), model=str(model), calls=int(count), tokens_in=f"{int(tokens_in or 0):,}",
            tokens_out=f"{int(tokens_out or 0):,}", seconds=duration(float(latency or 0) / 1000)))
    return out


@dataclass
class ChatView:
    """What the tab shows when it (re)loads."""

    turns: list[ChatTurn]
    worker_running: bool
    reads_images: bool = False  # the bot's output model reads images (the tester may send one)
    # [id, "#name", "provider model" of its answers] of the bot's channel personas
    channels: list[list[str]] = field(default_factory=list)


def load_chat(token: str, bot_id: int) -> ChatView:
    """The signed-in user's conversation with the bot."""

    def work(session: Session, user: AppUser, bot: Bot) -> ChatView:
        conv = tester_chat.latest_session(bot.id or 0, user.id or 0, session=session)
        messages = tester_chat.recent_messages(conv.id or 0, session=session, limit=HISTORY_LIMIT) if conv else []
        run_ids = [m.id or 0 for m in messages if m.role == "user"]
        events = tester_chat.run_steps(run_ids, session=session)
        return ChatView(build_turns(messages, events, run_calls(run_ids, session=session),
                                    run_images.of_runs(run_ids, session=session), admin=user.role == Role.ADMIN.value),
                        tester_chat.worker_running(session=session),
                        reads_images=_reads_images(session, bot),
                        channels=_persona_channels(session, bot))

    return run_for_bot(token, bot_id, work, admin=False)


def _persona_channels(session: Session, bot: Bot) -> list[list[str]]:
    """The bot's channel personas as Test Chat offers them: ``[id, "#name", "provider model"]`` (its answers' model)."""
    rows = []
    for persona in channel_personas.personas(bot, session=session):
        output = effective_llms(session=session, bot_id=bot.id, channel=persona.llms)["output"]
        rows.append([persona.channel_id, f"#{persona.name}" if persona.name else persona.channel_id,
                     f"{output.provider} {output.model}"])
    return rows


CANNOT_READ_IMAGES = ("This bot's model does not read images: an admin can mark a model that does with "
                      "\"Reads images\" in the bot's LLM settings.")


def _reads_images(session: Session, bot: Bot) -> bool:
    return bool(effective_llm(session=session, category="output", bot_id=bot.id).supports_images)


@dataclass
class SentImage:
    """An image the user chose to send with their next message."""

    data: bytes
    name: str


def check_image(token: str, bot_id: int, data: bytes, name: str) -> str:
    """Whether ``data`` can go with a message to the bot: "" when it can, else why not, in plain words
    (the bot's model does not read images, or the file is not an image it can take)."""

    def work(session: Session, user: AppUser, bot: Bot) -> str:
        if not _reads_images(session, bot):
            return CANNOT_READ_IMAGES
        try:
            checked_image(data, name=name)
        except ValidationError as exc:
            return f"{name or 'The file'} cannot be sent: {exc}."
        return ""

    return run_for_bot(token, bot_id, work, admin=False)


def send_message(token: str, bot_id: int, content: str, image: SentImage | None = None,
                 channel_id: str = "") -> tuple[int, list[str]]:
    """Store the user's message as pending in their conversation with the bot (``image``: sent with it,
    for a model that reads images; ``channel_id``: the channel it is tested as, "" none); returns its id
    and where its image is served."""
    if channel_id and not (channel_id.isdigit() and len(channel_id) <= 32):
        raise ValidationError("choose the channel to test as from the list")

    def work(session: Session, user: AppUser, bot: Bot) -> tuple[int, list[str]]:
        checked = None
        if image is not None:
            if not _reads_images(session, bot):
                raise ValidationError(CANNOT_READ_IMAGES)
            checked = checked_image(image.data, name=image.name)
        conv = tester_chat.open_session(bot.id or 0, user.id or 0, session=session)
        # Each web user is their own "user" to the bot: notes and memories are not shared between testers.
        message = tester_chat.submit(conv.id or 0, content, session=session, author_name=user.username,
                                   author_id=f"app-user:{user.id}", image=checked, channel_id=channel_id or None)
        logger.info("User %s sent a Test Chat message to bot %s", user.username, bot.id)
        sent = run_images.of_runs([message.id or 0], session=session).get(message.id or 0, [])
        return message.id or 0, [image_url(i.id) for i in sent]

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


def run_for_run(token: str, bot_id: int, run_id: int, work: Callable[[Session], T], *, readonly: bool = True) -> T:
    """``work(session)`` once the session may see bot ``bot_id`` and ``run_id`` is a Test Chat message
    to that bot (for a tester: their own); else ``NotFoundError``, as for a run that does not exist."""

    return run_for_run_by(token, bot_id, run_id, lambda session, _user: work(session), readonly=readonly)


def run_for_run_by(token: str, bot_id: int, run_id: int, work: Callable[[Session, AppUser], T], *,
                   readonly: bool = True) -> T:
    """:func:`run_for_run` whose ``work`` is also given the signed-in user."""

    def checked(session: Session, user: AppUser, bot: Bot) -> T:
        owner = None if user.role == Role.ADMIN.value else user.id
        tester_chat.check_run(int(run_id), session=session, bot_id=bot.id or 0, app_user_id=owner)
        return work(session, user)

    return run_for_bot(token, bot_id, checked, admin=False, readonly=readonly)


@dataclass
class RunPlace:
    """Where a run is: its status, the runner that holds it (if it advertises one), every live runner and
    whether a worker runs (a pending message: else "Waiting for the bot worker…")."""

    status: str
    holder: tester_chat_link.Runner | None
    runners: list[tester_chat_link.Runner]
    worker_running: bool = True


def locate_run(token: str, bot_id: int, run_id: int) -> RunPlace:
    def work(session: Session) -> RunPlace:
        status, claimed_by = tester_chat.run_holder(run_id, session=session)
        runners = tester_chat_link.live_runners(session=session) if status in OPEN_STATUSES else []
        holder = next((r for r in runners if claimed_by and r.supervisor_id == claimed_by), None)
        running = tester_chat.worker_running(session=session) if status == "pending" else True
        return RunPlace(status, holder, runners, running)

    return run_for_run(token, bot_id, run_id, work)


def end_if_abandoned(token: str, bot_id: int, run_id: int) -> bool:
    """End the run when the worker that was answering it has stopped (else it stays "running" until a
    worker starts again); True when it did."""
    return run_for_run(token, bot_id, run_id, lambda session: tester_chat.end_abandoned_run(run_id, session=session),
                       readonly=False)


def cancel_pending(token: str, bot_id: int, run_id: int) -> bool:
    """Stop a message no worker has claimed yet; True when it was still waiting."""

    def work(session: Session, user: AppUser) -> bool:
        return tester_chat.cancel(run_id, f"the run was cancelled ({stopped_by(user.username)})", session=session,
                                  pending_only=True)

    return run_for_run_by(token, bot_id, run_id, work, readonly=False)
