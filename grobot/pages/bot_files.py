"""The Files tab (admins): the bot's files (which its tools can read and it answers from) by folder, upload,
preview of a text file, download, delete, and each file's state in the bot's document index
(:mod:`grobot.pages.bot_documents`).

An upload of a name the bot has already asks first: replace it (saying the sizes before and after), keep
both (the new one as ``name (2).ext``) or cancel, as file managers and cloud drives do: the files keep
no earlier versions, so a silent overwrite would lose the old file for good. The files service checks
sizes and paths (nothing may leave the bot's folder); this page shows its errors as they are.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import reflex as rx
from sqlmodel import Session

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import FILES
from grobot.components.empty_state import empty_state
from grobot.components.forms import error_text
from grobot.components.layout import NARROW_ONLY, WIDE_CELL
from grobot.components.safe_text import safe_text
from grobot.core.models import AppUser, Bot, BotFile
from grobot.core.services import files as files_service
from grobot.core.services.users import NotSignedIn
from grobot.core.services.validation import capitalised
from grobot.core.wording import counted, human_size
from grobot.pages.bot_documents import DocumentsState, documents_card, file_state
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


# --------------------------------------------------------------------------- components


def file_row(row: FileRow) -> rx.Component:
    muted = rx.color("gray", 11)
    return rx.table.row(
        rx.table.row_header_cell(rx.hstack(
            rx.icon("file", size=16, color=rx.color("gray", 11), flex_shrink="0"),
            rx.vstack(
                safe_text(row.name, weight="medium", word_break="break-all"),
                rx.text(row.size, " · ", row.updated, size="1", color=muted, display=NARROW_ONLY,
                        data_testid="file-details"),  # narrow screens: in place of the columns left out
                file_state(row.path),
                spacing="0",
                min_width="0",
            ),
            spacing="2",
            align="center",
            padding_left=rx.breakpoints(initial="0", sm="1.25rem"),  # under its folder's heading
        )),
        rx.table.cell(rx.text(row.size, white_space="nowrap"), text_align="right", display=WIDE_CELL),
        rx.table.cell(rx.text(row.content_type, size="1", color=muted), display=WIDE_CELL),
        rx.table.cell(rx.text(row.updated, size="1", color=muted, white_space="nowrap"), display=WIDE_CELL),
        rx.table.cell(
            rx.hstack(
                rx.cond(row.previewable,
                        rx.icon_button(rx.icon("eye", size=14), variant="soft", size="1", title="Preview",
                                       aria_label=f"Preview {row.path}", on_click=FilesState.preview(row.path))),
                rx.icon_button(rx.icon("download", size=14), variant="soft", size="1", title="Download",
                               aria_label=f"Download {row.path}", on_click=FilesState.download(row.path)),
                rx.icon_button(rx.icon("trash-2", size=14), variant="soft", color_scheme="red", size="1",
                               title="Delete", aria_label=f"Delete {row.path}", on_click=FilesState.ask_delete(row.path)),
                spacing="2",
                justify="end",
            ),
        ),
        align="center",
        data_path=row.path,
    )


def folder_heading(folder: FolderRow) -> rx.Component:
    """A folder's row: its path, how many files (and bytes) are in it, and "Upload here"."""
    return rx.table.row(
        rx.table.cell(
            rx.flex(
                rx.hstack(rx.icon("folder", size=16, color=rx.color("accent", 10), flex_shrink="0"),
                          safe_text(folder.title, weight="bold", size="2", word_break="break-all"),
                          rx.text(folder.summary, size="1", color=rx.color("gray", 11), white_space="nowrap"),
                          spacing="2", align="center", wrap="wrap"),
                rx.button(rx.icon("upload", size=12), "Upload here", variant="ghost", size="1",
                          on_click=FilesState.upload_into(folder.folder),
                          aria_label=rx.cond(folder.folder != "", "Upload into " + folder.title,
                                             "Upload into the top folder")),
                justify="between",
                align="center",
                gap="0.5rem",
                width="100%",
            ),
            col_span=5,
            background=rx.color("gray", 2),
        ),
        data_folder=folder.folder,
    )


def folder_section(folder: FolderRow) -> rx.Component:
    return rx.fragment(folder_heading(folder), rx.foreach(folder.files, file_row))


def replace_dialog() -> rx.Component:
    """Asked when uploaded files have names the bot has already: replace them, keep both, or cancel."""
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title(rx.cond(FilesState.replacing.length() == 1,  # type: ignore[attr-defined]
                                          "Replace a file of the same name?", "Replace files of the same name?")),
            rx.alert_dialog.description(
                rx.cond(FilesState.replacing.length() == 1,  # type: ignore[attr-defined]
                        "The bot has a file of this name already. The old file is not kept if you replace it.",
                        "The bot has files of these names already. The old files are not kept if you replace them."),
                size="2"),
            rx.vstack(
                rx.foreach(FilesState.replacing, lambda row: rx.hstack(
                    rx.icon("file", size=14, flex_shrink="0"),
                    safe_text(row.path, weight="medium", size="2", word_break="break-all"),
                    rx.text(row.sizes, size="1", color=rx.color("gray", 11), white_space="nowrap"),
                    spacing="2", align="center", wrap="wrap", data_testid="replace-file")),
                spacing="1",
                margin_top="0.75rem",
            ),
            rx.flex(
                rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", color_scheme="gray",
                                                 on_click=FilesState.answer_replace("cancel"))),
                rx.alert_dialog.action(rx.button("Keep both", variant="soft",
                                                 on_click=FilesState.answer_replace("keep"))),
                rx.alert_dialog.action(rx.button("Replace", color_scheme="red",
                                                 on_click=FilesState.answer_replace("replace"))),
                gap="0.75rem", justify="end", wrap="wrap", margin_top="1rem",
            ),
            max_width="32rem",
        ),
        open=FilesState.replacing.length() > 0,  # type: ignore[attr-defined]
        on_open_change=FilesState.replace_dialog_changed,
    )


def preview_dialog() -> rx.Component:
    """The first characters of a text file, as plain text."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.flex(
                rx.dialog.title(safe_text(FilesState.preview_path, word_break="break-all"), margin="0", size="3"),
                rx.dialog.close(rx.icon_button(rx.icon("x", size=16), variant="ghost", color_scheme="gray",
                                               aria_label="Close the preview")),
                justify="between", align="start", gap="0.5rem",
            ),
            rx.cond(
                FilesState.preview_error != "",
                rx.callout(FilesState.preview_error, icon="triangle-alert", color_scheme="red", margin_top="0.75rem"),
                rx.vstack(
                    rx.cond(FilesState.preview_note != "",
                            rx.text(FilesState.preview_note, size="1", color=rx.color("gray", 11))),
                    rx.box(
                        safe_text(FilesState.preview_text, size="2", font_family="var(--code-font-family, monospace)",
                                  data_testid="file-preview"),
                        max_height="60vh", overflow_y="auto", width="100%", padding="0.75rem",
                        border_radius="6px", background=rx.color("gray", 2),
                        border=f"1px solid {rx.color('gray', 5)}",
                    ),
                    spacing="2",
                    margin_top="0.75rem",
                    width="100%",
                ),
            ),
            max_width="min(56rem, 95vw)",
        ),
        open=FilesState.preview_path != "",
        on_open_change=FilesState.preview_changed,
    )


def upload_zone() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.el.label(rx.text("Folder (optional)", size="2", weight="medium"),
                            rx.input(value=FilesState.folder, on_change=FilesState.set_folder,
                                     placeholder="e.g. docs/manuals", width="18rem", max_width="100%"),
                            display="flex", flex_direction="column", gap="0.25rem", max_width="100%"),
                rx.cond(
                    FilesState.folder_problem != "",
                    error_text(FilesState.folder_problem, data_testid="upload-target"),
                    rx.text("Files go into ", rx.code(FilesState.target_folder), f", up to {FilesState.max_size} each.",
                            size="1", color=rx.color("gray", 11), data_testid="upload-target"),
                ),
                align="end",
                justify="between",
                width="100%",
                wrap="wrap",
            ),
            rx.upload.root(
                rx.vstack(
                    rx.icon("cloud-upload", size=28, color=rx.color("accent", 10)),
                    rx.text("Drop files here or click to choose", weight="medium", size="2"),
                    rx.text("They are uploaded at once and become readable by the bot's file tools.", size="1",
                            color=rx.color("gray", 11)),
                    align="center",
                    spacing="1",
                ),
                id=UPLOAD_ID,
                multiple=True,
                on_drop=FilesState.upload(rx.upload_files(upload_id=UPLOAD_ID)),
                border=f"2px dashed {rx.color('accent', 6)}",
                border_radius="10px",
                padding="1.5rem",
                width="100%",
                cursor="pointer",
                background=rx.color("accent", 2),
            ),
            rx.cond(FilesState.uploading, rx.hstack(rx.spinner(size="1"), rx.text("Uploading…", size="2"),
                                                    spacing="2", align="center")),
            rx.cond(FilesState.upload_error != "",
                    rx.callout(FilesState.upload_error, icon="triangle-alert", color_scheme="red", width="100%",
                               data_testid="upload-error")),
            spacing="3",
            width="100%",
        ),
        width="100%",
    )


def delete_dialog() -> rx.Component:
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title("Delete this file?"),
            rx.alert_dialog.description(rx.text(FilesState.confirm_path, weight="medium", as_="span"),
                                        " is deleted from the bot's folder. This cannot be undone.", size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", color_scheme="gray",
                                                 on_click=FilesState.cancel_delete)),
                rx.alert_dialog.action(rx.button("Delete", color_scheme="red", on_click=FilesState.delete_file)),
                spacing="3", justify="end", margin_top="1rem",
            ),
        ),
        open=FilesState.confirm_path != "",
        on_open_change=FilesState.dialog_open_changed,
    )


def files_tab() -> rx.Component:
    return rx.vstack(
        upload_zone(),
        rx.cond(FilesState.files_error != "",
                rx.callout(FilesState.files_error, icon="triangle-alert", color_scheme="red", width="100%")),
        rx.cond(
            FilesState.files_loaded,
            rx.cond(
                FilesState.file_count > 0,
                rx.table.root(
                    rx.table.header(rx.table.row(
                        rx.table.column_header_cell("File"),
                        rx.table.column_header_cell("Size", text_align="right", width="7rem", display=WIDE_CELL),
                        rx.table.column_header_cell("Type", width="12rem", display=WIDE_CELL),
                        rx.table.column_header_cell("Updated", width="10rem", display=WIDE_CELL),
                        rx.table.column_header_cell("", width="8rem"),
                    )),
                    rx.table.body(rx.foreach(FilesState.folders, folder_section)),
                    variant="surface",
                    width="100%",
                ),
                empty_state("folder-open", "No files yet",
                            "Upload documents the bot should be able to read with its file tools: manuals, FAQs, "
                            "price lists."),
            ),
        ),
        documents_card(),
        delete_dialog(),
        replace_dialog(),
        preview_dialog(),
        spacing="4",
        width="100%",
    )


def files_page() -> rx.Component:
    return bot_page(FILES, files_tab())
