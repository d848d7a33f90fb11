"""Every kind of stored secret, and re-encrypting each with a new key."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from sqlmodel import Session, SQLModel, select

from grobot.core import security
from grobot.core.errors import GroBotError
from grobot.core.models import Bot, LLMSetting, McpServer
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)


def _bot_token_owner(row: Bot, column: str, session: Session) -> str:
    return f"bot {row.name}"


def _api_key_owner(row: LLMSetting, column: str, session: Session) -> str:
    """``global output``, ``bot helper tools``."""
    bot = session.get(Bot, row.bot_id) if row.bot_id is not None else None
    return f"{f'bot {bot.name}' if bot else 'global'} {row.category}"


def _mcp_secret_owner(row: McpServer, column: str, session: Session) -> str:
    return f"MCP server {row.name} {'environment' if column == 'env_enc' else 'headers'}"


@dataclass(frozen=True)
class SecretKind:
    """A kind of stored secret: its table, its encrypted columns, what the admin calls one, and whose one is."""

    model: type[SQLModel]
    columns: tuple[str, ...]
    noun: str
    owner: Callable[[Any, str, Session], str]


SECRET_KINDS = (SecretKind(Bot, ("discord_token_enc",), "bot token", _bot_token_owner),
                SecretKind(LLMSetting, ("api_key_enc",), "API key", _api_key_owner),
                SecretKind(McpServer, ("env_enc", "headers_enc"), "MCP secret", _mcp_secret_owner))


@dataclass(frozen=True)
class StoredSecret:
    """One encrypted value in the database (an MCP server's environment and headers are one each)."""

    kind: SecretKind
    row: SQLModel
    column: str

    @property
    def value(self) -> str:
        return getattr(self.row, self.column)

    def owner(self, session: Session) -> str:
        return self.kind.owner(self.row, self.column, session)


def stored_secrets(*, session: Session) -> Iterator[StoredSecret]:
    """Every stored secret, kind by kind."""
    for kind in SECRET_KINDS:
        for row in session.exec(select(kind.model)).all():
            yield from (StoredSecret(kind, row, column) for column in kind.columns if getattr(row, column))


def reencrypt_all(*, session: Session) -> int:
    """Re-encrypt every secret column with the primary key; returns how many values changed."""
    count = 0
    for secret in stored_secrets(session=session):
        setattr(secret.row, secret.column, security.rotate(secret.value))
        session.add(secret.row)
        count += 1
    session.flush()
    return count


def _write_key_file(path: Path, keys: list[str]) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("\n".join(keys) + "\n")
    os.replace(tmp, path)


def rotate_key(*, session_factory) -> int:
    """Rotate the secret key.

    With ``GROBOT_SECRET_KEY`` set, the admin gives ``NEW,OLD`` there and this
    re-encrypts with NEW. With the generated key file, a new key is generated, every
    secret is re-encrypted, and the file keeps only the new key.
    """
    settings = get_settings()
    if settings.secret_key:
        keys = security.current_keys()
        if len(keys) < 2:
            raise GroBotError("GROBOT_SECRET_KEY holds one key, nothing to rotate to: set GROBOT_SECRET_KEY=NEW,OLD "
                              "(the new key first), run secrets rotate, then keep only NEW")
        if keys[0] in keys[1:]:
            raise GroBotError("GROBOT_SECRET_KEY=NEW,OLD: the new key (first) is the same as an old one; "
                              "put a new key first")
        with session_factory() as session:
            return reencrypt_all(session=session)
    path = security.key_file()
    old = security.current_keys()
    new = Fernet.generate_key().decode()
    _write_key_file(path, [new, *old])
    try:
        with session_factory() as session:
            count = reencrypt_all(session=session)
    except Exception:
        _write_key_file(path, old)
        raise
    _write_key_file(path, [new])
    if not security.current_keys() == [new]:  # pragma: no cover - defensive
        raise GroBotError("the new key was not saved")
    logger.info("Secret key rotated; %s secrets re-encrypted", count)
    return count
