"""The supervisor's HTTP servers on 127.0.0.1 (the memory service, the bot link)."""

from __future__ import annotations

from aiohttp import web


class LocalServer:
    """An aiohttp application served on ``host:port`` (0: an ephemeral port) on the running loop."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self, app: web.Application) -> str:
        """Listen; returns the base URL (``http://host:port``)."""
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
        await site.start()
        sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
        self._runner, self.port = runner, sockets[0].getsockname()[1]
        self.url = f"http://{self.host}:{self.port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
