"""The web app's and the CLI's end of a supervisor's link, and where each supervisor's link listens.

Each supervisor advertises what it serves on 127.0.0.1 in one ``setting`` row
``supervisor_link:<supervisor id>`` (:class:`~grobot.core.advertised.AdvertisedRows`): its link's
address, and its Test Chat runner's (:mod:`grobot.core.tester_chat_link`), written once both started
and removed when it stops. :class:`AdminLink` finds a live one on this host and sends it one request on a blocking
socket with the admin token (:mod:`grobot.core.link_scope`): the services, the CLI and the web
app's handlers (in a thread) call it. Bot processes keep one connection of their own
(:class:`bot_worker.bot_link.BotLinkClient`) on the same wire (:mod:`grobot.core.link_wire`).
"""

from __future__ import annotations

import logging
import socket
from typing import Any

from sqlmodel import Session

from grobot.core import link_wire
from grobot.core.advertised import LIVE_SECONDS, AdvertisedRows

logger = logging.getLogger(__name__)

KEY_PREFIX = "supervisor_link:"
CONNECT_TIMEOUT = 0.5
ROWS = AdvertisedRows(KEY_PREFIX)


def advertise(supervisor_id: str, url: str, *, session: Session, test_chat: str = "") -> None:
    """Record that ``supervisor_id``'s link listens at ``url`` ("": it did not start) and its Test Chat
    runner at ``test_chat`` ("": none)."""
    ROWS.write(supervisor_id, {"url": url, "test_chat": test_chat}, session=session)


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


class AdminLink:
    """Requests to the link at ``url`` with the admin token, one connection each (blocking)."""

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
