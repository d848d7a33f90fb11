"""A file's bytes as text in sections (a heading and what follows it, or a PDF page).

- PDF: ``pypdf`` (pure Python, maintained by the py-pdf project): the text of each page, with
  its page number; headings are the lines set larger than the page's body text or in bold
  alone on their line, and the PDF's outline (bookmarks) names the pages it points at. A PDF
  whose pages hold no text (a scan) or that needs a password is refused in one line.
- Word (DOCX): ``mammoth`` turns the document into HTML with Word's heading styles as
  ``<h1>``..``<h6>``, read as HTML next.
- HTML: ``beautifulsoup4`` drops scripts, styles and navigation, ``markdownify`` writes the
  rest as Markdown.
- Markdown and text: ATX (``## Title``) and setext headings outside code blocks.

Anything else is refused as "not a document". The functions block and run untrusted input:
the supervisor runs :func:`convert` in a child process (:mod:`grobot.core.documents.isolated`).
"""

from __future__ import annotations

import io
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from grobot.core.documents import SUPPORTED, DocumentError

logger = logging.getLogger(__name__)

CHARS_PER_PAGE = 3000  # a "page" of a text document, for the counts (a PDF has its own pages)
MARKDOWN = {".md", ".markdown", ".mdown", ".mkd"}
HTML = {".html", ".htm", ".xhtml"}
DOCX = {".docx"}
NOT_DOCUMENT = f"not a document: a binary file (GroBot reads {SUPPORTED} files)"


@dataclass
class Section:
    """Text under one heading path (``"A › B"``; "" before any heading), or one PDF page's part."""

    title: str
    text: str
    page: int | None = None


@dataclass
class Converted:
    """A document as sections, and how many pages it has (PDF pages, else per 3,000 characters)."""

    kind: str  # pdf, docx, html, markdown, text
    sections: list[Section] = field(default_factory=list)
    pages: int = 1


def kind_of(path: str, data: bytes) -> str:
    """``pdf``, ``docx``, ``html``, ``markdown`` or ``text``; :class:`DocumentError` for anything else."""
    suffix = PurePosixPath(path).suffix.lower()
    if data.lstrip()[:5] == b"%PDF-" or (suffix == ".pdf" and b"%PDF-" in data[:1024]):
        return "pdf"
    if data[:4] == b"PK\x03\x04":
        if suffix in DOCX or b"word/" in data[:4096]:
            return "docx"
        raise DocumentError(f"not a document: a ZIP archive (GroBot reads {SUPPORTED} files)")
    if suffix == ".pdf":
        raise DocumentError("the PDF could not be read: it is not a PDF file inside")
    if suffix in DOCX:
        raise DocumentError("the Word file could not be read: it is not a DOCX file inside")
    if suffix in HTML:
        return "html"
    if suffix in MARKDOWN:
        return "markdown"
    head = data[:512].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")):
        return "html"
    return "text"


def convert(path: str, data: bytes) -> Converted:
    """The sections of the file ``path`` holding ``data`` (blocking; untrusted input)."""
    kind = kind_of(path, data)
    if kind == "pdf":
        return _pdf(data)
    if kind == "docx":
        html = _docx_html(data)
        return _counted("docx", markdown_sections(html_markdown(html)))
    text = decode_text(data)
    if kind == "html":
        return _counted("html", markdown_sections(html_markdown(text)))
    if kind == "markdown":
        return _counted("markdown", markdown_sections(text))
    return _counted("text", [Section("", text)] if text.strip() else [])


def _counted(kind: str, sections: list[Section]) -> Converted:
    chars = sum(len(s.text) for s in sections)
    return Converted(kind=kind, sections=sections, pages=max(1, -(-chars // CHARS_PER_PAGE)))


# --------------------------------------------------------------------------- text


def decode_text(data: bytes) -> str:
    """Text in UTF-8 (with or without a BOM), UTF-16 with a BOM, else Windows-1252; binary data is refused."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise DocumentError(NOT_DOCUMENT) from None
    sample = data[:65536]
    if b"\0" in sample:
        raise DocumentError(NOT_DOCUMENT)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError:
            raise DocumentError(NOT_DOCUMENT) from None
    controls = sum(1 for ch in text[:65536] if ord(ch) < 32 and ch not in "\n\r\t\f")
    if controls > max(8, len(text[:65536]) // 100):
        raise DocumentError(NOT_DOCUMENT)
    return text.replace("\r\n", "\n").replace("\r", "\n")


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def markdown_sections(text: str) -> list[Section]:
    """Markdown cut at its headings (not inside fenced code); each section titled by its heading path."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []
    fence = ""

    def flush() -> None:
        content = "\n".join(body).strip()
        if content:
            sections.append(Section(" › ".join(title for _, title in path), content))
        body.clear()

    def heading(level: int, title: str) -> None:
        flush()
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, _inline_text(title)))

    lines = text.split("\n")
    for index, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence:
            body.append(line)
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            body.append(line)
            continue
        atx = _ATX.match(line)
        if atx and (atx.group(2) or "").strip():
            heading(len(atx.group(1)), atx.group(2))
            continue
        setext = _SETEXT.match(line)
        if setext and body and body[-1].strip() and not _is_list_or_table(body[-1]) and \
                (index < 2 or not lines[index - 2].strip() or len(body) == 1):
            title = body.pop()
            heading(1 if setext.group(1)[0] == "=" else 2, title)
            continue
        body.append(line)
    flush()
    return sections


def _is_list_or_table(line: str) -> bool:
    return bool(re.match(r"^\s*([-*+]|\d+[.)])\s|^\s*\|", line))


def _inline_text(title: str) -> str:
    """A heading without its Markdown marks (emphasis, links, code)."""
    title = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", title)
    return " ".join(re.sub(r"[*_`]+", "", title).split())


# --------------------------------------------------------------------------- HTML and Word

_DROPPED_TAGS = ("script", "style", "noscript", "template", "nav", "svg", "iframe", "object", "form", "button")


def html_markdown(html: str) -> str:
    """The readable part of an HTML page as Markdown (scripts, styles and navigation left out)."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(_DROPPED_TAGS):
        tag.decompose()
    if soup.head is not None:
        soup.head.decompose()
    root = soup.body or soup
    return MarkdownConverter(heading_style="ATX", bullets="-", strip=["img"]).convert_soup(root)


def _docx_html(data: bytes) -> str:
    import zipfile

    import mammoth

    try:
        result = mammoth.convert_to_html(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        logger.info("A Word file could not be read: %s", type(exc).__name__)
        raise DocumentError("the Word file could not be read (it may be damaged, or not a DOCX file)") from None
    return str(result.value)


# --------------------------------------------------------------------------- PDF

HEADING_SCALE = 1.15  # a line set this much larger than the body text is a heading
MAX_HEADING_WORDS = 14


def _pdf(data: bytes) -> Converted:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):  # "": only a permissions password, which opens it
            raise DocumentError("the PDF is password-protected: upload a copy without a password")
        pages = list(reader.pages)
    except DocumentError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        message = str(exc).lower()
        if "decrypt" in message or "password" in message or "encrypt" in message:
            raise DocumentError("the PDF is password-protected: upload a copy without a password") from None
        logger.info("A PDF could not be read: %s", type(exc).__name__)
        raise DocumentError("the PDF could not be read (it may be damaged)") from None
    starts = _outline_titles(reader)
    sections: list[Section] = []
    headings: list[tuple[float, str]] = []  # the headings above the text so far: (font size, title)
    any_text = False
    for number, page in enumerate(pages, start=1):
        try:
            lines = _page_lines(page)
        except Exception as exc:  # one broken page: the others still count
            logger.info("Page %d of a PDF could not be read: %s", number, type(exc).__name__)
            continue
        any_text = any_text or any(text.strip() for text, _, _ in lines)
        for index, section in enumerate(_page_sections(lines, number, headings, starts.get(number))):
            last = sections[-1] if sections else None
            if index == 0 and last is not None and last.title == section.title and last.page == number - 1:
                # The section goes on from the page before: one section (cited at the page it starts on).
                joiner = "\n\n" if last.text.endswith((".", "!", "?", ":")) else " "
                last.text = f"{last.text}{joiner}{section.text}"
                continue
            sections.append(section)
    if not any_text:
        raise DocumentError("no text found: the PDF holds only images of pages (a scan?); "
                            "upload one with a text layer, or its text")
    return Converted(kind="pdf", sections=sections, pages=len(pages))


def _outline_titles(reader: Any) -> dict[int, str]:
    """Page number -> the title of the last outline entry (bookmark) that starts on it."""
    titles: dict[int, str] = {}

    def walk(items: Any) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item)
                continue
            try:
                number = reader.get_destination_page_number(item) + 1
            except Exception:
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            if title and number > 0:
                titles[number] = title

    try:
        walk(reader.outline)
    except Exception:
        return {}
    return titles


def _page_lines(page: Any) -> list[tuple[str, float, bool]]:
    """The page's lines: ``(text, font size, bold)`` (the size and weight most of its letters have)."""
    pieces: list[tuple[str, float, bool]] = []

    def visit(text: str, cm: Any, tm: Any, font: Any, size: float) -> None:
        if text:
            scale = abs(float(tm[3])) if tm and tm[3] else 1.0
            name = str(font.get("/BaseFont", "")) if font else ""
            pieces.append((text, round(float(size or 0.0) * scale, 1), "bold" in name.lower()))

    page.extract_text(visitor_text=visit)
    lines: list[tuple[str, float, bool]] = []
    letters: Counter[tuple[float, bool]] = Counter()
    current = ""

    def end_line() -> None:
        nonlocal current
        text = " ".join(current.split())
        if text:
            (size, bold), _ = letters.most_common(1)[0] if letters else ((0.0, False), 0)
            lines.append((text, size, bold))
        current = ""
        letters.clear()

    for text, size, bold in pieces:
        parts = text.split("\n")
        for index, part in enumerate(parts):
            if index:
                end_line()
            current += part
            if part.strip():
                letters[(size, bold)] += len(part.strip())
    end_line()
    return lines


def _page_sections(lines: list[tuple[str, float, bool]], page: int, headings: list[tuple[float, str]],
                   bookmark: str | None) -> list[Section]:
    """One page cut at its heading lines, each part titled by the headings above it (``headings``,
    kept from page to page: a larger heading closes the smaller ones). ``bookmark``: the title of
    the outline entry that starts on this page, used when the page shows no heading of its own."""
    letters: Counter[tuple[float, bool]] = Counter()
    for text, size, bold in lines:
        letters[(size, bold)] += len(text)
    body, body_bold = letters.most_common(1)[0][0] if letters else (0.0, False)
    found = [(text, size) for text, size, bold in lines if _is_heading(text, size, bold, body, body_bold)]
    if bookmark and not found:
        headings[:] = [(float("inf"), bookmark)]
    sections: list[Section] = []
    buffer: list[str] = []

    def flush() -> None:
        text = _join_lines(buffer)
        if text:
            sections.append(Section(" › ".join(title for _, title in headings), text, page))
        buffer.clear()

    for text, size, bold in lines:
        if _is_heading(text, size, bold, body, body_bold):
            flush()
            while headings and headings[-1][0] <= size:
                headings.pop()
            headings.append((size, text))
            continue
        buffer.append(text)
    flush()
    return sections


def _is_heading(text: str, size: float, bold: bool, body: float, body_bold: bool) -> bool:
    """A short line that does not end a sentence, set larger than the body text (or bold where it is not)."""
    words = len(text.split())
    return words <= MAX_HEADING_WORDS and not text.endswith((".", ",", ";", ":")) and bool(
        (body and size >= body * HEADING_SCALE) or (bold and not body_bold and words <= 8 and size >= body))


def _join_lines(lines: list[str]) -> str:
    """A PDF's lines as paragraphs: a line that ends a sentence and is shorter than most ends its
    paragraph; words split at a line's end with a hyphen are joined."""
    if not lines:
        return ""
    widths = sorted(len(line) for line in lines)
    full = widths[len(widths) * 3 // 4] if widths else 0
    paragraphs: list[str] = []
    current = ""
    for line in lines:
        if current.endswith("-") and line[:1].islower():
            current = current[:-1] + line
        else:
            current = f"{current} {line}" if current else line
        if line.endswith((".", "!", "?", ":")) and len(line) < full * 0.8:
            paragraphs.append(current)
            current = ""
    if current:
        paragraphs.append(current)
    return "\n\n".join(paragraphs).strip()
