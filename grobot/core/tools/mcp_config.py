"""How to reach one MCP server: the decrypted connection settings the hub works from."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

TRANSPORTS = ("stdio", "streamable_http", "sse")
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")


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
