"""Test Chat: sessions of a person with a bot in the web app, answered by a supervisor.

The web app creates a session (a conversation keyed ``test:<uuid>``) and submits user
messages as ``pending``. A supervisor claims them atomically (``FOR UPDATE SKIP LOCKED``
on PostgreSQL; a single guarded ``UPDATE`` on SQLite, where writers are serialised), runs
the chain with ``run_id`` = the message id, and marks the message ``done`` or ``error``.
A message left ``running`` by a supervisor that died is ended with a clear error: by the next
supervisor that starts, or by the page that follows it (:func:`end_abandoned_run`). A supervisor has
stopped when it has been silent for :func:`~grobot.core.services.fleet.stale_after_seconds` (three
heartbeats and 10 s: ``GROBOT_HEARTBEAT_SECONDS``), the limit a bot is shown offline after.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from sqlalchemy import delete, update
from sqlmodel import Session, col, select

from grobot.core.db import execute_dml
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import AgentEvent, Bot, Conversation, Message, MessageStatus, RunImage, Supervisor, utcnow
from grobot.core.services import run_images
from grobot.core.services.fleet import stale_after_seconds
from grobot.core.tools.base import ToolImage

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 20_000
IMAGE_ONLY = "What is in this image?"  # the question of an image sent without words
ABANDONED_ERROR = "the worker that was answering this message stopped; please send it again"


def create_session(bot_id: int, *, session: Session, app_user_id: int | None = None, title: str = "") -> Conversation:
    """A new Test Chat conversation with ``bot_id``."""
    if session.get(Bot, bot_id) is None:
        raise NotFoundError(f"no bot numbered {bot_id}")
    conv = Conversation(bot_id=bot_id, key=f"test:{uuid.uuid4()}", kind="test", title=title[:200] or "Test chat",
                        app_user_id=app_user_id)
    session.add(conv)
    session.flush()
    return conv


def submit(conversation_id: int, content: str, *, session: Session, author_name: str = "tester",
           author_id: str | None = None, image: ToolImage | None = None, channel_id: str | None = None) -> Message:
    """Store a user message as ``pending``: a supervisor will answer it. ``image``: a checked image sent
    with it (stored with the run; the bot's output model reads it when it reads images). ``channel_id``:
    the Discord channel it is tested as (its persona answers; None: the bot's own)."""
    content = (content or "").strip()
    if not content and image is not None:
        content = IMAGE_ONLY
    if not content:
        raise ValidationError("the message is empty")
    if len(content) > MAX_MESSAGE_CHARS:
        raise ValidationError(f"the message is longer than {MAX_MESSAGE_CHARS} characters")
    conv = session.get(Conversation, conversation_id)
    if conv is None or not conv.key.startswith("test:"):
        raise NotFoundError(f"no Test Chat session numbered {conversation_id}")
    attachments = [{"filename": image.name, "content_type": image.mime_type, "size": len(image.data)}] if image else None
    msg = Message(conversation_id=conversation_id, role="user", content=content, attachments=attachments,
                  author_name=author_name[:100], author_id=author_id, status=MessageStatus.PENDING.value,
                  as_channel_id=channel_id or None)
    conv.updated_at = utcnow()
    session.add(conv)
    session.add(msg)
    session.flush()
    if image is not None:
        run_images.save(session=session, run_id=msg.id or 0, origin=run_images.USER, images=[image])
    return msg


def claim_pending(supervisor_id: str, *, session: Session, limit: int = 4) -> list[Message]:
    """Atomically move up to ``limit`` pending messages to ``running`` for this supervisor.

    Two supervisors never get the same message: PostgreSQL locks the rows with
    ``FOR UPDATE SKIP LOCKED``; on SQLite the guarded ``UPDATE ... WHERE status = 'pending'``
    runs in a write transaction, one at a time.
    """
    now = utcnow()
    ids_query = (select(Message.id).where(Message.status == MessageStatus.PENDING.value)
                 .order_by(Message.id).limit(limit))
    if session.get_bind().dialect.name == "postgresql":
        ids_query = ids_query.with_for_update(skip_locked=True)
    ids = list(session.exec(ids_query).all())
    if not ids:
        return []
    claimed = execute_dml(session, update(Message)
                          .where(col(Message.id).in_(ids), col(Message.status) == MessageStatus.PENDING.value)
                          .values(status=MessageStatus.RUNNING.value, claimed_by=supervisor_id, claimed_at=now)
                          .execution_options(synchronize_session=False))
    if not claimed:
        return []
    session.expire_all()
    return list(session.exec(select(Message).where(Message.id.in_(ids), Message.claimed_by == supervisor_id,  # type: ignore[union-attr]
                                                   Message.status == MessageStatus.RUNNING.value)
                             .order_by(Message.id)).all())


_OPEN = (MessageStatus.PENDING.value, MessageStatus.RUNNING.value)


def _end(message_id: int, values: dict[str, str], *, session: Session, claimed_at: datetime | None,
         states: tuple[str, ...] = _OPEN) -> bool:
    """Set ``values`` on message ``message_id`` while it is open (``claimed_at``: only while it is running
    under that claim: the end of a try that comes late must not end the message sent again since)."""
    query = update(Message).where(col(Message.id) == message_id, col(Message.status).in_(states))
    if claimed_at is not None:
        query = query.where(col(Message.status) == MessageStatus.RUNNING.value, col(Message.claimed_at) == claimed_at)
    return bool(execute_dml(session, query.values(**values)))


def finish(message_id: int, *, session: Session, claimed_at: datetime | None = None) -> None:
    """The run of ``message_id`` ended well (a run already ended, e.g. as abandoned, stays as it is)."""
    _end(message_id, {"status": MessageStatus.DONE.value, "error": ""}, session=session, claimed_at=claimed_at)


def fail(message_id: int, error: str, *, session: Session, claimed_at: datetime | None = None) -> None:
    """The run of ``message_id`` failed: ``error`` is shown to the tester (an ended run stays as it is)."""
    _end(message_id, {"status": MessageStatus.ERROR.value, "error": (error or "failed")[:2000]}, session=session,
         claimed_at=claimed_at)


def cancel(message_id: int, error: str, *, session: Session, pending_only: bool = False,
           claimed_at: datetime | None = None) -> bool:
    """End the run of ``message_id`` as cancelled (``pending_only``: only if no supervisor claimed it
    yet); True when it was still open."""
    return _end(message_id, {"status": MessageStatus.CANCELLED.value, "error": error[:2000]}, session=session,
                claimed_at=claimed_at, states=(MessageStatus.PENDING.value,) if pending_only else _OPEN)


def check_run(message_id: int, *, session: Session, bot_id: int, app_user_id: int | None) -> None:
    """Raise :class:`NotFoundError` unless ``message_id`` is a Test Chat message sent to ``bot_id``
    (and, with ``app_user_id``, by that user): what a page may follow, stop or end. A run of
    another bot or another user reads exactly like one that does not exist."""
    row = session.exec(
        select(Conversation.id, Conversation.app_user_id)
        .join(Message, col(Message.conversation_id) == col(Conversation.id))
        .where(Message.id == message_id, Message.role == "user", Conversation.bot_id == bot_id,
               Conversation.kind == "test")
    ).first()
    if row is None or (app_user_id is not None and row[1] != app_user_id):
        raise NotFoundError(f"no Test Chat message numbered {message_id}")


def retry(message_id: int, *, session: Session) -> Message:
    """Ask again the failed or stopped last message of a Test Chat session, in place: what its run left (the
    words of a stopped answer, its events and tools' images, its error) goes, and it waits to be answered again
    (``pending``)."""
    msg = session.get(Message, message_id)
    conv = session.get(Conversation, msg.conversation_id) if msg is not None and msg.role == "user" else None
    if msg is None or conv is None or not conv.key.startswith("test:"):
        raise NotFoundError(f"no Test Chat message numbered {message_id}")
    later = session.exec(select(Message.role).where(Message.conversation_id == conv.id,
                                                    col(Message.id) > message_id)).all()
    if "user" in later:
        raise ValidationError("only the last message can be sent again")
    failed = (MessageStatus.ERROR.value, MessageStatus.CANCELLED.value)
    if not execute_dml(session, update(Message)  # once: a second Retry finds it pending
                       .where(col(Message.id) == message_id, col(Message.status).in_(failed))
                       .values(status=MessageStatus.PENDING.value, error="", claimed_by=None, claimed_at=None)):
        raise ValidationError("only a failed or stopped message can be sent again")
    session.execute(delete(Message).where(col(Message.conversation_id) == conv.id, col(Message.id) > message_id))
    session.execute(delete(AgentEvent).where(col(AgentEvent.run_id) == message_id))
    # The tools' images of the failed run go with its events; an image the user sent stays with the question.
    session.execute(delete(RunImage).where(col(RunImage.run_id) == message_id, col(RunImage.origin) == run_images.TOOL))
    conv.updated_at = utcnow()
    session.add(conv)
    session.flush()
    session.refresh(msg)
    return msg


def run_holder(message_id: int, *, session: Session) -> tuple[str, str | None]:
    """``(status, supervisor id that claimed it)`` of a Test Chat user message (``("", None)``: gone)."""
    row = session.exec(select(Message.status, Message.claimed_by).where(Message.id == message_id)).first()
    return (row[0] or "", row[1]) if row else ("", None)


def recover_abandoned(*, session: Session, live_supervisor_ids: set[str], older_than: float = 0.0,
                      only: int | None = None) -> list[int]:
    """End with a clear error every ``running`` message (``only``: that one) whose supervisor is not
    alive any more.

    ``older_than`` (seconds since the claim) guards against ending a claim that a new
    supervisor made a moment ago and has not registered yet.
    """
    cutoff = utcnow() - timedelta(seconds=older_than)
    query = select(Message.id, Message.claimed_by).where(
        Message.status == MessageStatus.RUNNING.value, Message.claimed_at <= cutoff)  # type: ignore[operator]
    if only is not None:
        query = query.where(Message.id == only)
    rows = session.exec(query).all()
    ids = [mid for mid, by in rows if mid is not None and by not in live_supervisor_ids]
    if ids:
        session.execute(update(Message).where(col(Message.id).in_(ids))
                        .values(status=MessageStatus.ERROR.value, error=ABANDONED_ERROR))
        logger.warning("Ended %d Test Chat message(s) left running by a stopped supervisor", len(ids))
    return ids


def end_abandoned_run(message_id: int, *, session: Session) -> bool:
    """End run ``message_id`` as abandoned when the supervisor that claimed it has stopped (silent for
    :func:`stale_after_seconds`), without waiting for a worker to start again; True when it did."""
    return bool(end_abandoned_runs(session=session, only=message_id))


def end_abandoned_runs(*, session: Session, alive: str | None = None, only: int | None = None) -> list[int]:
    """End as abandoned the running messages (``only``: that one) whose supervisor has stopped: silent
    for :func:`stale_after_seconds`, the one rule of the page and of every supervisor's sweep (a peer
    never ends the answer of a busy supervisor that the page still waits for). ``alive``: the caller's
    own supervisor, alive whatever its heartbeat says."""
    stale_after = stale_after_seconds()
    live = live_supervisor_ids(session=session, stale_after=stale_after) | ({alive} if alive else set())
    return recover_abandoned(session=session, live_supervisor_ids=live, older_than=stale_after, only=only)


def live_supervisor_ids(*, session: Session, stale_after: float) -> set[str]:
    cutoff = utcnow() - timedelta(seconds=stale_after)
    return set(session.exec(select(Supervisor.id).where(Supervisor.heartbeat_at >= cutoff)).all())


def messages(conversation_id: int, *, session: Session) -> list[Message]:
    """The messages of a Test Chat session, oldest first."""
    return list(session.exec(select(Message).where(Message.conversation_id == conversation_id)
                             .order_by(Message.created_at, Message.id)).all())


def latest_session(bot_id: int, app_user_id: int, *, session: Session) -> Conversation | None:
    """The newest Test Chat session of ``app_user_id`` with ``bot_id`` (None when there is none)."""
    return session.exec(
        select(Conversation)
        .where(Conversation.bot_id == bot_id, Conversation.app_user_id == app_user_id, Conversation.kind == "test")
        .order_by(Conversation.id.desc())  # type: ignore[union-attr]
    ).first()


def open_session(bot_id: int, app_user_id: int, *, session: Session) -> Conversation:
    """The user's current Test Chat session with the bot, created when there is none."""
    return latest_session(bot_id, app_user_id, session=session) or create_session(
        bot_id, session=session, app_user_id=app_user_id
    )


def recent_messages(conversation_id: int, *, session: Session, limit: int = 200) -> list[Message]:
    """The newest ``limit`` messages of a session, oldest first (rows detached from ``session``)."""
    rows = list(session.exec(select(Message).where(Message.conversation_id == conversation_id)
                             .order_by(Message.id.desc()).limit(limit)).all())  # type: ignore[union-attr]
    for row in rows:
        session.expunge(row)
    return rows[::-1]


def run_status(message_id: int, *, session: Session) -> tuple[str, str]:
    """``(status, error)`` of a Test Chat user message (``("", "")`` when it is gone)."""
    row = session.exec(select(Message.status, Message.error).where(Message.id == message_id)).first()
    return (row[0] or "", row[1] or "") if row else ("", "")


STEP_KINDS = ("thinking", "progress", "tool_call", "tool_result")


def run_steps(run_ids: list[int], *, session: Session, limit: int = 2000) -> list[AgentEvent]:
    """The step events (thinking, progress, tool calls and results) of some runs, in order, at most ``limit``."""
    if not run_ids:
        return []
    stmt = (select(AgentEvent).where(AgentEvent.run_id.in_(run_ids), AgentEvent.kind.in_(STEP_KINDS))  # type: ignore[attr-defined]
            .order_by(AgentEvent.run_id, AgentEvent.seq).limit(limit))
    rows = list(session.exec(stmt).all())
    for row in rows:
        session.expunge(row)
    return rows


def worker_running(*, session: Session) -> bool:
    """Whether a bot worker supervisor has sent a heartbeat within :func:`stale_after_seconds`."""
    return bool(live_supervisor_ids(session=session, stale_after=stale_after_seconds()))


def sent_images(message_id: int, *, session: Session) -> list[ToolImage]:
    """The images a tester sent with Test Chat message ``message_id`` (for the bot's model)."""
    rows = session.exec(select(RunImage).where(RunImage.run_id == message_id, RunImage.origin == run_images.USER)
                        .order_by(RunImage.id)).all()
    return [ToolImage(mime_type=row.mime_type, data=bytes(row.data), name=row.name) for row in rows]
