"""``GET /_grobot/images/<id>``: the images of Test Chat runs, served by the web app itself.

A tool's image (an image-generation MCP server's PNG) and a tester's uploaded image are stored
with their run (:mod:`grobot.core.services.run_images`); the page shows them from here, so the
browser never fetches an image from another host (the CSP's ``img-src`` stays ``'self' data:
blob:``). The request needs the session cookie of a user who may see the run: an admin, or the
tester whose Test Chat run it is, on a bot they may see; anything else answers 404, as an image
that does not exist does. Only PNG, JPEG, GIF and WebP are ever stored (checked by their bytes),
sent with their own type, ``nosniff`` and a CSP of their own that runs nothing.
"""

from __future__ import annotations

import asyncio
import logging
import re

from starlette.types import ASGIApp, Receive, Scope, Send

from grobot.core.db import session_scope
from grobot.core.errors import GroBotError
from grobot.core.models import Role
from grobot.core.services import run_images, users
from grobot.core.tools.images import IMAGE_TYPES
from grobot.web_session import session_from_cookie_header

logger = logging.getLogger(__name__)

IMAGES_PATH = "/_grobot/images/"
_ID = re.compile(r"^/_grobot/images/(\d{1,12})$")


def image_url(image_id: int) -> str:
    """Where the page loads image ``image_id`` (the backend's own origin: the page's in prod)."""
    from grobot.web_session import _frontend_served_by_backend

    if _frontend_served_by_backend():
        return f"{IMAGES_PATH}{image_id}"
    from reflex.config import get_config

    return f"{get_config().api_url.rstrip('/')}{IMAGES_PATH}{image_id}"


def read_image(token: str, image_id: int) -> tuple[str, bytes, str] | None:
    """``(type, bytes, name)`` of image ``image_id`` when the session ``token`` may see it, else None
    (blocking)."""
    try:
        with session_scope(readonly=True) as session:
            user = users.authorize(token, Role.ADMIN, Role.TESTER, session=session)
            bot_id = run_images.bot_of(image_id, session=session)
            if bot_id is None:
                return None
            users.visible_bot(user, bot_id, session=session)  # NotFoundError for a bot they may not see
            owner = None if user.role == Role.ADMIN.value else user.id
            image = run_images.read(image_id, session=session, app_user_id=owner)
            return image.mime_type, bytes(image.data), image.name
    except GroBotError:
        return None


async def _respond(send: Send, status: int, body: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class RunImagesEndpoint:
    """Serves ``/_grobot/images/<id>`` (see the module); passes every other request on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope.get("type") != "http" or not path.startswith(IMAGES_PATH):
            await self.app(scope, receive, send)
            return
        match = _ID.match(path)
        if scope.get("method") not in ("GET", "HEAD"):
            await _respond(send, 405, headers=[(b"allow", b"GET, HEAD")])
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        token = session_from_cookie_header(headers.get("cookie", ""))
        found = await asyncio.to_thread(read_image, token, int(match.group(1))) if match and token else None
        if found is None:
            await _respond(send, 404, headers=[(b"cache-control", b"no-store")])
            return
        kind, data, name = found
        if kind not in IMAGE_TYPES:  # never stored: checked by its bytes when it was kept
            await _respond(send, 404, headers=[(b"cache-control", b"no-store")])
            return
        safe_name = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "image"
        await _respond(send, 200, data if scope.get("method") == "GET" else b"", [
            (b"content-type", kind.encode()),
            (b"content-disposition", f'inline; filename="{safe_name}"'.encode()),
            (b"cache-control", b"private, max-age=86400"),
            (b"content-security-policy", b"default-src 'none'; sandbox"),
        ])


def run_images_endpoint(app: ASGIApp) -> ASGIApp:
    """``rx.App(api_transformer=...)``: the run images endpoint."""
    return RunImagesEndpoint(app)
