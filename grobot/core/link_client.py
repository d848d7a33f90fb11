"""The web app's and the CLI's end of a supervisor's link, and where each supervisor's link listens.

Each supervisor advertises its link in one ``setting`` row ``supervisor_link:<supervisor id>``
(:class:`~grobot.core.advertised.AdvertisedRows`), written when the link starts and removed when
it stops. :class:`AdminLink` sends a live one on this host one request with the admin token
(:mod:`grobot.core.link_scope`), on a blocking socket (:meth:`AdminLink.call`: the services, the
CLI, the web app's handlers in a thread) or on the event loop (:meth:`AdminLink.ask`, and
:meth:`AdminLink.stream` for an answer that is a stream: Test Chat's events). Bot processes keep
one connection of their own (:class:`bot_worker.bot_link.BotLinkClient`) on the same wire
(:mod:`grobot.core.link_wire`).

A stream's answer comes in frames ``{"id", "status": 200, "body": {"item": ...}, "stream": true}``,
one per item, then ``{"id", "status", "body", "end": true}`` (a status other than 200: the stream
failed); any other first answer is an ordinary one (a refusal, an error).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from sqlmodel import Session

from grobot.core import link_wire
from grobot.core.advertised import LIVE_SECONDS, AdvertisedRows

logger = logging.getLogger(__name__)

KEY_PREFIX = "supervisor_link:"
CONNECT_TIMEOUT = 0.5
ROWS = AdvertisedRows(KEY_PREFIX)


def advertise(supervisor_id: str, url: str, *, session: Session) -> None:
    """Record that ``supervisor_id``'s link listens at ``url``."""
    ROWS.write(supervisor_id, {"url": url}, session=session)


def withdraw(supervisor_id: str, *, session: Session) -> None:
    ROWS.withdraw(supervisor_id, session=session)


def prune_orphans(*, session: Session) -> int:
    """Remove the rows of supervisors that are gone (crashed, then forgotten by the sweep)."""
    return ROWS.prune_orphans(session=session)


def find_url(*, session: Session, live_seconds: float = LIVE_SECONDS) -> str | None:
    """The link of a live supervisor on this host (the most recently seen), or None."""
    for value in ROWS.live(session=session, live_seconds=live_seconds):
        if value.get("url"):
            return str(value["url"])
    return None


class LinkError(Exception):
    """The link answered a request with an error: ``status`` (as HTTP's) and its message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class AdminLink:
    """Requests to the link at ``url`` with the admin token, one connection each."""

    def __init__(self, url: str, *, timeout: float = 30.0, token: str | None = None) -> None:
        self.url = url
        self.timeout = timeout
        self._token = token

    def call(self, group: str, path: str, body: dict[str, Any], *, bot_id: int | None = None) -> tuple[int, dict[str, Any]]:
        """``(status, answer)`` of operation ``path`` of ``group``; raises ``ConnectionError`` (an
        ``OSError``) when the link cannot be reached or does not answer within the timeout."""
        from grobot.core.link_scope import admin_token

        token = self._token if self._token is not None else admin_token()
        address = link_wire.address(self.url)  # a mangled address: ValueError
        try:
            with socket.create_connection(address, timeout=CONNECT_TIMEOUT) as sock:
                sock.settimeout(self.timeout)
                sock.sendall(link_wire.encode({"token": token}) + link_wire.encode(
                    {"id": 1, "bot": bot_id, "group": group, "path": path, "body": body}))
                answer = link_wire.read_frame_blocking(sock)
        except (OSError, ValueError) as exc:
            raise ConnectionError(f"the supervisor link did not answer ({type(exc).__name__})") from exc
        data = answer.get("body")
        return int(answer.get("status") or 500), data if isinstance(data, dict) else {}

    def _request(self, group: str, path: str, body: dict[str, Any], bot_id: int | None) -> bytes:
        from grobot.core.link_scope import admin_token

        token = self._token if self._token is not None else admin_token()
        return link_wire.encode({"token": token}) + link_wire.encode(
            {"id": 1, "bot": bot_id, "group": group, "path": path, "body": body})

    @contextlib.asynccontextmanager
    async def _opened(self, request: bytes, connect_timeout: float) -> AsyncIterator[asyncio.StreamReader]:
        host, port = link_wire.address(self.url)
        try:
            async with asyncio.timeout(connect_timeout):
                reader, writer = await asyncio.open_connection(host, port, limit=link_wire.MAX_FRAME)
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(f"the supervisor link did not answer ({type(exc).__name__})") from exc
        try:
            writer.write(request)
            yield reader
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def ask(self, group: str, path: str, body: dict[str, Any], *, bot_id: int | None = None,
                  connect_timeout: float = CONNECT_TIMEOUT) -> tuple[int, dict[str, Any]]:
        """:meth:`call` on the event loop (within this client's timeout)."""
        try:
            async with asyncio.timeout(self.timeout), self._opened(self._request(group, path, body, bot_id),
                                                                   connect_timeout) as reader:
                answer = await link_wire.read_frame(reader)
        except (OSError, ValueError, TimeoutError, asyncio.IncompleteReadError) as exc:
            raise ConnectionError(f"the supervisor link did not answer ({type(exc).__name__})") from exc
        data = answer.get("body")
        return int(answer.get("status") or 500), data if isinstance(data, dict) else {}

    async def stream(self, group: str, path: str, body: dict[str, Any], *, bot_id: int | None = None,
                     connect_timeout: float = CONNECT_TIMEOUT) -> AsyncGenerator[Any, None]:
        """The items of a streamed answer as they come (no read timeout: a stream may stay silent for
        minutes). Raises :class:`LinkError` when the link answers with an error instead (or the stream
        fails), ``ConnectionError`` when the line breaks."""
        async with self._opened(self._request(group, path, body, bot_id), connect_timeout) as reader:
            while True:
                try:
                    frame = await link_wire.read_frame(reader)
                except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
                    raise ConnectionError(f"the supervisor link broke ({type(exc).__name__})") from exc
                data: dict[str, Any] = frame["body"] if isinstance(frame.get("body"), dict) else {}
                status = int(frame.get("status") or 500)
                if frame.get("stream") and status == 200:
                    yield data.get("item")
                    continue
                if status != 200:
                    raise LinkError(status, str(data.get("error") or f"status {status}"))
                return  # the end of the stream
