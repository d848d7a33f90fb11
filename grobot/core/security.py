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
import unicodedata
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


def login_name_key(username: str) -> str:
    """A username as the throttle counts it: " ADMIN " and "admin" are the same account."""
    return unicodedata.normalize("NFKC", username or "").strip().casefold()


class LoginThrottle:
    """Slows password guessing down, client by client; never locks an account.

    Failed logins are counted per client (its address: all its attempts) and per client and
    account (its attempts at that account, names compared as :func:`login_name_key` does). Past
    ``free_failures`` of the account's count (``free_client_failures`` of the client's), the
    client waits before its next attempt: ``first_delay_seconds``, doubling with each further
    failure, at most ``max_delay_seconds``. An attempt made sooner is refused without checking
    the password. Nothing slows another client: the right password from another address signs
    in at once, however hard this one hammers the same name. A success clears that client's
    count for the account (not the client's own: signing into an account of one's own does not
    buy more guesses at another). A count is forgotten ``window_seconds`` after its last
    failure. The counts live in this process's memory (a restart forgets them). Thread-safe.
    """

    def __init__(
        self,
        *,
        free_failures: int = 5,
        free_client_failures: int = 20,
        first_delay_seconds: float = 1.0,
        max_delay_seconds: float = 30.0,
        window_seconds: float = 900.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free_failures = free_failures
        self.free_client_failures = free_client_failures
        self.first_delay_seconds = first_delay_seconds
        self.max_delay_seconds = max_delay_seconds
        self.window_seconds = window_seconds
        self.max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        # key -> (failures, time of the last failure)
        self._entries: dict[tuple[str, str], tuple[int, float]] = {}

    def _keys(self, client: str, username: str) -> list[tuple[tuple[str, str], int]]:
        """The counts an attempt of ``client`` at ``username`` meets, each with its free failures."""
        return [((client, ""), self.free_client_failures),
                ((client, "\0" + login_name_key(username)), self.free_failures)]

    def _delay(self, failures: int, free: int) -> float:
        over = failures - free
        if over <= 0:
            return 0.0
        return min(self.max_delay_seconds, self.first_delay_seconds * 2 ** min(over - 1, 30))

    def _wait(self, now: float, client: str, username: str) -> float:
        wait = 0.0
        for key, free in self._keys(client, username):
            failures, last = self._entries.get(key, (0, now))
            if failures and now - last <= self.window_seconds:
                wait = max(wait, last + self._delay(failures, free) - now)
        return wait

    def retry_after(self, client: str, username: str) -> float:
        """Seconds until ``client`` may try ``username`` again; 0 when it may now."""
        now = self._clock()
        with self._lock:
            return max(0.0, self._wait(now, client, username))

    def record_failure(self, client: str, username: str) -> float:
        """Count a failed attempt of ``client`` at ``username``; returns its wait before the next one."""
        now = self._clock()
        with self._lock:
            for key, _free in self._keys(client, username):
                failures, last = self._entries.get(key, (0, now))
                if now - last > self.window_seconds:
                    failures = 0  # an old streak: start counting again
                self._entries[key] = (failures + 1, now)
            if len(self._entries) > self.max_entries:
                self._prune(now)
            wait = max(0.0, self._wait(now, client, username))
        if wait >= self.max_delay_seconds:
            logger.warning("Repeated failed web logins from one client: it now waits %.0f s between attempts", wait)
        return wait

    def record_success(self, client: str, username: str) -> None:
        """A successful login clears the client's count for the account."""
        with self._lock:
            self._entries.pop(self._keys(client, username)[1][0], None)

    def reset(self) -> None:
        with self._lock:
            self._entries.clear()

    def _prune(self, now: float) -> None:
        for key in [key for key, (_, last) in self._entries.items() if now - last > self.window_seconds]:
            del self._entries[key]
        while len(self._entries) > self.max_entries:  # still too many: drop the oldest counts
            del self._entries[min(self._entries, key=lambda k: self._entries[k][1])]


login_throttle = LoginThrottle()
