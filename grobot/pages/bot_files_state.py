"""The Files tab: its state, what it reads and does through the services with the checks of each event (the view
is in :mod:`grobot.pages.bot_files`)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import reflex as rx
from sqlmodel import Session

from grobot.core.models import AppUser, Bot, BotFile
from grobot.core.services import files as files_service
from grobot.core.services.users import NotSignedIn
from grobot.core.services.validation import capitalised
from grobot.core.wording import counted, human_size
from grobot.pages.bot_documents_state import DocumentsState
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message
from grobot.web_session import upload_session

logger = logging.getLogger(__name__)

UPLOAD_ID = "bot-files-upload"


def too_big(name: str, size: int, limit: int) -> str:
    """Why an upload is refused, with sizes that visibly differ (exact bytes when the rounded
    figures would read the same, e.g. 1.0 MB against 1.0 MB)."""
    shown, allowed = human_size(size), human_size(limit)
    if shown == allowed:
        shown, allowed = f"{size:,} bytes", f"{limit:,} bytes ({human_size(limit)})"
    return f"{name} is {shown}; the limit is {allowed}."


@dataclass
class FileRow:
    """One file of the bot."""

    path: str
    name: str  # without its folder (shown under the folder's heading)
    size: str
    content_type: str
    updated: str
    previewable: bool  # a text file: its first characters can be shown


@dataclass
class FolderRow:
    """A folder of the bot's files, with the files right in it."""

    folder: str  # "" for the top folder
    title: str  # "docs/manuals/" or "Top folder"
    summary: str  # "3 files, 12.0 KB"
    files: list[FileRow] = field(default_factory=list)


@dataclass
class ReplaceRow:
    """An uploaded file whose name the bot has already."""

    path: str
    sizes: str  # "55 bytes → 63 bytes": the old file's, the uploaded one's


PREVIEW_CHARS = 20_000
_TEXT_TYPES = {"application/json", "application/xml", "application/x-yaml", "application/yaml", "application/toml",
               "application/javascript", "application/x-sh", "application/sql", "application/x-ndjson"}
_TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".csv", ".tsv", ".json", ".jsonl", ".yaml", ".yml", ".xml",
                  ".log", ".ini", ".cfg", ".conf", ".toml", ".py", ".js", ".ts", ".html", ".htm", ".css", ".sql",
                  ".sh", ".rst", ".env"}


def previewable(path: str, content_type: str) -> bool:
    """Whether a file reads as text (by its type, else its name)."""
    return (content_type.startswith("text/") or content_type in _TEXT_TYPES
            or PurePosixPath(path).suffix.lower() in _TEXT_SUFFIXES)


def folder_rows(files: list[BotFile]) -> list[FolderRow]:
    """The files grouped by the folder they are in (the top folder first, then the folders by name)."""
    groups: dict[str, list[BotFile]] = {}
    for f in files:
        folder = str(PurePosixPath(f.path).parent)
        groups.setdefault("" if folder == "." else folder, []).append(f)
    return [
        FolderRow(folder=folder, title=f"{folder}/" if folder else "Top folder",
                  summary=f"{counted(len(rows), 'file')}, {human_size(sum(f.size for f in rows))}",
                  files=[FileRow(path=f.path, name=PurePosixPath(f.path).name, size=human_size(f.size),
                                 content_type=f.content_type, updated=f.updated_at.strftime("%Y-%m-%d %H:%M"),
                                 previewable=previewable(f.path, f.content_type))
                         for f in sorted(rows, key=lambda f: f.path)])
        for folder, rows in sorted(groups.items(), key=lambda item: (item[0] != "", item[0]))
    ]


def typed_folder(text: str) -> str:
    """The folder field as uploads use it: no surrounding spaces or slashes ("" is the top folder)."""
    return text.strip().strip("/")


def upload_done() -> list[rx.event.EventSpec]:
    """Forget the files just uploaded, the file input's too: choosing the same file again (a new
    version of it, or after fixing the folder) is then an upload again, not a change the browser ignores."""
    return [rx.clear_selected_files(UPLOAD_ID),
            rx.call_script(f"document.querySelectorAll('#{UPLOAD_ID} input[type=file]')"
                           ".forEach((input) => { input.value = ''; })")]


@dataclass
class Listing:
    """What the tab shows of the bot's files."""

    folders: list[FolderRow]
    count: int
    max_bytes: int


def _listing(session: Session, bot: Bot) -> Listing:
    rows = files_service.list_files(session=session, bot_id=bot.id or 0)
    return Listing(folder_rows(rows), len(rows), files_service.max_file_bytes(session=session))


def load_files(token: str, bot_id: int) -> Listing:
    return run_for_bot(token, bot_id, lambda session, _user, bot: _listing(session, bot), admin=True)


def replaced_files(token: str, bot_id: int, paths: list[str]) -> dict[str, int]:
    """The files among ``paths`` the bot has already, with their sizes."""
    return run_for_bot(token, bot_id, lambda session, _user, bot: files_service.existing_sizes(
        session=session, bot_id=bot.id or 0, paths=paths), admin=True)


def store_files(token: str, bot_id: int, uploads: list[tuple[str, bytes, str | None]], *,
                keep_both: bool = False) -> Listing:
    """Write the uploaded files (all or none: one transaction) and list the files again; with ``keep_both``,
    a file whose name the bot has already goes beside it as ``name (2).ext``."""

    def work(session: Session, user: AppUser, bot: Bot) -> Listing:
        items = uploads
        if keep_both:
            taken: set[str] = set()
            items = []
            for path, data, content_type in uploads:
                free = files_service.free_path(session=session, bot_id=bot.id or 0, path=path, taken=taken)
                taken.add(free)
                items.append((free, data, content_type))
        files_service.write_files(session=session, bot_id=bot.id or 0, files=items)
        logger.info("User %s uploaded %d file(s) to bot %s", user.username, len(uploads), bot.id)
        return _listing(session, bot)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


def read_file(token: str, bot_id: int, path: str) -> bytes:
    return run_for_bot(token, bot_id, lambda session, _user, bot: files_service.read_bytes(
        session=session, bot_id=bot.id or 0, path=path), admin=True)


def read_preview(token: str, bot_id: int, path: str) -> tuple[str, bool]:
    """The first characters of a text file, and whether there is more."""
    return run_for_bot(token, bot_id, lambda session, _user, bot: files_service.read_text(
        session=session, bot_id=bot.id or 0, path=path, max_chars=PREVIEW_CHARS), admin=True)


def remove_file(token: str, bot_id: int, path: str) -> Listing:
    def work(session: Session, user: AppUser, bot: Bot) -> Listing:
        files_service.delete_file(session=session, bot_id=bot.id or 0, path=path)
        return _listing(session, bot)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


class FilesState(BotPageState):
    """The file list of the open bot, an upload waiting for "replace or keep both?", a file's preview."""

    folders: list[FolderRow] = []
    file_count: int = 0
    max_bytes: int = 0
    folder: str = ""
    files_loaded: bool = False
    files_error: str = ""
    upload_error: str = ""
    uploading: bool = False
    confirm_path: str = ""
    replacing: list[ReplaceRow] = []  # the uploaded files of names the bot has: asked about first
    _pending: list[tuple[str, bytes, str | None]] = []  # that upload, until the admin answers
    preview_path: str = ""
    preview_text: str = ""
    preview_note: str = ""
    preview_error: str = ""

    @rx.var
    def target_folder(self) -> str:
        """Where uploads go, as the admin reads it."""
        folder = typed_folder(self.folder)
        return f"{folder}/" if folder else "the top folder"

    @rx.var
    def folder_problem(self) -> str:
        """Why the typed folder would be refused (the files service's own rule), or empty."""
        folder = typed_folder(self.folder)
        if not folder:
            return ""
        try:
            files_service.clean_path(folder)
        except files_service.ValidationError as exc:
            return f"{capitalised(str(exc))}."
        return ""

    @rx.var
    def max_size(self) -> str:
        return human_size(self.max_bytes)

    def _show(self, listing: Listing) -> None:
        self.folders, self.file_count, self.max_bytes = listing.folders, listing.count, listing.max_bytes

    @rx.event
    async def load(self):
        self.files_loaded, self.files_error, self.upload_error, self.confirm_path = False, "", "", ""
        self.replacing, self._pending, self.preview_path = [], [], ""
        if not self.bot_ready:
            return None
        try:
            self._show(await asyncio.to_thread(load_files, self.session_token, self.current_bot_id))
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.files_error = user_message(exc)
            return None
        self.files_loaded = True
        return DocumentsState.load

    @rx.event
    def set_folder(self, value: str) -> None:
        self.folder = value

    @rx.event
    def upload_into(self, folder: str) -> None:
        """A folder's "Upload here": the next upload goes into it."""
        self.folder = folder

    @rx.event
    async def upload(self, uploads: list[rx.UploadFile]):
        """Store the dropped or chosen files under the folder typed above (the service checks size and path);
        names the bot has already are asked about first."""
        if not uploads:
            return
        # The upload request's own session cookie, not this tab's: the request names the tab by its
        # client token, which anyone who saw the websocket's URL knows (grobot.web_session).
        token = upload_session(self.router.session.client_token)
        self.uploading, self.upload_error, self.replacing, self._pending = True, "", [], []
        yield
        folder = typed_folder(self.folder)
        items: list[tuple[str, bytes, str | None]] = []
        try:
            for upload in uploads:
                name = PurePosixPath(upload.name or "upload").name
                if upload.size is not None and self.max_bytes and upload.size > self.max_bytes:
                    self.uploading, self.upload_error = False, too_big(name, upload.size, self.max_bytes)
                    yield upload_done()  # the name as it is: never "Big.bin" for big.bin
                    return
                data = await upload.read()
                items.append((f"{folder}/{name}" if folder else name, data, upload.content_type))
            paths = [files_service.clean_path(path) for path, _, _ in items]
            existing = await asyncio.to_thread(replaced_files, token, self.current_bot_id, paths)
            if existing:
                self.uploading, self._pending = False, items
                self.replacing = [ReplaceRow(path=path, sizes=f"{human_size(existing[path])} → "
                                                              f"{human_size(len(data))}")
                                  for path, (_, data, _) in zip(paths, items, strict=True) if path in existing]
                yield upload_done()
                return
            self._show(await asyncio.to_thread(store_files, token, self.current_bot_id, items))
        except Exception as exc:
            self.uploading = False
            self.upload_error = user_message(exc)
            yield upload_done()
            return
        self.uploading = False
        yield upload_done()
        yield rx.toast.success(f"Uploaded {counted(len(items), 'file')}.")
        yield DocumentsState.files_changed

    @rx.event
    async def answer_replace(self, answer: str):
        """The admin's answer about files of names the bot has: "replace", "keep" (both) or anything else
        (cancel: nothing of the upload is stored)."""
        items, replacing = self._pending, self.replacing
        self._pending, self.replacing = [], []
        if answer not in ("replace", "keep") or not items:
            return None
        try:
            self._show(await asyncio.to_thread(store_files, self.session_token, self.current_bot_id, items,
                                               keep_both=answer == "keep"))
        except Exception as exc:
            self.upload_error = user_message(exc)
            return None
        if answer == "keep":
            said = (f"Uploaded {counted(len(items), 'file')}; "
                    f"{counted(len(replacing), 'file')} of the same name kept beside the old one.")
        elif len(replacing) == 1:
            said = f"Replaced {replacing[0].path} ({replacing[0].sizes})."
        else:
            said = f"Uploaded {counted(len(items), 'file')}; replaced {counted(len(replacing), 'file')}."
        return [rx.toast.success(said), DocumentsState.files_changed]

    @rx.event
    def replace_dialog_changed(self, is_open: bool) -> None:
        if not is_open:  # closed with Escape or outside it: cancelled
            self._pending, self.replacing = [], []

    @rx.event
    async def preview(self, path: str):
        """Show the first characters of a text file."""
        self.upload_error, self.preview_error, self.preview_text, self.preview_note = "", "", "", ""
        self.preview_path = path
        yield
        try:
            text, cut = await asyncio.to_thread(read_preview, self.session_token, self.current_bot_id, path)
        except Exception as exc:
            self.preview_error = user_message(exc)
            return
        self.preview_text = text
        self.preview_note = (f"The first {PREVIEW_CHARS:,} characters." if cut
                             else "" if text else "The file is empty.")

    @rx.event
    def preview_changed(self, is_open: bool) -> None:
        if not is_open:
            self.preview_path, self.preview_text, self.preview_note, self.preview_error = "", "", "", ""

    @rx.event
    async def download(self, path: str):
        self.upload_error = ""
        try:
            data = await asyncio.to_thread(read_file, self.session_token, self.current_bot_id, path)
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        return rx.download(data=data, filename=PurePosixPath(path).name)

    @rx.event
    def ask_delete(self, path: str) -> None:
        self.confirm_path = path
        self.upload_error = ""  # an old upload's error is not about this

    @rx.event
    def cancel_delete(self) -> None:
        self.confirm_path = ""

    @rx.event
    def dialog_open_changed(self, is_open: bool) -> None:
        if not is_open:
            self.confirm_path = ""

    @rx.event
    async def delete_file(self):
        path, self.confirm_path = self.confirm_path, ""
        if not path:
            return None
        try:
            self._show(await asyncio.to_thread(remove_file, self.session_token, self.current_bot_id, path))
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        return [rx.toast.success(f"Deleted {path}."), DocumentsState.files_changed]
