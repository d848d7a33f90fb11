"""The supervisor link's wire: length-prefixed JSON frames on one TCP connection per client (a bot
process, the web app, the CLI).

Each frame is a 4-byte big-endian length and that many bytes of JSON. A client opens with a
hello frame, ``{"token": ...}``, then sends requests, ``{"id", "bot", "group", "path", "body"}``
(``group``: the operation group, ``bot`` when absent; see :mod:`grobot.core.link_scope`), on the
same connection as it likes; the supervisor answers each with ``{"id", "status", "body"}``
(``status`` as HTTP's: 200, 400, 401, 403, 404, 500), in the order they finish. An answer with
``"more": true`` is followed by a second one for the same request, ``{"id", "status", "body",
"part": 2}``: what the supervisor looks up after the first (a message's memories and tool
scores come after its read, which the bot goes on with meanwhile).

It replaced HTTP (aiohttp on both ends) because every message a bot answers waits for one
round trip of it before the model starts: on the 2-core machine of ``bench/fleet.py`` an
aiohttp request and answer took 2.6-2.9 ms after a pause, these frames 0.8-1.4 ms.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any
from urllib.parse import urlsplit

import orjson

MAX_FRAME = 32 * 1024 * 1024  # a run's events, a batch of log records
HEADER = struct.Struct(">I")
SCHEME = "tcp"


class FrameError(ValueError):
    """A frame that is too large or not a JSON object."""


def encode(value: dict[str, Any]) -> bytes:
    """One frame of ``value`` (a value JSON cannot hold, such as a datetime, crosses as its ``str``)."""
    data = orjson.dumps(value, default=str)
    if len(data) > MAX_FRAME:
        raise FrameError(f"a frame of {len(data):,} bytes is over the link's {MAX_FRAME:,}")
    return HEADER.pack(len(data)) + data


def decode(data: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FrameError(f"a frame that is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise FrameError("a frame that is not a JSON object")
    return value


def frame_size(header: bytes) -> int:
    (size,) = HEADER.unpack(header)
    if size > MAX_FRAME:
        raise FrameError(f"a frame of {size:,} bytes is over the link's {MAX_FRAME:,}")
    return size


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any]:
    """The next frame; raises ``asyncio.IncompleteReadError`` when the other end closed."""
    size = frame_size(await reader.readexactly(HEADER.size))
    return decode(await reader.readexactly(size))


def read_frame_blocking(sock: socket.socket) -> dict[str, Any]:
    """The next frame from a blocking socket; raises ``ConnectionError`` when the other end closed."""
    return decode(_read_exactly(sock, frame_size(_read_exactly(sock, HEADER.size))))


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the supervisor closed the link")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def address(url: str) -> tuple[str, int]:
    """``(host, port)`` of a link address (``tcp://127.0.0.1:PORT``)."""
    parts = urlsplit(url)
    if not parts.hostname or not parts.port:
        raise ValueError(f"not a bot link address: {url!r}")
    return parts.hostname, parts.port


def url_of(host: str, port: int) -> str:
    return f"{SCHEME}://{host}:{port}"
