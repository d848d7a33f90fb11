"""Images that pass through GroBot: what a tool returns (to Discord as an attachment, to Test Chat
as a preview the web app serves itself) and what a tester sends with a message.

Only PNG, JPEG, GIF and WebP are kept, known by their first bytes (never by what the sender
declares: an SVG, which a browser could run as a page, or an HTML file named ``.png`` is refused),
and at most :data:`MAX_IMAGE_BYTES` each.
"""

from __future__ import annotations

import base64
import binascii
import re

from grobot.core.errors import ValidationError
from grobot.core.tools.base import ToolImage
from grobot.core.wording import human_size

MAX_IMAGE_BYTES = 8 * 1024 * 1024  # Discord takes 10 MiB per attachment without boosts
MAX_IMAGES_PER_RUN = 4
IMAGE_TYPES = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def image_type(data: bytes) -> str | None:
    """The type of an image by its first bytes (None: not a PNG, JPEG, GIF or WebP)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def checked_image(data: bytes, *, name: str = "") -> ToolImage:
    """``data`` as a :class:`ToolImage`, or :class:`ValidationError` saying plainly why it is not used."""
    kind = image_type(data)
    if kind is None:
        raise ValidationError("it is not a PNG, JPEG, GIF or WebP image")
    if len(data) > MAX_IMAGE_BYTES:
        raise ValidationError(f"it is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MiB")
    return ToolImage(mime_type=kind, data=data, name=file_name(name, kind))


def decoded_image(encoded: str, *, name: str = "") -> ToolImage:
    """An image sent as base64 (MCP's ``ImageContent``), checked."""
    if len(encoded) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise ValidationError(f"it is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MiB")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError("its data is not valid base64") from None
    return checked_image(data, name=name)


def file_name(name: str, kind: str) -> str:
    """A safe file name for an image of type ``kind`` ("image.png" when ``name`` gives none)."""
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in (name or "").rsplit("/", 1)[-1].rsplit(".", 1)[0])
    return f"{stem.strip('_')[:60] or 'image'}.{IMAGE_TYPES[kind]}"


# What :func:`describe` writes, found again in a tool's result (a reply need not restate an image: it is shown).
DESCRIBED = re.compile(r"\s*\[image [^\]\n]*: shown to the user with the answer\]")


def describe(image: ToolImage) -> str:
    """What the model reads in place of an image it cannot see."""
    return f"[image {image.name} ({image.mime_type}, {human_size(len(image.data))}): shown to the user with the answer]"
