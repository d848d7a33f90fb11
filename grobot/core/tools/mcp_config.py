"""How to reach one MCP server: the decrypted connection settings the hub works from."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

logger = logging.getLogger(__name__)

TRANSPORTS = ("stdio", "streamable_http", "sse")
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
# Placeholders a server's arguments, environment and working directory may hold; each bot that
# uses the server gets its own values (and its own session): see ``McpServerConfig.scoped``.
PLACEHOLDERS = ("{bot_files}", "{bot_state}")


@dataclass(frozen=True)
class McpServerConfig:
    """One MCP server as the hub connects to it (secrets decrypted, never logged)."""

    name: str
    transport: str = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    server_id: int | None = None
    scope: str = ""  # "bot-3" when placeholders were filled in for bot 3 (one session per bot)

    @property
    def key(self) -> str:
        """The hub's key of this server's session: its name, and the bot when it is per bot."""
        return f"{self.name}@{self.scope}" if self.scope else self.name

    def has_placeholders(self) -> bool:
        texts = [*self.args, *self.env.values(), self.cwd or ""]
        return any(p in text for p in PLACEHOLDERS for text in texts)

    def scoped(self, values: Mapping[str, str], scope: str) -> McpServerConfig:
        """This config with its placeholders (``{bot_files}``: a bot's folder) replaced by ``values``."""
        if not self.has_placeholders():
            return self

        def fill(text: str) -> str:
            for placeholder, value in values.items():
                text = text.replace(placeholder, value)
            return text

        return replace(
            self,
            args=tuple(fill(a) for a in self.args),
            env={k: fill(v) for k, v in self.env.items()},
            cwd=fill(self.cwd) if self.cwd else self.cwd,
            scope=scope,
        )

    def fingerprint(self) -> str:
        """Changes whenever anything that affects the connection changes."""
        data = json.dumps(
            [self.transport, self.command, list(self.args), self.env, self.cwd, self.url, self.headers],
            sort_keys=True,
        )
        return hashlib.sha256(data.encode()).hexdigest()

    def describe(self) -> str:
        """Where the server is, without secrets (for messages and logs)."""
        if self.transport == "stdio":
            return " ".join([self.command or "?", *self.args])
        return self.url or "?"
