"""Settings read from the environment, with the defaults documented in the README."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path


def _default_data_dir() -> Path:
    return Path(os.environ.get("GROBOT_DATA_DIR", "./data")).expanduser()


@dataclass(frozen=True)
class Settings:
    """Process-wide configuration. Build it with :func:`get_settings`."""

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
    embedded_llm: bool = True  # with no LLM configured and no OLLAMA_HOST, the embedded demo model answers
    memory_preload: bool = True  # the supervisor loads the embedder and Chroma at start (0: on first use)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        data_dir = Path(env.get("GROBOT_DATA_DIR", "./data")).expanduser()
        database_url = env.get("DATABASE_URL") or f"sqlite:///{data_dir / 'grobot.db'}"
        try:
            poll = float(env.get("GROBOT_POLL_SECONDS", "2"))
            pool = int(env.get("GROBOT_DB_POOL_SIZE", "5"))
            memory_budget = float(env.get("GROBOT_MEMORY_BUDGET_SECONDS", "0.3"))
        except ValueError as exc:
            raise ValueError(f"invalid number in the environment: {exc}") from None
        if poll <= 0:
            raise ValueError("GROBOT_POLL_SECONDS must be positive")
        return cls(
            database_url=database_url,
            data_dir=data_dir,
            secret_key=env.get("GROBOT_SECRET_KEY") or None,
            ollama_host=env.get("OLLAMA_HOST", "http://localhost:11434"),
            chroma_url=env.get("CHROMA_URL") or None,
            discord_api_base=env.get("DISCORD_API_BASE", "https://discord.com/api/v10").rstrip("/"),
            discord_gateway_url=env.get("DISCORD_GATEWAY_URL", "wss://gateway.discord.gg"),
            poll_seconds=poll,
            db_pool_size=max(1, pool),
            log_level=env.get("GROBOT_LOG_LEVEL", "INFO").upper(),
            memory_budget_seconds=max(0.01, memory_budget),
            ollama_host_set=bool(env.get("OLLAMA_HOST")),
            embedded_llm=env.get("GROBOT_EMBEDDED_LLM", "1").strip().lower() not in ("0", "false", "no", "off"),
            memory_preload=env.get("GROBOT_MEMORY_PRELOAD", "1") != "0",
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
