"""Who may use which operations of a supervisor's link: one token scheme, scoped by group and bot.

A token names its scope and carries an HMAC of it, ``<scope>.<mac>``:

- ``bot-<id>``: a bot process. Its supervisor makes it from a random secret of its own at each
  start and hands it to the process in its environment. It may use its own bot's ``bot`` group
  (heartbeats, its data) and the ``memory`` operations a bot makes (remember, search), for its
  own bot only.
- ``admin``: the web app and the CLI. Every process holding the secret key derives it (it never
  travels through the environment, the database or the logs); it may use the ``memory`` group
  (the Memory tab, the Knowledge Base, ``memory`` commands) and the ``tester_chat`` group (Test
  Chat's runner), for any bot, and not the bots' own operations.

A request outside the token's scope is refused (:func:`refusal`): in plain words for the caller,
logged by the link.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

BOT, MEMORY, TESTER_CHAT = "bot", "memory", "tester_chat"
GROUPS = frozenset({BOT, MEMORY, TESTER_CHAT})
BOT_MEMORY_OPS = frozenset({"add", "search"})  # what a bot's memory asks (remember, search)
ADMIN = "admin"
_ADMIN_CONTEXT = b"grobot supervisor link admin v1"


@dataclass(frozen=True)
class Scope:
    """What one token may do: ``bot_id`` set for a bot process's token (its bot only), None for the admin's."""

    name: str
    bot_id: int | None = None

    @property
    def groups(self) -> frozenset[str]:
        return frozenset({BOT, MEMORY}) if self.bot_id is not None else frozenset({MEMORY, TESTER_CHAT})


def _mac(key: bytes, scope: str) -> str:
    return hmac.new(key, scope.encode(), hashlib.sha256).hexdigest()


def bot_token(secret: bytes, bot_id: int) -> str:
    """The token of bot ``bot_id``'s process, made with its supervisor's ``secret``."""
    scope = f"bot-{int(bot_id)}"
    return f"{scope}.{_mac(secret, scope)}"


def admin_tokens() -> list[str]:
    """The admin tokens of each secret key in force (the primary first: a rotated key still works)."""
    from grobot.core.secret_keys import link_keys

    return [f"{ADMIN}.{_mac(key, ADMIN)}" for key in link_keys(_ADMIN_CONTEXT)]


def admin_token() -> str:
    """The token the web app and the CLI send (from the primary key)."""
    return admin_tokens()[0]


def scope_of(token: str, secret: bytes) -> Scope | None:
    """The scope ``token`` proves (``secret``: the supervisor's, for bot tokens), or None: forged or mangled."""
    name, _, mac = token.partition(".")
    if name.startswith("bot-") and name[4:].isdigit():
        ok = hmac.compare_digest(mac, _mac(secret, name))
        return Scope(name, int(name[4:])) if ok else None
    if name == ADMIN:
        return Scope(name) if any(hmac.compare_digest(token, t) for t in admin_tokens()) else None
    return None


def refusal(scope: Scope, group: str, op: str, bot_id: int | None) -> str | None:
    """Why ``scope`` may not use operation ``op`` of ``group`` for bot ``bot_id`` (None: it may)."""
    if group not in GROUPS:
        return f"there is no operation group {group!r}"
    if group not in scope.groups:
        return f"this token may not use the {group} operations"
    if scope.bot_id is not None:
        if bot_id != scope.bot_id:
            return "this token is for another bot"
        if group == MEMORY and op not in BOT_MEMORY_OPS:
            return f"a bot may not use the memory operation {op!r}"
    return None
