"""Secret encryption (Fernet), password hashing (argon2 via pwdlib), roles, web sessions
and the login throttle."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from grobot.core.errors import PermissionDenied, SecretKeyError
from grobot.core.models import Role
from grobot.core.secret_keys import (  # noqa: F401 - part of this module's API
    KEY_FILE_NAME,
    _as_fernet_key,
    current_keys,
    key_file,
    memory_service_token,
    memory_service_tokens,
)

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_fernet_cache: dict[tuple[str, ...], MultiFernet] = {}


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


def wrong_key_hint() -> str:
    """What to do when stored secrets were encrypted with another key."""
    return f"set GROBOT_SECRET_KEY to the key they were encrypted with (or restore {key_file()})"


def decrypt(token: str) -> str:
    """Decrypt a stored secret; a wrong key raises :class:`SecretKeyError`, never garbage."""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretKeyError(f"secrets were encrypted with another key: {wrong_key_hint()}") from None


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


@functools.cache
def _password_hasher() -> Any:
    """The argon2 hasher, imported on first use (bot processes never hash passwords)."""
    from pwdlib import PasswordHash

    return PasswordHash.recommended()


def hash_password(password: str) -> str:
    return _password_hasher().hash(password)


def verify_password(password: str, password_hash: str) -> bool:
    try:
        return _password_hasher().verify(password, password_hash)
    except Exception:  # malformed hash: treat as a mismatch
        return False


def require_role(role: str | None, *allowed: Role) -> None:
    """Raise :class:`PermissionDenied` unless ``role`` is one of ``allowed``."""
    if role not in {r.value for r in allowed}:
        raise PermissionDenied("this action needs the role " + " or ".join(r.value for r in allowed))


# --------------------------------------------------------------------------- web sessions

SESSION_TTL_SECONDS = 7 * 24 * 3600
_SESSION_KEY_CONTEXT = b"grobot web session v1\x00"
_session_fernet_cache: dict[tuple[str, ...], MultiFernet] = {}


@dataclass(frozen=True)
class SessionClaims:
    """What a valid session token says: who signed in, and the account stamp at that time."""

    user_id: int
    stamp: str
    issued_at: int


def _session_fernet() -> MultiFernet:
    """Fernet keys for session tokens, derived from the secret keys (never the keys themselves).

    A separate derived key means a session token can never be confused with an encrypted
    secret; deriving from every key in force keeps sessions valid across a key rotation.
    """
    keys = tuple(current_keys())
    with _lock:
        fernet = _session_fernet_cache.get(keys)
        if fernet is None:
            derived = [
                Fernet(base64.urlsafe_b64encode(hmac.new(base64.urlsafe_b64decode(_as_fernet_key(k)),
                                                         _SESSION_KEY_CONTEXT, hashlib.sha256).digest()))
                for k in keys
            ]  # fmt: skip
            fernet = _session_fernet_cache[keys] = MultiFernet(derived)
        return fernet


def sign_session(user_id: int, *, stamp: str = "", now: float | None = None) -> str:
    """A signed (and encrypted) session token for the web app's browser storage.

    ``stamp`` ties the token to the account's state (see ``users.session_stamp``): when it
    changes, e.g. with a new password, older tokens stop working.
    """
    payload = json.dumps({"uid": int(user_id), "stamp": stamp}, separators=(",", ":")).encode()
    moment = int(time.time() if now is None else now)
    return _session_fernet().encrypt_at_time(payload, moment).decode()


def verify_session(token: str, *, ttl: int = SESSION_TTL_SECONDS, now: float | None = None) -> SessionClaims | None:
    """The claims of a valid, unexpired session token; None for anything else (never raises)."""
    if not token or not isinstance(token, str):
        return None
    fernet = _session_fernet()
    moment = int(time.time() if now is None else now)
    try:
        payload = json.loads(fernet.decrypt_at_time(token.encode(), ttl, moment))
        issued_at = fernet.extract_timestamp(token.encode())
    except (InvalidToken, ValueError, TypeError):
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("uid"), int) or payload["uid"] <= 0:
        return None
    return SessionClaims(user_id=payload["uid"], stamp=str(payload.get("stamp", "")), issued_at=issued_at)


# --------------------------------------------------------------------------- login throttle


class LoginThrottle:
    """Counts failed logins per username and locks a username out for a short while.

    After ``max_failures`` failures within ``window_seconds``, further attempts for that
    username are refused for ``lockout_seconds`` (without checking the password). The
    counts live in this process's memory: a restart forgets them. Thread-safe.
    """

    def __init__(
        self,
        *,
        max_failures: int = 5,
        window_seconds: float = 300.0,
        lockout_seconds: float = 60.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window_seconds = window_seconds
        self.lockout_seconds = lockout_seconds
        self.max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        # key -> (failures, first failure time, locked until)
        self._entries: dict[str, tuple[int, float, float]] = {}

    @staticmethod
    def _key(username: str) -> str:
        return username.strip().casefold()

    def retry_after(self, username: str) -> float:
        """Seconds until ``username`` may try again; 0 when it may now."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(self._key(username))
            if entry is None:
                return 0.0
            return max(0.0, entry[2] - now)

    def record_failure(self, username: str) -> float:
        """Count a failed attempt; returns the lockout it starts (0 when none)."""
        now = self._clock()
        key = self._key(username)
        with self._lock:
            failures, first, locked_until = self._entries.get(key, (0, now, 0.0))
            if now - first > self.window_seconds and locked_until <= now:
                failures, first = 0, now  # an old streak: start counting again
            failures += 1
            if failures >= self.max_failures:
                locked_until = now + self.lockout_seconds
                failures, first = 0, now
                logger.warning("Login locked for %.0f s after repeated failures", self.lockout_seconds)
            self._entries[key] = (failures, first, locked_until)
            if len(self._entries) > self.max_entries:
                self._prune(now)
            return max(0.0, locked_until - now)

    def record_success(self, username: str) -> None:
        """A successful login clears the username's count."""
        with self._lock:
            self._entries.pop(self._key(username), None)

    def reset(self) -> None:
        with self._lock:
            self._entries.clear()

    def _prune(self, now: float) -> None:
        expired = [
            key for key, (_, first, until) in self._entries.items()
            if until <= now and now - first > self.window_seconds
        ]  # fmt: skip
        for key in expired:
            del self._entries[key]
        while len(self._entries) > self.max_entries:  # still too many: drop the oldest streaks
            del self._entries[min(self._entries, key=lambda k: self._entries[k][1])]


login_throttle = LoginThrottle()


# --------------------------------------------------------------------------- memory service

