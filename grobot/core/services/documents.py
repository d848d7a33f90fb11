"""A bot's documents: each file's place in the index, the bot's documents settings, and what the
supervisor's indexer reads and writes (``bot_document``).

The passages themselves live in the supervisor's Chroma store: the web app and the CLI search
them through its link (:func:`search`), as they do memories, and ask it to index now
(:func:`request_sync`); without a worker the files wait, and are indexed when it starts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session, col, delete, select

from grobot.core.documents import PASSAGES_PER_MESSAGE, Passage
from grobot.core.documents.chunks import CHUNKER_VERSION
from grobot.core.errors import ValidationError
from grobot.core.models import Bot, BotDocument, BotFile, utcnow
from grobot.core.wording import counted

logger = logging.getLogger(__name__)

MAX_SEARCH_RESULTS = 20
INDEXING, INDEXED, FAILED = "indexing", "indexed", "failed"
WAITING, OFF = "waiting", "off"  # a file's state without a row for its content (or with documents off)
SETTING_FIELDS = ("documents_enabled", "documents_threshold", "documents_max_file_bytes", "documents_max_passages")


@dataclass(frozen=True)
class DocumentsSettings:
    """A bot's documents settings (its ``bot`` columns)."""

    enabled: bool
    threshold: float
    max_file_bytes: int
    max_passages: int

    @classmethod
    def of(cls, bot: Any) -> DocumentsSettings:
        return cls(enabled=bool(bot.documents_enabled), threshold=float(bot.documents_threshold),
                   max_file_bytes=int(bot.documents_max_file_bytes), max_passages=int(bot.documents_max_passages))

    def key(self) -> str:
        """What an index depends on besides the file: a file indexed under other limits (or another
        chunker) is indexed again."""
        return f"v{CHUNKER_VERSION}:{self.max_file_bytes}:{self.max_passages}"

    def as_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "threshold": self.threshold, "max_file_bytes": self.max_file_bytes,
                "max_passages": self.max_passages}


@dataclass(frozen=True)
class FileState:
    """Where one file stands in the bot's index, and the line that says it."""

    path: str
    state: str  # waiting, indexing, indexed, failed, off
    passages: int = 0
    pages: int = 0
    error: str = ""
    kind: str = ""  # pdf when its pages are real pages

    @property
    def line(self) -> str:
        if self.state == INDEXED:
            pages = f"{counted(self.pages, 'page')}, " if self.kind == "pdf" and self.pages else ""
            return f"Indexed: {pages}{counted(self.passages, 'passage')}"
        if self.state == FAILED:
            return f"Not indexed: {self.error}"
        if self.state == INDEXING:
            return "Indexing…"
        if self.state == OFF:
            return "Not indexed: documents are off for this bot"
        return "Waiting to be indexed"

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "state": self.state, "passages": self.passages, "pages": self.pages,
                "error": self.error, "line": self.line}


def file_states(*, session: Session, bot_id: int) -> dict[str, FileState]:
    """Each file of the bot (by path) and where it stands in the index."""
    bot = session.get(Bot, bot_id)
    if bot is None:
        return {}
    settings = DocumentsSettings.of(bot)
    rows = {d.path: d for d in session.exec(select(BotDocument).where(BotDocument.bot_id == bot_id)).all()}
    states: dict[str, FileState] = {}
    for file in session.exec(select(BotFile).where(BotFile.bot_id == bot_id).order_by(BotFile.path)).all():
        row = rows.get(file.path)
        kind = "pdf" if file.path.lower().endswith(".pdf") else ""
        if not settings.enabled:
            states[file.path] = FileState(file.path, OFF)
        elif row is None or row.sha256 != file.sha256 or row.settings_key != settings.key():
            states[file.path] = FileState(file.path, WAITING)
        else:
            states[file.path] = FileState(file.path, row.state, row.passages, row.pages, row.error, kind)
    return states


def settings_for(bot_id: int, *, session: Session) -> DocumentsSettings:
    from grobot.core.services.bots import get_bot

    return DocumentsSettings.of(get_bot(bot_id, session=session))


def update_settings(bot_id: int, changes: dict[str, Any], *, session: Session) -> DocumentsSettings:
    """Change a bot's documents settings (``documents_enabled`` ...; validated like every bot field)."""
    from grobot.core.services.bots import get_bot, update_bot

    unknown = set(changes) - set(SETTING_FIELDS)
    if unknown:
        raise ValidationError(f"not a documents setting: {', '.join(sorted(unknown))}")
    bot = update_bot(get_bot(bot_id, session=session), changes, session=session)
    logger.info("Bot %s: documents settings changed (%s)", bot_id, ", ".join(sorted(changes)))
    return DocumentsSettings.of(bot)


def reindex(bot_id: int, *, session: Session) -> int:
    """Index every file of the bot again (after a fix, or a file that failed for a passing reason);
    returns how many files wait for it."""
    rows = session.exec(select(BotDocument).where(BotDocument.bot_id == bot_id)).all()
    for row in rows:
        row.sha256, row.state = "", WAITING
        session.add(row)
    session.flush()
    return len(session.exec(select(BotFile.id).where(BotFile.bot_id == bot_id)).all())


# --------------------------------------------------------------------------- the indexer's


@dataclass(frozen=True)
class IndexJob:
    """A file to index (or index again) for a bot."""

    bot_id: int
    path: str
    sha256: str
    size: int
    settings: DocumentsSettings


@dataclass(frozen=True)
class Removal:
    """A file gone from a bot's folder whose passages are still in the index."""

    bot_id: int
    path: str


def pending(*, session: Session) -> tuple[list[IndexJob], list[Removal]]:
    """What the index lacks: the files of bots with documents on that were never indexed at their
    content and settings, and the indexed files that are gone (one read)."""
    bots = {b.id: DocumentsSettings.of(b) for b in session.exec(select(Bot).where(col(Bot.documents_enabled))).all()}
    if not bots:
        return [], []
    files = session.exec(select(BotFile).where(col(BotFile.bot_id).in_(list(bots)))).all()
    rows = session.exec(select(BotDocument).where(col(BotDocument.bot_id).in_(list(bots)))).all()
    indexed = {(r.bot_id, r.path): r for r in rows}
    present = {(f.bot_id, f.path) for f in files}
    jobs = []
    for file in files:
        settings = bots[file.bot_id]
        row = indexed.get((file.bot_id, file.path))
        if row is None or row.sha256 != file.sha256 or row.settings_key != settings.key() or row.state == INDEXING:
            jobs.append(IndexJob(file.bot_id, file.path, file.sha256, int(file.size), settings))
    removals = [Removal(r.bot_id, r.path) for r in rows if (r.bot_id, r.path) not in present]
    return jobs, removals


def still_pending(job: IndexJob, *, session: Session) -> bool:
    """Whether ``job`` is still to do: the file has that content, the bot documents on with those settings."""
    bot = session.get(Bot, job.bot_id)
    file = session.exec(select(BotFile).where(BotFile.bot_id == job.bot_id, BotFile.path == job.path)).first()
    return bool(bot is not None and bot.documents_enabled and file is not None and file.sha256 == job.sha256
                and DocumentsSettings.of(bot).key() == job.settings.key())


def record(job: IndexJob, *, session: Session, state: str, passages: int = 0, pages: int = 0, error: str = "") -> None:
    """Write where ``job``'s file stands (its row is made when missing)."""
    if session.get(Bot, job.bot_id) is None:
        return  # deleted meanwhile
    row = session.exec(select(BotDocument).where(BotDocument.bot_id == job.bot_id,
                                                 BotDocument.path == job.path)).first()
    if row is None:
        row = BotDocument(bot_id=job.bot_id, path=job.path)
    row.sha256, row.state, row.passages, row.pages = job.sha256, state, passages, pages
    row.error, row.settings_key, row.updated_at = error, job.settings.key(), utcnow()
    session.add(row)
    session.flush()


def forget(removal: Removal, *, session: Session) -> None:
    """The file's passages are gone from the index: its row goes too (unless the file is back)."""
    back = session.exec(select(BotFile.id).where(BotFile.bot_id == removal.bot_id, BotFile.path == removal.path)).first()
    if back is None:
        session.exec(delete(BotDocument).where(col(BotDocument.bot_id) == removal.bot_id,
                                               col(BotDocument.path) == removal.path))


def bot_ids(*, session: Session) -> set[int]:
    return {int(i) for i in session.exec(select(Bot.id)).all() if i is not None}


# --------------------------------------------------------------------------- through the worker's link


def search(bot_id: int, query: str, *, session: Session, k: int = PASSAGES_PER_MESSAGE) -> list[Passage]:
    """The bot's passages closest in meaning to ``query`` (closest first; any similarity)."""
    from grobot.core.services.memories import client

    if not query.strip():
        raise ValidationError("the search text is empty")
    return client(session=session).documents(bot_id, query, max(1, min(int(k), MAX_SEARCH_RESULTS)))


def request_sync(*, session: Session) -> bool:
    """Ask a live worker to bring the index up to date now (else its next poll does); never fails."""
    from grobot.core.link_client import AdminLink, find_url
    from grobot.core.memory.remote import MemoryAdmin

    try:
        url = find_url(session=session)
        if url is None:
            return False
        MemoryAdmin(AdminLink(url, timeout=2.0)).sync_documents()
        return True
    except Exception as exc:
        logger.info("Could not ask the worker to index the documents now (%s); it does at its next poll",
                    type(exc).__name__)
        return False
