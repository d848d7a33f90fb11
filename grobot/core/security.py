"""Secret encryption (Fernet), password hashing (argon2 via pwdlib) and roles."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from pwdlib import PasswordHash

from grobot.core.errors import PermissionDenied, SecretKeyError
from grobot.core.models import Role
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

KEY_FILE_NAME = "secret.key"
_password_hash = PasswordHash.recommended()
_lock = threading.Lock()
_fernet_cache: dict[tuple[str, ...], MultiFernet] = {}


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
    key = Fernet.generate_key().decode()
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


def _fernet() -> MultiFernet:
    keys = tuple(current_keys())
    with _lock:
        fernet = _fernet_cache.get(keys)
        if fernet is None:
            fernet = _fernet_cache[keys] = MultiFernet([Fernet(_as_fernet_key(k)) for k in keys])
        return fernet


def encrypt(value: str) -> str:
    """Encrypt a secret for storage."""
    return _fernet().encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    """Decrypt a stored secret; a wrong key raises :class:`SecretKeyError`, never garbage."""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretKeyError(
            "secrets were encrypted with another key: set GROBOT_SECRET_KEY to the key they were "
            f"encrypted with (or restore {key_file()})"
        ) from None


def encrypt_optional(value: str | None) -> str | None:
    return encrypt(value) if value else None


def decrypt_optional(token: str | None) -> str | None:
    return decrypt(token) if token else None


def encrypt_json(value: dict[str, Any] | None) -> str | None:
    return encrypt(json.dumps(value)) if value else None


def decrypt_json(token: str | None) -> dict[str, Any]:
    return json.loads(decrypt(token)) if token else {}


def rotate(token: str) -> str:
    """Re-encrypt ``token`` with the primary key (it may have been made with an old one)."""
    try:
        return _fernet().rotate(token.encode()).decode()
    except InvalidToken:
        raise SecretKeyError("secrets were encrypted with another key") from None


def hash_password(password: str) -> str:
    return _password_hash.hash(password)


def verify_password(password: str, password_hash: str) -> bool:
    try:
        return _password_hash.verify(password, password_hash)
    except Exception:  # malformed hash: treat as a mismatch
        return False


def require_role(role: str | None, *allowed: Role) -> None:
    """Raise :class:`PermissionDenied` unless ``role`` is one of ``allowed``."""
    if role not in {r.value for r in allowed}:
        raise PermissionDenied("this action needs the role " + " or ".join(r.value for r in allowed))
