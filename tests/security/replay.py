"""A Reflex websocket client for the attacker's tests: sends any event, as the browser would."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import socketio
from reflex.utils import format as rx_format

from grobot.pages.bot_knowledge_state import KnowledgeState  # imported here: a state is defined in the main thread
from grobot.state.app_state import AppState
from grobot.web_session import SESSION_COOKIE

logger = logging.getLogger(__name__)

NAMESPACE = "/_event"
EVENT_TIMEOUT = 30.0
BARRIER = "replay-barrier"
UPDATE_VARS = "reflex___state____state.reflex___state____update_vars_internal_state.update_vars_internal"


@dataclass
class Sent:
    """One event to send: a handler (or its full name), its arguments, the page it comes from (its
    path, with a query string when the page has one)."""

    handler: Any
    payload: dict[str, Any]
    path: str = "/"

    @property
    def name(self) -> str:
        return self.handler if isinstance(self.handler, str) else rx_format.format_event_handler(self.handler)


def with_session(token: str) -> Sent:
    """Client storage sync (what a browser sends for its ``rx.LocalStorage`` vars), abused to
    set the session: the session lives in an HttpOnly cookie, so this must do nothing."""
    return Sent(UPDATE_VARS, {"vars": {f"{AppState.get_full_name()}.session_token": token}})


def _barrier(marker: str) -> Sent:
    """A harmless event whose update carries ``marker``: the server handles a client's events one
    after the other, so once its update arrives, every event sent before it has been handled."""
    return Sent(KnowledgeState.set_lookup_id, {"value": marker})


async def _replay(url: str, events: list[Sent], session: str | None, origin: str | None, token: str | None,
                  source: str | None, watch: tuple[list[str], float]) -> list[dict[str, Any]]:
    http = None
    if source is not None:  # the attacker's own address (another loopback address than the browser's)
        import aiohttp

        http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(source, 0)))
    client = socketio.AsyncClient(reconnection=False, **({"http_session": http} if http is not None else {}))
    headers = {}
    if session is not None:
        headers["Cookie"] = f"{SESSION_COOKIE}={session}"
    if origin is not None:
        headers["Origin"] = origin
    updates: list[dict[str, Any]] = []
    markers: asyncio.Queue[str] = asyncio.Queue()
    watched, linger = watch
    seen = asyncio.Event()

    barrier = f"{BARRIER}-{uuid.uuid4().hex[:8]}"  # this connection's (a state may hold an earlier one's)

    async def on_event(data: Any) -> None:
        data = json.loads(data) if isinstance(data, str) else data
        text = json.dumps(data)
        if barrier in text:
            markers.put_nowait(text)
        updates.append(data)
        if any(item in text for item in watched):
            seen.set()

    client.on("event", on_event, namespace=NAMESPACE)
    try:
        await client.connect(f"{url}?token={token or uuid.uuid4()}", socketio_path=NAMESPACE, transports=["websocket"],
                             namespaces=[NAMESPACE], wait_timeout=EVENT_TIMEOUT, headers=headers)
        try:
            for number, event in enumerate(events):
                for sent in (event, _barrier(f"{barrier}-{number}")):
                    pathname, _, query = sent.path.partition("?")
                    await client.emit("event", {"name": sent.name, "payload": sent.payload,
                                                "router_data": {"pathname": pathname, "query": dict(parse_qsl(query)),
                                                                "asPath": sent.path}},
                                      namespace=NAMESPACE)
                while f"{barrier}-{number}\"" not in await asyncio.wait_for(markers.get(), timeout=EVENT_TIMEOUT):
                    pass  # the server has handled this event
            if watched and linger > 0:  # a background task's updates come when they come: give them time
                try:
                    await asyncio.wait_for(seen.wait(), timeout=linger)
                except TimeoutError:
                    pass
        finally:
            await client.disconnect()
    finally:
        if http is not None:
            await http.close()
    return updates


def replay(url: str, *events: Sent, session: str | None = None, origin: str | None = None, token: str | None = None,
           source: str | None = None, watch: tuple[list[str], float] = ([], 0.0)) -> list[dict[str, Any]]:
    """Send ``events`` in order on one new connection (opened with ``session`` as its session
    cookie, from ``origin``, as the tab ``token``, from the address ``source``); returns every
    state update received. With ``watch`` (texts, seconds), the connection then stays open until
    an update holds one of the texts or the seconds have passed (what background tasks send).

    Runs in a thread of its own (Playwright's sync API may hold this thread's event loop).
    """
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(_replay(url, list(events), session, origin, token, source,
                                                       watch))).result(timeout=EVENT_TIMEOUT * 10 + watch[1])
