"""Small documents made on the spot for the tests and ``bench/documents.py``: a PDF written from
Markdown with fpdf2 (headings larger, in the PDF's outline; optionally password-protected), a
"scanned" PDF (a page that is only a picture), and a Word file (DOCX) with heading styles."""

from __future__ import annotations

import io
import zipfile
from xml.sax.saxutils import escape


def pdf_bytes(markdown: str, *, password: str | None = None, font_size: float = 12.0) -> bytes:
    """``markdown`` as a PDF: ``#`` headings in larger bold type and in the outline, paragraphs and
    ``-`` items as text, page breaks where the page is full."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(True, margin=20)
    pdf.set_margins(22, 20, 22)
    pdf.add_page()
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            pdf.set_font("Helvetica", size=font_size)
            pdf.multi_cell(0, font_size * 0.55, " ".join(paragraph), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(font_size * 0.3)
            paragraph.clear()

    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            flush()
            level = len(stripped) - len(stripped.lstrip("#"))
            title = stripped.lstrip("#").strip()
            pdf.start_section(title, level=max(0, level - 1))
            pdf.set_font("Helvetica", style="B", size=font_size + 8 - 2 * min(level, 3))
            pdf.multi_cell(0, font_size * 0.7, title, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(font_size * 0.2)
        elif not stripped:
            flush()
        elif stripped.startswith("- "):
            flush()
            paragraph.append("- " + stripped[2:])
            flush()
        else:
            paragraph.append(stripped)
    flush()
    if password is not None:
        pdf.set_encryption(owner_password=password + "-owner", user_password=password)
    return bytes(pdf.output())


def scanned_pdf_bytes(pages: int = 2) -> bytes:
    """A PDF whose pages are pictures only (as a scanner makes them): no text layer."""
    from fpdf import FPDF
    from PIL import Image, ImageDraw

    pdf = FPDF(format="A4")
    for number in range(pages):
        picture = Image.new("L", (400, 560), 255)
        draw = ImageDraw.Draw(picture)
        for row in range(40, 520, 18):  # lines of "text" drawn as pixels
            draw.rectangle((40, row, 360 - (row * 7 + number * 13) % 90, row + 7), fill=30)
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG")
        pdf.add_page()
        pdf.image(buffer, x=0, y=0, w=210, h=297)
    return bytes(pdf.output())


_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def docx_bytes(paragraphs: list[tuple[str | None, str]]) -> bytes:
    """A Word document of ``(style, text)`` paragraphs; style ``Heading1``..``Heading3`` or None (body)."""
    body = "".join(
        (f'<w:p><w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else "<w:p>")
        + f'<w:r><w:t xml:space="preserve">{escape(text)}</w:t></w:r></w:p>'
        for style, text in paragraphs)
    styles = "".join(f'<w:style w:type="paragraph" w:styleId="Heading{i}"><w:name w:val="heading {i}"/></w:style>'
                     for i in (1, 2, 3))
    files = {
        "[Content_Types].xml":
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/'
            'document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main'
            '+xml"/><Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'wordprocessingml.styles+xml"/></Types>',
        "_rels/.rels":
            '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
            '2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            'relationships/officeDocument" Target="word/document.xml"/></Relationships>',
        "word/_rels/document.xml.rels":
            '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
            '2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            'relationships/styles" Target="styles.xml"/></Relationships>',
        "word/document.xml": f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{_W}"><w:body>{body}'
                             "</w:body></w:document>",
        "word/styles.xml": f'<?xml version="1.0" encoding="UTF-8"?><w:styles xmlns:w="{_W}">{styles}</w:styles>',
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()
