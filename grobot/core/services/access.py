"""Who may use a bot, by name: its allowed and blocked users and roles (ids on the ``bot`` row, read
by the reply rules at each message) shown with the names the bot has seen, and changed by id or by
such a name (users: the Knowledge Base's; roles: those the bot saw on Discord)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from grobot.core.agents.types import ACCESS_FIELDS
from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import Bot
from grobot.core.services import bots, discord_roles, discord_users

logger = logging.getLogger(__name__)

LIST_LABELS = {"allowed_user_ids": "allowed users", "blocked_user_ids": "blocked users",
               "allowed_role_ids": "allowed roles", "blocked_role_ids": "blocked roles"}


@dataclass(frozen=True)
class Entry:
    """One id of an access list, with the name the bot knows it by ("" when it has not seen it)."""

    id: str
    name: str

    @property
    def label(self) -> str:
        return f"{self.name} ({self.id})" if self.name else self.id

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name}


def access_lists(bot: Bot, *, session: Session) -> dict[str, list[Entry]]:
    """Each access list of ``bot`` with names (two queries)."""
    users = discord_users.display_names(session=session, bot_id=bot.id or 0,
                                        user_ids=[*bot.allowed_user_ids, *bot.blocked_user_ids])
    roles = discord_roles.role_names(session=session, bot_id=bot.id or 0,
                                     role_ids=[*bot.allowed_role_ids, *bot.blocked_role_ids])
    return {name: [Entry(i, (users if "user" in name else roles).get(i, "")) for i in getattr(bot, name) or []]
            for name in ACCESS_FIELDS}


def resolve(bot: Bot, ref: str, kind: str, *, session: Session) -> str:
    """The id of the user or role ``ref`` of ``bot`` (``kind``: ``user`` or ``role``): an id as it is,
    else a name the bot has seen (NotFoundError when none, ValidationError when it is ambiguous)."""
    ref = ref.strip().lstrip("@")
    if ref.isdigit():
        return ref
    wanted = ref.casefold()
    if kind == "user":
        found = {u.discord_user_id: u.display_name
                 for u in discord_users.known_users(session=session, bot_id=bot.id or 0, search=ref, limit=50)
                 if u.display_name.casefold() == wanted}
        where = "in its Knowledge Base"
    else:
        found = {r.role_id: f"{r.name} in {r.guild_name}" for r in discord_roles.known_roles(session=session, bot_id=bot.id or 0)
                 if r.name.casefold() == wanted}
        where = "on Discord"
    if not found:
        raise NotFoundError(f"bot '{bot.name}' has seen no {kind} named {ref!r} {where}; give the {kind}'s id "
                            "(Discord: Copy ID)")
    if len(found) > 1:
        raise ValidationError(f"{len(found)} {kind}s are named {ref!r}: give the id of the one you mean ("
                              + ", ".join(f"{i}: {n}" for i, n in found.items()) + ")")
    return next(iter(found))


def change_access(bot: Bot, *, session: Session, add: dict[str, list[str]] | None = None,
                  remove: list[str] | None = None, clear: bool = False) -> dict[str, list[Entry]]:
    """Add users or roles (ids or names) to lists (``{"blocked_user_ids": ["alice"]}``), remove ids or
    names from every list, or ``clear`` them all; saved through :func:`bots.update_bot` (validated).
    Returns the lists as they are now."""
    lists: dict[str, list[str]] = {name: [] if clear else list(getattr(bot, name) or []) for name in ACCESS_FIELDS}
    for ref in remove or []:
        ids = set()
        for kind in ("user", "role"):
            try:
                ids.add(resolve(bot, ref, kind, session=session))
            except (NotFoundError, ValidationError):
                pass
        if not ids or not any(i in ids for values in lists.values() for i in values):
            raise NotFoundError(f"{ref!r} is on none of the access lists of bot '{bot.name}'")
        lists = {name: [i for i in values if i not in ids] for name, values in lists.items()}
    for name, refs in (add or {}).items():
        if name not in ACCESS_FIELDS:
            raise ValidationError(f"unknown access list {name!r}")
        kind = "user" if "user" in name else "role"
        for ref in refs:
            rid = resolve(bot, ref, kind, session=session)
            if rid not in lists[name]:
                lists[name].append(rid)
    changes: dict[str, Any] = {name: values for name, values in lists.items() if values != list(getattr(bot, name) or [])}
    if changes:
        bots.update_bot(bot, changes, session=session)
        logger.info("Bot %s: access lists changed (%s)", bot.id, ", ".join(LIST_LABELS[n] for n in changes))
    return access_lists(bot, session=session)
