"""The Files tab (admins): the bot's files (which its tools can read and it answers from) by folder, upload,
preview of a text file, download, delete, and each file's state in the bot's document index
(:mod:`grobot.pages.bot_documents`).

An upload of a name the bot has already asks first: replace it (saying the sizes before and after), keep
both (the new one as ``name (2).ext``) or cancel, as file managers and cloud drives do: the files keep
no earlier versions, so a silent overwrite would lose the old file for good. The files service checks
sizes and paths (nothing may leave the bot's folder); this page shows its errors as they are.
"""

from __future__ import annotations

import reflex as rx

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import FILES
from grobot.components.empty_state import empty_state
from grobot.components.forms import error_text
from grobot.components.layout import NARROW_ONLY, WIDE_CELL
from grobot.components.safe_text import safe_text
from grobot.pages.bot_documents import documents_card, file_state
from grobot.pages.bot_files_state import UPLOAD_ID, FileRow, FilesState, FolderRow

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
