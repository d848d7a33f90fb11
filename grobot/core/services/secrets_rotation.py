"""Re-encrypting every stored secret with a new key."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from cryptography.fernet import Fernet
from sqlmodel import Session, select

from grobot.core import security
from grobot.core.errors import GroBotError
from grobot.core.models import Bot, LLMSetting, McpServer
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

SECRET_COLUMNS = ((Bot, ("discord_token_enc",)), (LLMSetting, ("api_key_enc",)), (McpServer, ("env_enc", "headers_enc")))


def reencrypt_all(*, session: Session) -> int:
    """Re-encrypt every secret column with the primary key; returns how many values changed."""
    count = 0
    for model, columns in SECRET_COLUMNS:
        for row in session.exec(select(model)).all():
            for column in columns:
                value = getattr(row, column)
                if value:
                    setattr(row, column, security.rotate(value))
                    count += 1
            session.add(row)
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
