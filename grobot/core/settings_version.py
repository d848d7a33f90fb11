"""A bot's settings version (``bot.updated_at``, :func:`grobot.core.services.fleet.config_version`) moves with
every change of what a message of the bot reads of its settings, in the transaction that makes the change.

What is read per bot: its row (reply rules, access lists, moderation, personality, documents and web
search switches, limits), its LLM overrides and the global defaults they inherit, its channel personas,
its MCP servers and their tools. The supervisor keeps what it builds from them per bot under this
version (:mod:`grobot.core.store.bot_cache`); a bot process trusts its ignore cache while its lease
vouches for the version.

One ``before_flush`` hook on every session moves it, so no service can forget to: a flush that adds,
changes or removes a bot's row, one of its LLM overrides, channel personas or MCP associations moves
that bot's version; a global LLM default, every bot's; an MCP server (its command, secrets, tools
...), the version of each bot it is assigned to. What a refresh of a server's tools records besides
its tools (when, the last error) moves nothing. An ``update()`` or ``delete()`` of the ORM on these
tables (``session.execute(update(Bot)...)``: rows not known one by one) moves every bot's version;
only a statement on the bare table (``Bot.__table__``) or in SQL text goes around both hooks.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from sqlalchemy import event, inspect, select, update
from sqlalchemy.orm import ORMExecuteState, Session
from sqlalchemy.orm.util import identity_key

from grobot.core.models import Bot, BotMcpServer, ChannelPersona, LLMSetting, McpServer, utcnow

# Columns that are no setting: recording them moves no version.
_NOT_SETTINGS = frozenset({"updated_at", "created_at", "tools_refreshed_at", "last_error"})
_EVERY_BOT = -1


def _changed(obj: Any) -> bool:
    """Whether a pending object changes a setting (a value set again to what it was changes nothing)."""
    state = inspect(obj)
    return any(attr.history.has_changes() for attr in state.attrs if attr.key not in _NOT_SETTINGS)


def _bots_of(obj: Any, session: Session) -> set[int]:
    """The bots whose settings ``obj`` (a pending settings row) is part of (``_EVERY_BOT``: all)."""
    if isinstance(obj, LLMSetting):
        return {obj.bot_id} if obj.bot_id is not None else {_EVERY_BOT}
    if isinstance(obj, (ChannelPersona, BotMcpServer, Bot)):
        bot_id = obj.id if isinstance(obj, Bot) else obj.bot_id
        return {bot_id} if bot_id is not None else set()
    if isinstance(obj, McpServer) and obj.id is not None:
        with session.no_autoflush:
            return set(session.execute(select(BotMcpServer.bot_id).where(
                BotMcpServer.mcp_server_id == obj.id)).scalars())
    return set()


_SETTINGS_ROWS = (Bot, LLMSetting, ChannelPersona, BotMcpServer, McpServer)


@event.listens_for(Session, "before_flush")
def _move_versions(session: Session, flush_context: Any, instances: Any) -> None:
    """Move the settings version of each bot this flush changes the settings of."""
    dirty, deleted = session.dirty, session.deleted
    bot_ids: set[int] = set()
    gone: set[int] = set()
    for obj in chain(session.new, dirty, deleted):
        if not isinstance(obj, _SETTINGS_ROWS):
            continue
        if isinstance(obj, Bot):
            if obj in deleted:
                gone.add(obj.id or 0)
            elif obj in dirty and _changed(obj):
                bot_ids.add(obj.id or 0)
        elif obj not in dirty or _changed(obj):
            bot_ids |= _bots_of(obj, session)
    bot_ids -= gone
    if bot_ids:
        _move(session, bot_ids, gone)


def _move(session: Session, bot_ids: set[int], gone: set[int]) -> None:
    """Set the version of ``bot_ids`` (``_EVERY_BOT``: of all but ``gone``) to now: a bot loaded in
    ``session`` by its attribute (this flush writes it), the others with one statement."""
    now = utcnow()
    table: Any = Bot.__table__  # type: ignore[attr-defined]
    if _EVERY_BOT in bot_ids:
        for obj in list(session.identity_map.values()):
            if isinstance(obj, Bot) and obj.id not in gone:
                obj.updated_at = now
        session.execute(update(table).values(updated_at=now))
        return
    unloaded = []
    for bot_id in sorted(bot_ids):
        loaded = session.identity_map.get(identity_key(Bot, bot_id))
        if loaded is not None:
            loaded.updated_at = now
        else:
            unloaded.append(bot_id)
    if unloaded:
        session.execute(update(table).where(table.c.id.in_(unloaded)).values(updated_at=now))


@event.listens_for(Session, "do_orm_execute")
def _move_for_bulk_changes(state: ORMExecuteState) -> None:
    """An ORM ``update()`` or ``delete()`` of settings rows moves every bot's version (in its transaction)."""
    if not (state.is_update or state.is_delete) or not state.is_orm_statement or state.bind_mapper is None:
        return
    if state.bind_mapper.class_ in _SETTINGS_ROWS:
        _move(state.session, {_EVERY_BOT}, set())
