"""The supervisor's HTTP server on 127.0.0.1 (the Test Chat runner's)."""

from __future__ import annotations

import logging

from aiohttp import web

logger = logging.getLogger(__name__)


def bearer_token(request: web.Request) -> str:
    """The token of the request's ``Authorization: Bearer ...`` header ("" without one)."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return given.strip() if scheme.lower() == "bearer" else ""


class LocalServer:
    """Base of a server that runs an aiohttp application on ``host:port`` (0: an ephemeral
    port) on the running event loop; ``url`` is ``http://host:port`` once it listens."""

    name = "Local server"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def serve(self, app: web.Application) -> str:
        """Listen; returns the base URL."""
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []  # the asyncio.Server it listens with
        self._runner, self.port = runner, sockets[0].getsockname()[1]
        self.url = f"http://{self.host}:{self.port}"
        logger.info("%s listening on %s", self.name, self.url)
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
