"""The secret key (and the tokens derived from it), with no heavy import: bot processes load this.

Encryption itself (Fernet, from ``cryptography``) lives in :mod:`grobot.core.security`; the
key file, the keys in force and the keys of the supervisor link's tokens are here, so that a
bot process never loads ``cryptography`` or the database layer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
from pathlib import Path

from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

KEY_FILE_NAME = "secret.key"


def _as_fernet_key(raw: str) -> bytes:
    """A Fernet key from ``raw``: used as is when it is one, else derived by SHA-256."""
    raw = raw.strip()
    try:
        if len(base64.urlsafe_b64decode(raw.encode())) == 32:
            return raw.encode()
    except (ValueError, TypeError):
        pass
    return base64.urlsafe_b64encode(hashlib.sha256(raw.encode()).digest())


def key_file() -> Path:
    return get_settings().data_dir / KEY_FILE_NAME


def _read_or_create_key_file() -> str:
    path = key_file()
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()  # a Fernet key
    # O_EXCL: when two processes race, one creates the file and the other reads it.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")
    logger.info("Generated a new secret key in %s", path)
    return key


def current_keys() -> list[str]:
    """The keys in force: the primary first, then old keys kept for rotation."""
    settings = get_settings()
    raw = settings.secret_key or _read_or_create_key_file()
    return [k for k in (part.strip() for part in raw.replace("\n", ",").split(",")) if k]


def link_keys(context: bytes) -> list[bytes]:
    """A key for ``context`` from each secret key in force (primary first): HMAC of the context.

    Every GroBot process holds the secret key, so each derives the supervisor link's admin token
    itself (:mod:`grobot.core.link_scope`).
    """
    return [hmac.new(_as_fernet_key(k), context, hashlib.sha256).digest() for k in current_keys()]
