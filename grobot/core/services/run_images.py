"""The images of runs: a tool's (origin ``tool``), and a tester's sent with a Test Chat message
(origin ``user``). Stored in ``run_image`` beside the run, deleted with it (and by the events'
retention); the web app serves them to the users who may see the run, itself."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlmodel import Session, col, select

from grobot.core.errors import NotFoundError
from grobot.core.models import Conversation, Message, RunImage, utcnow
from grobot.core.tools.base import ToolImage

logger = logging.getLogger(__name__)

TOOL = "tool"
USER = "user"


@dataclass(frozen=True)
class ImageRef:
    """An image of a run, as a page lists it."""

    id: int
    run_id: int
    origin: str
    name: str
    mime_type: str


def save(*, session: Session, run_id: int, origin: str, images: list[ToolImage]) -> list[int]:
    """Store checked images of run ``run_id``; returns their ids."""
    rows = [RunImage(run_id=run_id, origin=origin, mime_type=image.mime_type, name=image.name[:200],
                     size=len(image.data), data=image.data, created_at=utcnow()) for image in images]
    session.add_all(rows)
    session.flush()
    return [row.id or 0 for row in rows]


def of_runs(run_ids: list[int], *, session: Session) -> dict[int, list[ImageRef]]:
    """The images of some runs (without their data), by run, oldest first."""
    if not run_ids:
        return {}
    rows = session.exec(select(RunImage.id, RunImage.run_id, RunImage.origin, RunImage.name, RunImage.mime_type)
                        .where(col(RunImage.run_id).in_(run_ids)).order_by(col(RunImage.id))).all()
    found: dict[int, list[ImageRef]] = {}
    for image_id, run_id, origin, name, mime in rows:
        found.setdefault(int(run_id), []).append(ImageRef(int(image_id or 0), int(run_id), origin, name, mime))
    return found


def read(image_id: int, *, session: Session, app_user_id: int | None) -> RunImage:
    """Image ``image_id`` with its data, for a web user: an admin (``app_user_id`` None) may read any,
    anyone else only the images of their own Test Chat runs; :class:`NotFoundError` otherwise, as for an
    image that does not exist. The caller checks that the user may see the run's bot."""
    row = session.exec(select(RunImage, Conversation)
                       .join(Message, col(Message.id) == col(RunImage.run_id))
                       .join(Conversation, col(Conversation.id) == col(Message.conversation_id))
                       .where(RunImage.id == image_id)).first()
    if row is None:
        raise NotFoundError(f"no image numbered {image_id}")
    image, conversation = row
    if app_user_id is not None and (conversation.kind != "test" or conversation.app_user_id != app_user_id):
        raise NotFoundError(f"no image numbered {image_id}")
    return image


def bot_of(image_id: int, *, session: Session) -> int | None:
    """The bot whose run image ``image_id`` belongs to (None: no such image)."""
    return session.exec(select(Conversation.bot_id)
                        .join(Message, col(Message.conversation_id) == col(Conversation.id))
                        .join(RunImage, col(RunImage.run_id) == col(Message.id))
                        .where(RunImage.id == image_id)).first()
