"""Settings read from the environment, with the defaults documented in docs/configuration.md.

This module is the only reader of the environment (a test checks it): every other module
asks :func:`get_settings`. Processes still *write* it for their children (the supervisor
for its bots).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grobot.core.errors import SettingsError


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float | None = None,
            positive: bool = False) -> float:
    """``env[name]`` as a number (unset or blank: ``default``); a clear error names the variable."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number (got {raw!r})") from None
    if positive and value <= 0:
        raise SettingsError(f"{name} must be positive")
    if minimum is not None and value < minimum:
        raise SettingsError(f"{name} must be at least {minimum:g}")
    return value


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """``env[name]`` as a yes/no (``0``, ``false``, ``no``, ``off``: no; unset or blank: ``default``)."""
    raw = env.get(name, "").strip().lower()
    return default if not raw else raw not in ("0", "false", "no", "off")


@dataclass(frozen=True)
class WorkerSettings:
    """The supervisor's and its bot processes' timings, and what a supervisor hands its bots
    in their environment (short timings in tests)."""

    heartbeat_seconds: float = 5.0  # bot heartbeats and lease renewal
    lease_seconds: float = 15.0
    stop_grace_seconds: float = 3.0  # SIGTERM, then SIGKILL
    start_interval: float = 0.08  # stagger between two bot starts
    backoff_initial: float = 1.0
    backoff_max: float = 300.0
    healthy_reset: float = 600.0  # a process up this long resets its backoff
    intent_retry_seconds: float = 60.0
    test_chat_poll_seconds: float = 0.5
    test_chat_concurrency: int = 4
    schedule_poll_seconds: float = 0.5  # a supervisor claims the due scheduled posts this often
    schedule_claim_seconds: float = 5.0  # a claimed run not confirmed within this (renewed) is taken again
    # A run whose post was under way is posted again by another supervisor only this soon after (Discord's
    # nonce dedupe holds "the past few minutes"); later it is dropped, never posted twice.
    schedule_nonce_seconds: float = 120.0
    housekeeping_seconds: float = 300.0
    mcp_refresh_seconds: float = 300.0
    guild_ready_timeout: float = 2.0  # a bot process: wait this long for the guilds after READY
    stream_edit_seconds: float = 1.0  # a bot process: between two edits of a streaming reply
    spawn: str = "fork"  # how bots start: "fork" (from a fork server) or "exec" (an interpreter each)
    memory_preload: bool = True  # the supervisor loads the embedder and Chroma at start (False: on first use)
    trace_timings: bool = False  # a bot process logs its per-message timings at DEBUG
    # Set by the supervisor for its bot processes (blank in any other process):
    supervisor_id: str | None = None
    supervisor_url: str = ""  # the bot link (bot_worker.bot_link)
    supervisor_token: str = ""
    lease_expires: str = ""  # ISO 8601: the lease a bot starts with, until its first heartbeat answer

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WorkerSettings:
        heartbeat = _number(env, "GROBOT_HEARTBEAT_SECONDS", 5.0, positive=True)
        spawn = env.get("GROBOT_SPAWN", "").strip().lower() or "fork"
        if spawn not in ("fork", "exec"):
            raise SettingsError("GROBOT_SPAWN must be 'fork' or 'exec'")

        def positive(name: str, default: float) -> float:
            return _number(env, name, default, positive=True)

        return cls(
            heartbeat_seconds=heartbeat,
            lease_seconds=positive("GROBOT_LEASE_SECONDS", 3 * heartbeat),
            stop_grace_seconds=positive("GROBOT_STOP_GRACE_SECONDS", 3.0),
            # Forked bots start cheaply; a fresh interpreter per bot costs about a second of CPU.
            start_interval=positive("GROBOT_START_INTERVAL", 0.25 if spawn == "exec" else 0.08),
            backoff_initial=positive("GROBOT_BACKOFF_INITIAL", 1.0),
            backoff_max=positive("GROBOT_BACKOFF_MAX", 300.0),
            healthy_reset=positive("GROBOT_HEALTHY_RESET", 600.0),
            intent_retry_seconds=positive("GROBOT_INTENT_RETRY_SECONDS", 60.0),
            test_chat_poll_seconds=positive("GROBOT_TEST_CHAT_POLL_SECONDS", 0.5),
            test_chat_concurrency=int(positive("GROBOT_TEST_CHAT_CONCURRENCY", 4)),
            schedule_poll_seconds=positive("GROBOT_SCHEDULE_POLL_SECONDS", 0.5),
            schedule_claim_seconds=positive("GROBOT_SCHEDULE_CLAIM_SECONDS", 5.0),
            schedule_nonce_seconds=positive("GROBOT_SCHEDULE_NONCE_SECONDS", 120.0),
            housekeeping_seconds=positive("GROBOT_HOUSEKEEPING_SECONDS", 300.0),
            mcp_refresh_seconds=positive("GROBOT_MCP_REFRESH_SECONDS", 300.0),
            guild_ready_timeout=_number(env, "GROBOT_GUILD_READY_TIMEOUT", 2.0, minimum=0),
            stream_edit_seconds=_number(env, "GROBOT_STREAM_EDIT_SECONDS", 1.0, minimum=0),
            spawn=spawn,
            memory_preload=env.get("GROBOT_MEMORY_PRELOAD", "1") != "0",
            trace_timings=bool(env.get("GROBOT_TRACE_TIMINGS")),
            supervisor_id=env.get("GROBOT_SUPERVISOR_ID") or None,
            supervisor_url=env.get("GROBOT_SUPERVISOR_URL", "").strip(),
            supervisor_token=env.get("GROBOT_SUPERVISOR_TOKEN", "").strip(),
            lease_expires=env.get("GROBOT_LEASE_EXPIRES", "").strip(),
        )


@dataclass(frozen=True)
class Settings:
    """Process-wide configuration: the only reader of the environment. Build it with :func:`get_settings`."""

    database_url: str
    data_dir: Path
    secret_key: str | None
    ollama_host: str
    chroma_url: str | None
    discord_api_base: str
    discord_gateway_url: str
    poll_seconds: float
    db_pool_size: int
    log_level: str
    memory_budget_seconds: float = 0.3  # the most memory retrieval may add to an answer
    ollama_host_set: bool = False  # OLLAMA_HOST is set: with no LLM configured, Ollama there is the default
    embedded_model: bool = True  # with no LLM configured and no OLLAMA_HOST, the embedded demo model answers
    ollama_api_key: str | None = None  # for an Ollama server without a key in its LLM settings (Ollama's cloud)
    llm_timeout_seconds: float = 120.0  # an LLM call may stay silent this long
    mcp_node_modules: tuple[Path, ...] = ()  # where npm packages of MCP presets are looked for first
    # The web tools (web_search, web_read): the proxy their requests go through ("": none), and a
    # PEM file of the authorities that sign the sites' certificates ("": the system's).
    web_proxy: str = ""
    web_ca_file: str = ""
    debug: bool = False  # the CLI shows tracebacks
    worker: WorkerSettings = field(default_factory=WorkerSettings)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        data_dir = Path(env.get("GROBOT_DATA_DIR", "./data")).expanduser()
        database_url = env.get("DATABASE_URL") or f"sqlite:///{data_dir / 'grobot.db'}"
        return cls(
            database_url=database_url,
            data_dir=data_dir,
            secret_key=env.get("GROBOT_SECRET_KEY") or None,
            ollama_host=env.get("OLLAMA_HOST", "http://localhost:11434"),
            chroma_url=env.get("CHROMA_URL") or None,
            discord_api_base=env.get("DISCORD_API_BASE", "https://discord.com/api/v10").rstrip("/"),
            discord_gateway_url=env.get("DISCORD_GATEWAY_URL", "wss://gateway.discord.gg"),
            poll_seconds=_number(env, "GROBOT_POLL_SECONDS", 2.0, positive=True),
            db_pool_size=max(1, int(_number(env, "GROBOT_DB_POOL_SIZE", 5))),
            log_level=env.get("GROBOT_LOG_LEVEL", "INFO").upper(),
            memory_budget_seconds=max(0.01, _number(env, "GROBOT_MEMORY_BUDGET_SECONDS", 0.3)),
            ollama_host_set=bool(env.get("OLLAMA_HOST")),
            embedded_model=_flag(env, "GROBOT_EMBEDDED_LLM", True),
            ollama_api_key=env.get("OLLAMA_API_KEY") or None,
            llm_timeout_seconds=max(0.05, _number(env, "GROBOT_LLM_TIMEOUT_SECONDS", 120.0)),
            mcp_node_modules=tuple(Path(p).expanduser() for p in env.get("GROBOT_MCP_NODE_MODULES", "").split(os.pathsep)
                                   if p),
            web_proxy=(env.get("GROBOT_WEB_PROXY") or env.get("HTTPS_PROXY") or env.get("https_proxy") or "").strip(),
            web_ca_file=env.get("GROBOT_WEB_CA_FILE", "").strip(),
            debug=bool(env.get("GROBOT_DEBUG")),
            worker=WorkerSettings.from_env(env),
        )

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def files_dir(self) -> Path:
        return self.data_dir / "files"

    @property
    def chroma_dir(self) -> Path:
        return self.data_dir / "chroma"

    def bot_files_dir(self, bot_id: int) -> Path:
        return self.files_dir / str(bot_id)

    def mcp_state_dir(self, bot_id: int | None) -> Path:
        """``{bot_state}`` of the MCP servers a bot uses (None: tests and tool-list refreshes)."""
        return self.data_dir / "mcp-state" / (f"bot-{bot_id}" if bot_id is not None else "shared")


@functools.lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this process (read once; tests call ``get_settings.cache_clear()``)."""
    return Settings.from_env()
