"""The supervisor's HTTP servers on 127.0.0.1 (the memory service, the bot link)."""

from __future__ import annotations

from aiohttp import web


async def serve(app: web.Application, host: str, port: int = 0) -> tuple[web.AppRunner, int]:
    """Run ``app`` on ``host:port`` (0: an ephemeral port) on the running loop; the runner and the port."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
    return runner, sockets[0].getsockname()[1]
