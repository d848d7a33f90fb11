"""The embedded llama.cpp servers of one process: one child process per GGUF file.

The bot worker's supervisor owns one :class:`EmbeddedServers`: it starts the server of every
model the settings name (at start, and on first use), publishes where each listens, restarts
one that dies (1 s doubling to 5 min) or hangs (its ``/health`` unanswered while its process
uses no CPU, for ``hang_seconds``), stops the ones no setting names any more, and stops
them all with the worker. Bot processes never load a model: they call the URL the supervisor
gives them. Each server is ``python -m grobot.core.llm.embedded_runner`` (see there).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from grobot.core.llm import embedded
from grobot.core.llm.embedded import EmbeddedModelError, ServerInfo

logger = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 300.0
BACKOFF_INITIAL = 1.0
BACKOFF_MAX = 300.0
STOP_GRACE_SECONDS = 3.0
HEALTH_TIMEOUT_SECONDS = 3.0
# A server whose /health goes unanswered this long while its process does no work is hung. (A busy
# one may keep /health waiting behind its queued requests, but it uses CPU: it is never taken for hung.)
HANG_SECONDS = 30.0


@dataclass
class _Server:
    model: str
    context: int
    info: ServerInfo
    process: asyncio.subprocess.Process | None = None
    task: asyncio.Task[None] | None = None
    backoff: float = 0.0
    retry_at: float = 0.0
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    stalled_since: float | None = None  # monotonic time since when it has neither answered nor worked
    cpu_seconds: float | None = None  # its process's CPU time at the last check


class EmbeddedServers:
    """Start, watch and stop the llama.cpp servers of this process (create it on its event loop)."""

    def __init__(self, *, threads: int | None = None, parallel: int = 2, log_dir: Path | None = None,
                 start_timeout: float = START_TIMEOUT_SECONDS, hang_seconds: float = HANG_SECONDS) -> None:
        self.threads = threads or embedded.default_threads()
        self.parallel = max(1, parallel)
        self.log_dir = log_dir
        self.start_timeout = start_timeout
        self.hang_seconds = hang_seconds
        self._servers: dict[str, _Server] = {}
        self._lock = threading.Lock()
        self._loop = asyncio.get_running_loop()
        self._closed = False
        self.version = 0  # grows at every change of what :meth:`snapshot` returns

    # ------------------------------------------------------------------ asking for a server
    def request(self, model: str, context_window: int) -> ServerInfo:
        """The server of ``model`` now; one that is not running is started (never blocks; any thread)."""
        with self._lock:
            server = self._servers.get(model)
            if server is None:
                server = self._servers[model] = _Server(model=model, context=context_window,
                                                        info=ServerInfo(model=model, status="starting"))
                self._changed()
                self._loop.call_soon_threadsafe(self._spawn_new, server)
            return server.info

    async def ensure(self, model: str, context_window: int) -> ServerInfo:
        """The server of ``model`` once it is running or has failed (starting it when needed)."""
        self.request(model, context_window)
        server = self._servers[model]
        self._spawn_new(server)  # now, rather than when the loop runs the scheduled start
        if server.task is not None:
            await asyncio.wait({server.task}, timeout=self.start_timeout + 5)
        return server.info

    def snapshot(self) -> list[ServerInfo]:
        with self._lock:
            return [s.info for s in self._servers.values()]

    # ------------------------------------------------------------------ supervision
    async def retain(self, wanted: dict[str, int]) -> None:
        """Start the servers of ``wanted`` (model -> context) and stop the others."""
        for model, context in wanted.items():
            self.request(model, context)
        for model in [m for m in self._servers if m not in wanted]:
            await self._stop(self._servers.pop(model))
            self._changed()
            logger.info("Stopped the embedded model %s: no LLM setting uses it any more", embedded.display_name(model))

    async def check(self) -> None:
        """Restart the servers that died, hang or failed, once their backoff has passed."""
        await self._end_hung()
        now = time.monotonic()
        for server in list(self._servers.values()):
            if server.task is not None and not server.task.done():
                continue
            process = server.process
            if server.info.status == "running" and process is not None and process.returncode is not None:
                tail = " ".join(server.stderr_tail)[-200:]
                logger.error("The embedded model %s stopped (exit code %s)%s; restarting it",
                             embedded.display_name(server.model), process.returncode, f": {tail}" if tail else "")
                self._set(server, ServerInfo(model=server.model, status="error",
                                             error=f"the llama.cpp server stopped (exit code {process.returncode})"))
                server.retry_at = now  # a crash after a good run restarts at once
            if server.info.status == "error" and now >= server.retry_at:
                self._spawn(server)

    async def stop_all(self) -> None:
        self._closed = True
        servers, self._servers = list(self._servers.values()), {}
        await asyncio.gather(*(self._stop(s) for s in servers), return_exceptions=True)

    # ------------------------------------------------------------------ hung servers
    async def _end_hung(self) -> None:
        """Kill the running servers that hang (their requests then fail at once); :meth:`check` restarts them.
        Only a server that used no CPU since the last check is asked for its ``/health``."""
        running = [s for s in self._servers.values()
                   if s.info.status == "running" and s.process is not None and s.process.returncode is None]
        idle = [s for s in running if not self._worked(s)]
        answers = await asyncio.gather(*(_answers_health(s.info.url) for s in idle))
        now = time.monotonic()
        for server, answered in zip(idle, answers, strict=True):
            if answered:
                server.stalled_since = None
                continue
            server.stalled_since = server.stalled_since or now
            if now - server.stalled_since >= self.hang_seconds:
                await self._kill_hung(server, now - server.stalled_since)

    @staticmethod
    def _worked(server: _Server) -> bool:
        """Whether ``server``'s process used CPU since the last check (then it is alive, even with
        ``/health`` waiting behind its queued requests)."""
        assert server.process is not None
        cpu, server.cpu_seconds = server.cpu_seconds, process_cpu_seconds(server.process.pid)
        worked = cpu is not None and server.cpu_seconds is not None and server.cpu_seconds > cpu
        if worked:
            server.stalled_since = None
        return worked

    async def _kill_hung(self, server: _Server, silent: float) -> None:
        logger.error("The embedded model %s did not answer for %.0f s (its llama.cpp server hangs); restarting it",
                     embedded.display_name(server.model), silent)
        process, server.process = server.process, None
        if process is not None and process.returncode is None:
            process.kill()  # hung: it would not act on SIGTERM either
            await process.wait()
        server.stalled_since = server.cpu_seconds = None
        server.retry_at = time.monotonic()
        self._set(server, ServerInfo(model=server.model, status="error",
                                     error=f"the llama.cpp server stopped answering (no answer for {silent:.0f} s)"))

    # ------------------------------------------------------------------ internals
    def _changed(self) -> None:
        self.version += 1

    def _set(self, server: _Server, info: ServerInfo) -> None:
        with self._lock:
            server.info = info
            self._changed()

    def _spawn_new(self, server: _Server) -> None:
        """The first start of a server (asked for from any thread; a later call does nothing)."""
        if server.task is None:
            self._spawn(server)

    def _spawn(self, server: _Server) -> None:
        if self._closed or (server.task is not None and not server.task.done()):
            return
        if self._servers.get(server.model) is not server:
            return
        if server.info.status != "starting":
            self._set(server, ServerInfo(model=server.model, status="starting"))
        server.task = self._loop.create_task(self._start(server))

    async def _start(self, server: _Server) -> None:
        name = embedded.display_name(server.model)
        try:
            path = await asyncio.to_thread(embedded.model_file, server.model)
            url = await self._launch(server, path)
            supports_tools = await _supports_tools(url)
        except EmbeddedModelError as exc:
            await self._stop(server)
            server.backoff = min(max(server.backoff * 2, BACKOFF_INITIAL), BACKOFF_MAX)
            server.retry_at = time.monotonic() + server.backoff
            logger.error("The embedded model %s cannot run: %s", name, exc)
            self._set(server, ServerInfo(model=server.model, status="error", error=str(exc)))
            return
        server.backoff = 0.0
        logger.info("The embedded model %s is served at %s (%d threads, %d parallel requests)", name, url,
                    self.threads, self.parallel)
        self._set(server, ServerInfo(model=server.model, status="running", url=url, supports_tools=supports_tools))

    async def _launch(self, server: _Server, path: Path) -> str:
        args = [sys.executable, "-m", "grobot.core.llm.embedded_runner", "--model-file", str(path),
                "--ctx", str(server.context), "--threads", str(self.threads), "--parallel", str(self.parallel)]
        if server.model == embedded.DEMO_MODEL and embedded.TOOLS_TEMPLATE.is_file():
            args += ["--template", str(embedded.TOOLS_TEMPLATE)]
        try:
            process = await asyncio.create_subprocess_exec(
                *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        except OSError as exc:
            raise EmbeddedModelError(f"the llama.cpp runner could not start: {exc}") from None
        server.process = process
        server.stderr_tail.clear()
        self._loop.create_task(self._drain_stderr(server, process))
        try:
            line = await asyncio.wait_for(process.stdout.readline(), self.start_timeout)  # type: ignore[union-attr]
        except TimeoutError:
            raise EmbeddedModelError(f"llama.cpp did not load {path.name} within {self.start_timeout:.0f} s") from None
        try:
            payload = json.loads(line) if line.strip() else {}
        except ValueError:
            payload = {}
        if payload.get("url"):
            return str(payload["url"]).rstrip("/")
        if payload.get("error"):
            raise EmbeddedModelError(str(payload["error"]))
        await process.wait()
        tail = " ".join(server.stderr_tail)[-200:]
        raise EmbeddedModelError(f"the llama.cpp server exited with code {process.returncode}"
                                 + (f" ({tail})" if tail else ""))

    async def _drain_stderr(self, server: _Server, process: asyncio.subprocess.Process) -> None:
        """Keep the last lines of llama.cpp's own log (it is verbose: written to a file when a log dir is set)."""
        log = None
        if self.log_dir is not None:
            try:
                self.log_dir.mkdir(parents=True, exist_ok=True)
                log = await asyncio.to_thread(open, self.log_dir / "llama-server.log", "ab")  # closed below
            except OSError:
                log = None
        try:
            assert process.stderr is not None
            async for raw in process.stderr:
                if log is not None:
                    log.write(raw)
                text = raw.decode(errors="replace").strip()
                if text and (" E " in text or "error" in text.lower()):
                    server.stderr_tail.append(text)
        except Exception:  # the process is gone
            pass
        finally:
            if log is not None:
                log.close()

    async def _stop(self, server: _Server) -> None:
        if server.task is not None and not server.task.done() and server.task is not asyncio.current_task():
            server.task.cancel()
        process, server.process = server.process, None
        if process is None or process.returncode is not None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()  # the runner leaves when its stdin closes
            process.terminate()
            await asyncio.wait_for(process.wait(), STOP_GRACE_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()
        except ProcessLookupError:
            pass


async def _supports_tools(url: str) -> bool | None:
    """Whether the server's chat template can call tools (llama.cpp's ``/props``); None: unknown."""
    try:
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
            response = await client.get(f"{url}/props")
            data = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    caps = data.get("chat_template_caps") if isinstance(data, dict) else None
    if isinstance(caps, dict) and "supports_tools" in caps:
        return bool(caps["supports_tools"])
    return None


async def _answers_health(url: str) -> bool:
    """Whether llama.cpp's ``/health`` at ``url`` answers within :data:`HEALTH_TIMEOUT_SECONDS`."""
    try:
        async with httpx.AsyncClient(timeout=HEALTH_TIMEOUT_SECONDS, trust_env=False) as client:
            await client.get(f"{url}/health")
    except httpx.HTTPError:
        return False
    return True  # any answer (even 503 "loading") shows its HTTP side is alive


def process_cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) process ``pid`` has used so far (Linux ``/proc``), or None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
