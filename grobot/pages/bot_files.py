"""The Files tab (admins): the bot's files (which its tools can read and it answers from), upload, download,
delete, and each file's state in the bot's document index (:mod:`grobot.pages.bot_documents`).

The files service checks sizes and paths (nothing may leave the bot's folder); this page
shows its errors as they are.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath

import reflex as rx
from sqlmodel import Session

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import FILES
from grobot.components.empty_state import empty_state
from grobot.components.forms import error_text
from grobot.components.layout import NARROW_ONLY, WIDE_CELL
from grobot.components.safe_text import safe_text
from grobot.core.models import AppUser, Bot
from grobot.core.services import files as files_service
from grobot.core.services.users import NotSignedIn
from grobot.core.services.validation import capitalised
from grobot.core.wording import counted, human_size
from grobot.pages.bot_documents import DocumentsState, documents_card, file_state
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

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
    size: str
    content_type: str
    updated: str


def typed_folder(text: str) -> str:
    """The folder field as uploads use it: no surrounding spaces or slashes ("" is the top folder)."""
    return text.strip().strip("/")


def upload_done() -> list[rx.event.EventSpec]:
    """Forget the files just uploaded, the file input's too: choosing the same file again (a new
    version of it, or after fixing the folder) is then an upload again, not a change the browser ignores."""
    return [rx.clear_selected_files(UPLOAD_ID),
            rx.call_script(f"document.querySelectorAll('#{UPLOAD_ID} input[type=file]')"
                           ".forEach((input) => { input.value = ''; })")]


def _rows(session: Session, bot: Bot) -> tuple[list[FileRow], int]:
    rows = [FileRow(path=f.path, size=human_size(f.size), content_type=f.content_type,
                    updated=f.updated_at.strftime("%Y-%m-%d %H:%M"))
            for f in files_service.list_files(session=session, bot_id=bot.id or 0)]
    return rows, files_service.max_file_bytes(session=session)


def load_files(token: str, bot_id: int) -> tuple[list[FileRow], int]:
    return run_for_bot(token, bot_id, lambda session, _user, bot: _rows(session, bot), admin=True)


def store_files(token: str, bot_id: int, uploads: list[tuple[str, bytes, str | None]]) -> tuple[list[FileRow], int]:
    """Write the uploaded files (all or none: one transaction) and list the files again."""

    def work(session: Session, user: AppUser, bot: Bot) -> tuple[list[FileRow], int]:
        files_service.write_files(session=session, bot_id=bot.id or 0, files=uploads)
        logger.info("User %s uploaded %d file(s) to bot %s", user.username, len(uploads), bot.id)
        return _rows(session, bot)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


def read_file(token: str, bot_id: int, path: str) -> bytes:
    return run_for_bot(token, bot_id, lambda session, _user, bot: files_service.read_bytes(
        session=session, bot_id=bot.id or 0, path=path), admin=True)


def remove_file(token: str, bot_id: int, path: str) -> tuple[list[FileRow], int]:
    def work(session: Session, user: AppUser, bot: Bot) -> tuple[list[FileRow], int]:
        files_service.delete_file(session=session, bot_id=bot.id or 0, path=path)
        return _rows(session, bot)

    return run_for_bot(token, bot_id, work, admin=True, readonly=False)


class FilesState(BotPageState):
    """The file list of the open bot."""

    files: list[FileRow] = []
    max_bytes: int = 0
    folder: str = ""
    files_loaded: bool = False
    files_error: str = ""
    upload_error: str = ""
    uploading: bool = False
    confirm_path: str = ""

    @rx.var
    def file_count(self) -> int:
        return len(self.files)

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

    @rx.event
    async def load(self):
        self.files_loaded, self.files_error, self.upload_error, self.confirm_path = False, "", "", ""
        if not self.bot_ready:
            return None
        try:
            self.files, self.max_bytes = await asyncio.to_thread(load_files, self.session_token, self.current_bot_id)
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
    async def upload(self, uploads: list[rx.UploadFile]):
        """Store the dropped or chosen files under the folder typed above (the service checks size and path)."""
        if not uploads:
            return
        self.uploading, self.upload_error = True, ""
        yield
        folder = typed_folder(self.folder)
        items: list[tuple[str, bytes, str | None]] = []
        try:
            for upload in uploads:
                name = PurePosixPath(upload.name or "upload").name
                if upload.size is not None and self.max_bytes and upload.size > self.max_bytes:
                    raise files_service.ValidationError(too_big(name, upload.size, self.max_bytes))
                data = await upload.read()
                items.append((f"{folder}/{name}" if folder else name, data, upload.content_type))
            self.files, self.max_bytes = await asyncio.to_thread(store_files, self.session_token,
                                                                 self.current_bot_id, items)
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
            self.files, self.max_bytes = await asyncio.to_thread(remove_file, self.session_token,
                                                                 self.current_bot_id, path)
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
                safe_text(row.path, weight="medium", word_break="break-all"),
                rx.text(row.size, " · ", row.updated, size="1", color=muted, display=NARROW_ONLY,
                        data_testid="file-details"),  # narrow screens: in place of the columns left out
                file_state(row.path),
                spacing="0",
                min_width="0",
            ),
            spacing="2",
            align="center",
        )),
        rx.table.cell(rx.text(row.size, white_space="nowrap"), text_align="right", display=WIDE_CELL),
        rx.table.cell(rx.text(row.content_type, size="1", color=muted), display=WIDE_CELL),
        rx.table.cell(rx.text(row.updated, size="1", color=muted, white_space="nowrap"), display=WIDE_CELL),
        rx.table.cell(
            rx.hstack(
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
                        rx.table.column_header_cell("", width="6rem"),
                    )),
                    rx.table.body(rx.foreach(FilesState.files, file_row)),
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
        spacing="4",
        width="100%",
    )


def files_page() -> rx.Component:
    return bot_page(FILES, files_tab())
