"""The web app's session cookie (issue 17): the signed session token lives in an ``HttpOnly``
cookie that no script of the page can read, instead of ``localStorage``.

Reflex talks to the browser over one websocket, and a websocket message cannot set a cookie.
So a successful login (``LoginState.submit``, over the websocket) hands the page a *handoff*:
the session token encrypted for this purpose, valid for :data:`HANDOFF_TTL_SECONDS`. The page
posts it to ``/_grobot/session`` (:class:`WebSessionMiddleware`), which answers with the cookie
(``HttpOnly; SameSite=Strict; Path=/``, ``Secure`` over HTTPS), then reloads: the new websocket
connection carries the cookie in its handshake, where the state reads it
(``AppState.session_token``, from ``router.headers.cookie``, which Reflex never sends to the
browser). ``DELETE /_grobot/session`` clears it (signing out).

A cookie rides along with any request to the app, so the middleware also refuses a websocket, an
upload or any other request whose ``Origin`` is another site: a page elsewhere cannot act with the
admin's cookie (and ``rxconfig.py`` lets no other origin read a response: no CORS for it).
``SameSite=Strict`` keeps the cookie off cross-site requests as well. An upload (``/_upload``)
needs a session cookie of its own, and its handler acts with that session
(:func:`upload_session`), not with the one of the tab whose client token the request names.

A tab's client token is no secret (it is in the websocket's URL), but its state holds what its
user saw. A tab that showed a user's data (:func:`claim_tab`) opens again only with that user's
cookie: a websocket naming it with another cookie, or none, gets a new, empty state instead, and an
upload naming it is refused.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import time
import uuid
from collections import OrderedDict
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from starlette.types import ASGIApp, Receive, Scope, Send

from grobot.core import security

logger = logging.getLogger(__name__)

SESSION_COOKIE = "grobot_session"
SESSION_PATH = "/_grobot/session"
HANDOFF_TTL_SECONDS = 60
MAX_BODY_BYTES = 8192
_HANDOFF_CONTEXT = b"grobot web session handoff v1\x00"
_UPLOAD_PATH = "/_upload"
_EVENT_PATH = "/_event"
TAB_OWNERS_MAX = 100_000
# The session cookie of each upload request being handled, by the client token it names.
_upload_sessions: dict[str, str] = {}
_upload_locks: dict[str, tuple[asyncio.Lock, int]] = {}
# The user whose data each tab's state shows, by its client token (the newest last).
_tab_owners: OrderedDict[str, int] = OrderedDict()


def upload_session(client_token: str) -> str:
    """The session token of the cookie of the upload request being handled for the tab
    ``client_token`` ("" when there is none: an upload handler reached without an upload request)."""
    return _upload_sessions.get(client_token, "")


def claim_tab(client_token: str, user_id: int) -> None:
    """The state of the tab ``client_token`` now shows what user ``user_id`` may see: it opens again
    (a websocket, an upload naming it) only with that user's session cookie. Its client token is in
    the websocket's URL, so in a proxy's log: anyone else naming it gets a new, empty state."""
    if not client_token or user_id <= 0:
        return
    _tab_owners[client_token] = user_id
    _tab_owners.move_to_end(client_token)
    while len(_tab_owners) > TAB_OWNERS_MAX:  # the oldest tabs (Reflex forgets their states long before)
        _tab_owners.popitem(last=False)


def _cookie_user(scope: Scope) -> tuple[str, int]:
    """The request's session token and the user it names (0: none, or not a valid session)."""
    token = session_from_cookie_header(_headers(scope).get("cookie", ""))
    claims = security.verify_session(token)
    return token, claims.user_id if claims is not None else 0


def _foreign_tab(client_token: str, scope: Scope) -> bool:
    """Whether the tab ``client_token`` shows another user's data than this request's cookie's."""
    owner = _tab_owners.get(client_token)
    return owner is not None and owner != _cookie_user(scope)[1]


def _own_tab(scope: Scope) -> Scope:
    """The websocket's scope, with a new client token when the one it names is another user's tab."""
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    token = next((value for name, value in query if name == "token"), "")
    if not _foreign_tab(token, scope):
        return scope
    logger.warning("A tab was opened again without the session of its user: it starts afresh")
    fresh = [(name, str(uuid.uuid4()) if name == "token" else value) for name, value in query]
    return {**scope, "query_string": urlencode(fresh).encode("latin-1")}


def _handoff_fernet() -> MultiFernet:
    """Keys for handoffs only, derived from the secret keys (a handoff is never a secret's ciphertext)."""
    return MultiFernet([
        Fernet(base64.urlsafe_b64encode(hmac.new(key.encode(), _HANDOFF_CONTEXT, hashlib.sha256).digest()))
        for key in security.current_keys()
    ])


def make_handoff(session_token: str, *, now: float | None = None) -> str:
    """The short-lived value the login page trades for the session cookie."""
    moment = int(time.time() if now is None else now)
    payload = json.dumps({"session": session_token}, separators=(",", ":")).encode()
    return _handoff_fernet().encrypt_at_time(payload, moment).decode()


def read_handoff(handoff: str, *, now: float | None = None) -> str | None:
    """The session token of a valid, unexpired handoff (None for anything else)."""
    moment = int(time.time() if now is None else now)
    try:
        payload = json.loads(_handoff_fernet().decrypt_at_time(handoff.encode(), HANDOFF_TTL_SECONDS, moment))
    except (InvalidToken, ValueError, TypeError, AttributeError):
        return None
    token = payload.get("session") if isinstance(payload, dict) else None
    return token if isinstance(token, str) and security.verify_session(token) is not None else None


def session_from_cookie_header(cookie_header: str) -> str:
    """The session token in a ``Cookie`` header ("" when there is none)."""
    if not cookie_header:
        return ""
    try:
        jar = SimpleCookie()
        jar.load(cookie_header)
    except Exception:  # a malformed header: no session
        return ""
    morsel = jar.get(SESSION_COOKIE)
    return morsel.value if morsel is not None else ""


def _frontend_served_by_backend() -> bool:
    """True in ``GROBOT_WEB_MODE=prod`` (one port), False with Vite's dev server in front."""
    from reflex.environment import environment

    return bool(environment.REFLEX_MOUNT_FRONTEND_COMPILED_APP.get())


def _endpoint_js() -> str:
    """A JavaScript expression for the URL of :data:`SESSION_PATH` on the backend.

    In prod the page and the backend share their origin (a relative URL, whatever proxy is in
    front); in dev the backend has its own port (``api_url``), on the page's host name as
    Reflex's own client does it.
    """
    if _frontend_served_by_backend():
        return json.dumps(SESSION_PATH)
    from reflex.config import get_config

    return (f"((u) => {{ if (['localhost', '127.0.0.1', '0.0.0.0'].includes(u.hostname)) "
            f"{{ u.hostname = window.location.hostname; }} return u.href; }})"
            f"(new URL({json.dumps(SESSION_PATH)}, {json.dumps(get_config().api_url)}))")


def store_session_script(handoff: str, then: str = "/") -> str:
    """JavaScript for the login page: trade the handoff for the cookie, then load the app
    afresh at ``then`` (a path of the app, checked by the caller)."""
    body = json.dumps(json.dumps({"handoff": handoff}))
    return (
        f"fetch({_endpoint_js()}, {{method: 'POST', credentials: 'include', "
        f"headers: {{'Content-Type': 'application/json'}}, body: {body}}})"
        ".then((response) => { window.sessionStorage.removeItem('token'); "
        f"window.location.replace(response.ok ? {json.dumps(then)} : '/login'); }});"
    )


def clear_session_script(then: str) -> str:
    """JavaScript that drops the cookie (and the tab's Reflex state), then goes to ``then``."""
    return (
        f"fetch({_endpoint_js()}, {{method: 'DELETE', credentials: 'include'}})"
        f".finally(() => {{ window.localStorage.removeItem({json.dumps(SESSION_COOKIE)}); "
        f"window.sessionStorage.removeItem('token'); window.location.replace({json.dumps(then)}); }});"
    )


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}


def _same_site_origin(scope: Scope) -> bool:
    """True unless the request says it comes from a page of another origin."""
    headers = _headers(scope)
    origin = headers.get("origin", "")
    if not origin:
        return True  # not sent by a page of another origin (browsers send it cross-origin)
    host = headers.get("host", "")
    parts = urlsplit(origin)
    if parts.netloc == host:
        return True
    # ``GROBOT_WEB_MODE=dev``: the pages come from Vite's port, the backend has its own.
    if not _frontend_served_by_backend():
        return (parts.hostname or "") == urlsplit(f"//{host}").hostname
    return False


async def _respond(send: Send, status: int, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", b"0"), (b"cache-control", b"no-store"), *(headers or [])]})
    await send({"type": "http.response.body", "body": b""})


def _cookie(value: str, max_age: int, secure: bool) -> tuple[bytes, bytes]:
    parts = [f"{SESSION_COOKIE}={value}", "Path=/", f"Max-Age={max_age}", "HttpOnly", "SameSite=Strict"]
    if secure:
        parts.append("Secure")
    return b"set-cookie", "; ".join(parts).encode("latin-1")


class WebSessionMiddleware:
    """``/_grobot/session`` (set or clear the cookie), the origin check of every request, and the
    uploads' own authorisation (:func:`upload_session`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind, path = scope.get("type"), scope.get("path", "")
        if kind not in ("websocket", "http"):
            await self.app(scope, receive, send)
            return
        if not _same_site_origin(scope):
            logger.warning("Refused a %s from another origin", "websocket" if kind == "websocket" else "request")
            if kind == "websocket":
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008})
            else:
                await _respond(send, 403)
            return
        if kind == "websocket" and path.startswith(_EVENT_PATH):
            scope = _own_tab(scope)
        if kind == "http" and path == SESSION_PATH:
            await self._session(scope, receive, send)
            return
        if kind == "http" and (path == _UPLOAD_PATH or path.startswith(_UPLOAD_PATH + "/")):
            await self._upload(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _upload(self, scope: Scope, receive: Receive, send: Send) -> None:
        """An upload runs with the session of its own request's cookie, never with the one of the tab
        whose client token it names (a token that shows in URLs and logs). Reflex's listing of
        uploaded files (``GET /_upload/...``) serves nothing: GroBot keeps no file there."""
        if scope.get("method") != "POST" or scope.get("path") != _UPLOAD_PATH:
            await _respond(send, 404)
            return
        client_token = _headers(scope).get("reflex-client-token", "")
        session, user_id = _cookie_user(scope)
        if not client_token or not user_id or _foreign_tab(client_token, scope):
            logger.warning("Refused an upload without the session cookie of its tab's user")
            await _respond(send, 403)
            return
        lock, users = _upload_locks.get(client_token, (asyncio.Lock(), 0))
        _upload_locks[client_token] = (lock, users + 1)
        try:
            async with lock:  # one upload of a tab at a time: each handler reads its own request's session
                _upload_sessions[client_token] = session
                try:
                    await self.app(scope, receive, send)
                finally:
                    _upload_sessions.pop(client_token, None)
        finally:
            lock, users = _upload_locks[client_token]
            if users > 1:
                _upload_locks[client_token] = (lock, users - 1)
            else:
                del _upload_locks[client_token]

    async def _session(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method", "")
        if not _same_site_origin(scope):
            await _respond(send, 403)
            return
        secure = scope.get("scheme") == "https" or _headers(scope).get("x-forwarded-proto") == "https"
        if method == "DELETE":
            await _respond(send, 204, [_cookie("", 0, secure)])
            return
        if method != "POST":
            await _respond(send, 405, [(b"allow", b"POST, DELETE")])
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_BODY_BYTES:
                await _respond(send, 413)
                return
            if not message.get("more_body"):
                break
        try:
            handoff = json.loads(body or b"{}").get("handoff", "")
        except (ValueError, AttributeError):
            handoff = ""
        token = read_handoff(handoff) if isinstance(handoff, str) and handoff else None
        if token is None:
            await _respond(send, 400)
            return
        await _respond(send, 204, [_cookie(token, security.SESSION_TTL_SECONDS, secure)])


def web_session(app: ASGIApp) -> ASGIApp:
    """``rx.App(api_transformer=...)``: the session cookie endpoint and the websocket origin check."""
    return WebSessionMiddleware(app)
