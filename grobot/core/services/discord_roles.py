"""The roles a bot has seen on Discord, by guild: what a bot process reports when a guild becomes
available to it and when its roles change (so that the access lists show roles by name)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from sqlmodel import Session, col, select

from grobot.core.models import DiscordRole, utcnow

logger = logging.getLogger(__name__)

MAX_ROLES_PER_GUILD = 1000


@dataclass(frozen=True)
class KnownRole:
    role_id: str
    name: str
    guild_id: str
    guild_name: str


def save_roles(bot_id: int, guild_id: str, guild_name: str, roles: Iterable[tuple[str, str, int]], *,
               session: Session) -> int:
    """Store the roles bot ``bot_id`` sees in a guild now (``(id, name, position)``, without @everyone):
    new and renamed ones are written, those gone are removed. Returns how many it has there."""
    seen = {str(rid): (str(name)[:100], int(position)) for rid, name, position in list(roles)[:MAX_ROLES_PER_GUILD]}
    stored = {row.role_id: row for row in session.exec(
        select(DiscordRole).where(DiscordRole.bot_id == bot_id, DiscordRole.guild_id == str(guild_id))).all()}
    now = utcnow()
    for rid, (name, position) in seen.items():
        row = stored.get(rid)
        if row is None:
            row = session.get(DiscordRole, (bot_id, rid))  # (a role id is the same in every guild view)
        if row is None:
            session.add(DiscordRole(bot_id=bot_id, role_id=rid, guild_id=str(guild_id), guild_name=guild_name[:100],
                                    name=name, position=position, updated_at=now))
        elif (row.name, row.position, row.guild_name, row.guild_id) != (name, position, guild_name[:100], str(guild_id)):
            row.name, row.position, row.guild_name, row.guild_id, row.updated_at = \
                name, position, guild_name[:100], str(guild_id), now
            session.add(row)
    for rid, row in stored.items():
        if rid not in seen:
            session.delete(row)
    session.flush()
    return len(seen)


def known_roles(*, session: Session, bot_id: int) -> list[KnownRole]:
    """Every role bot ``bot_id`` has seen, by guild then from the highest role down."""
    rows = session.exec(select(DiscordRole).where(DiscordRole.bot_id == bot_id)
                        .order_by(col(DiscordRole.guild_name), col(DiscordRole.guild_id),
                                  col(DiscordRole.position).desc())).all()
    return [KnownRole(role_id=r.role_id, name=r.name, guild_id=r.guild_id, guild_name=r.guild_name) for r in rows]


def role_names(*, session: Session, bot_id: int, role_ids: Iterable[str]) -> dict[str, str]:
    """The name of each role in ``role_ids`` that bot ``bot_id`` has seen."""
    ids = sorted({str(r) for r in role_ids if r})
    if not ids:
        return {}
    rows = session.exec(select(DiscordRole.role_id, DiscordRole.name).where(
        DiscordRole.bot_id == bot_id, col(DiscordRole.role_id).in_(ids))).all()
    return {str(rid): str(name) for rid, name in rows if name}
