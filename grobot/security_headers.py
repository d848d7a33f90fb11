"""Security headers on every HTTP response of the web app (issue 17).

``reflex run --env prod`` (``scripts/run.sh``, the default) serves the built frontend and the
backend from one Starlette app on one port; :func:`security_headers` wraps that app (``rx.App``'s
``api_transformer``), so every page, asset, upload and API answer carries:

- ``Content-Security-Policy``: scripts only from the app's own origin plus the inline
  bootstrap scripts of the build, allowed one by one by their SHA-256 hash (no
  ``'unsafe-inline'`` for scripts, so injected ``<script>``, ``onerror=`` or ``javascript:``
  never run); ``'unsafe-eval'`` because Reflex runs ``rx.call_script`` with ``eval``; styles
  ``'unsafe-inline'`` because Emotion and Radix set styles at run time; images, fonts,
  connections (the websocket), workers only from the app itself (plus ``data:``/``blob:``
  images and fonts); no frames, no plugins, no ``<base>`` elsewhere, forms only to the app,
  and no page may frame it (``frame-ancestors 'none'``);
- ``X-Frame-Options: DENY``, ``X-Content-Type-Options: nosniff``,
  ``Referrer-Policy: no-referrer``, ``Cross-Origin-Opener-Policy: same-origin``,
  ``Permissions-Policy`` (no camera, microphone, geolocation).

In ``GROBOT_WEB_MODE=dev`` the pages come from Vite's dev server, which this does not wrap.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

_INLINE_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S | re.I)

STATIC_HEADERS: tuple[tuple[str, str], ...] = (
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
    ("permissions-policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()"),
)


def inline_script_hashes(html: str) -> set[str]:
    """The CSP source expressions (``'sha256-...'``) of the inline scripts of one HTML page."""
    hashes: set[str] = set()
    for match in _INLINE_SCRIPT.finditer(html):
        if re.search(r"\bsrc\s*=", match.group("attrs"), re.I):
            continue
        digest = hashlib.sha256(match.group("body").encode("utf-8")).digest()
        hashes.add(f"'sha256-{base64.b64encode(digest).decode('ascii')}'")
    return hashes


def content_security_policy(script_hashes: set[str] | frozenset[str] = frozenset()) -> str:
    """The policy of every response (``script_hashes``: the build's inline scripts)."""
    scripts = " ".join(["'self'", "'unsafe-eval'", *sorted(script_hashes)])
    directives = [
        "default-src 'self'",
        f"script-src {scripts}",
        "script-src-attr 'none'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "media-src 'self'",
        "worker-src 'self' blob:",
        "manifest-src 'self'",
        "object-src 'none'",
        "frame-src 'none'",
        "child-src 'none'",
        "frame-ancestors 'none'",
        "base-uri 'self'",
        "form-action 'self'",
    ]
    return "; ".join(directives)


def built_frontend_dir() -> Path:
    """Where ``reflex export``/``run --env prod`` puts the static frontend (``.web/build/client``)."""
    from reflex import constants
    from reflex.utils import prerequisites

    return Path(prerequisites.get_web_dir()) / constants.Dirs.STATIC


class _PolicyCache:
    """The policy for the current build, recomputed when its HTML files change."""

    def __init__(self, directory: Callable[[], Path]) -> None:
        self._directory = directory
        self._lock = threading.Lock()
        self._signature: tuple[tuple[str, float], ...] | None = None
        self._policy = content_security_policy()
        self._checked_at = float("-inf")

    RECHECK_SECONDS = 5.0  # how often the build's files are looked at again

    def _current_signature(self, root: Path) -> tuple[tuple[str, float], ...]:
        try:
            return tuple(sorted((str(p), p.stat().st_mtime) for p in root.rglob("*.html")))
        except OSError:
            return ()

    def policy(self) -> str:
        now = time.monotonic()
        if now - self._checked_at < self.RECHECK_SECONDS and self._signature is not None:
            return self._policy
        self._checked_at = now
        root = self._directory()
        signature = self._current_signature(root)
        with self._lock:
            if signature != self._signature:
                hashes: set[str] = set()
                for path_text, _mtime in signature:
                    try:
                        hashes |= inline_script_hashes(Path(path_text).read_text(encoding="utf-8", errors="replace"))
                    except OSError:
                        continue
                if not signature:
                    logger.warning("No built frontend in %s: the CSP allows no inline script", root)
                self._policy = content_security_policy(hashes)
                self._signature = signature
            return self._policy


class SecurityHeadersMiddleware:
    """ASGI middleware adding the security headers to every HTTP response."""

    def __init__(self, app: ASGIApp, directory: Callable[[], Path] = built_frontend_dir) -> None:
        self.app = app
        self._cache = _PolicyCache(directory)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        policy = self._cache.policy()

        async def send_with_headers(message: Message) -> None:
            if message.get("type") == "http.response.start":
                headers = list(message.get("headers") or [])
                present = {name.lower() for name, _value in headers}
                extra = [("content-security-policy", policy), *STATIC_HEADERS]
                for name, value in extra:
                    if name.encode("latin-1") not in present:
                        headers.append((name.encode("latin-1"), value.encode("latin-1")))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def security_headers(app: ASGIApp) -> ASGIApp:
    """``rx.App(api_transformer=...)``: wrap the whole backend (frontend included in prod)."""
    return SecurityHeadersMiddleware(app)
