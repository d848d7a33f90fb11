"""A bot's persona per Discord channel: a personality addition and LLM overrides per category, kept for
one channel and its threads (``channel_persona``), read with the rest of a message's settings
(:func:`for_message`), shown with the channel names the bot has seen, and changed by id or by name."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam
from sqlmodel import Session, col, select

from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import Bot, ChannelPersona, Conversation, LLMCategory, utcnow
from grobot.core.services import llm_settings

logger = logging.getLogger(__name__)

MAX_PERSONALITY = 4000
CATEGORIES = tuple(c.value for c in LLMCategory)


@dataclass(frozen=True)
class Persona:
    """One channel's persona, with the channel's name as the bot saw it ("" when it has not)."""

    channel_id: str
    name: str
    personality: str
    llms: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"#{self.name} ({self.channel_id})" if self.name else self.channel_id

    def models(self) -> str:
        """``output: openai gpt-4o-mini; decision: temperature 0.1`` (what it overrides), or ""."""
        parts = []
        for category in CATEGORIES:
            fields = self.llms.get(category) or {}
            if fields:
                shown = " ".join(str(fields[k]) for k in ("provider", "model") if fields.get(k))
                rest = ", ".join(f"{k.replace('_', ' ')} {fields[k]}" for k in ("base_url", "context_window",
                                                                                  "temperature") if k in fields)
                parts.append(f"{category}: " + ", ".join(p for p in (shown, rest) if p))
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"channel_id": self.channel_id, "name": self.name, "personality": self.personality, "llms": self.llms}


def known_channels(*, session: Session, bot_id: int) -> dict[str, str]:
    """The guild channels the bot has talked in: id -> name (its conversations' titles, without ``#``)."""
    rows = session.exec(select(Conversation.discord_channel_id, Conversation.title)
                        .where(Conversation.bot_id == bot_id, col(Conversation.key).startswith("guild:"))
                        .order_by(col(Conversation.title))).all()
    return {str(cid): str(title or "").lstrip("#") for cid, title in rows if cid}


def personas(bot: Bot, *, session: Session) -> list[Persona]:
    """Every channel persona of ``bot``, by channel name."""
    names = known_channels(session=session, bot_id=bot.id or 0)
    rows = session.exec(select(ChannelPersona).where(ChannelPersona.bot_id == bot.id)).all()
    found = [Persona(r.channel_id, names.get(r.channel_id, ""), r.personality or "", dict(r.llms or {})) for r in rows]
    return sorted(found, key=lambda p: (p.name or "~", p.channel_id))


def resolve_channel(bot: Bot, ref: str, *, session: Session) -> str:
    """The id of channel ``ref`` of ``bot``: an id as it is, else ``#name`` of a channel it has seen."""
    ref = ref.strip()
    if ref.startswith("<#") and ref.endswith(">"):
        ref = ref[2:-1]
    if ref.isdigit():
        return ref
    wanted = ref.lstrip("#").casefold()
    found = [cid for cid, name in known_channels(session=session, bot_id=bot.id or 0).items() if name.casefold() == wanted]
    if not found:
        raise NotFoundError(f"bot '{bot.name}' has seen no channel named {ref!r}; give the channel's id "
                            "(Discord: Copy Channel ID)")
    if len(found) > 1:
        raise ValidationError(f"{len(found)} channels are named {ref!r}: give the id of the one you mean "
                              f"({', '.join(found)})")
    return found[0]


def set_persona(bot: Bot, channel: str, *, session: Session, personality: str | None = None,
                llms: dict[str, dict[str, Any]] | None = None) -> Persona:
    """Set the persona of ``channel`` (an id or a name the bot has seen): ``personality`` (None: kept;
    "": none) and the LLM overrides of the categories in ``llms`` (each replaced; {}: the bot's own
    again), checked as the bot's own LLM settings are. A persona left with nothing is removed."""
    channel_id = resolve_channel(bot, channel, session=session)
    row = session.get(ChannelPersona, (bot.id, channel_id)) or ChannelPersona(bot_id=bot.id, channel_id=channel_id)
    if personality is not None:
        personality = personality.strip()
        if len(personality) > MAX_PERSONALITY:
            raise ValidationError(f"personality: at most {MAX_PERSONALITY:,} characters")
        row.personality = personality
    stored = dict(row.llms or {})
    for category, fields in (llms or {}).items():
        if category not in CATEGORIES:
            raise ValidationError(f"unknown category {category!r}; one of: {', '.join(CATEGORIES)}")
        checked = llm_settings.validate_channel_llm(session=session, bot_id=bot.id or 0, category=category,
                                                    fields=fields)
        if checked:
            stored[category] = checked
        else:
            stored.pop(category, None)
    row.llms = stored
    row.updated_at = utcnow()
    if not row.personality and not row.llms:
        if session.get(ChannelPersona, (bot.id, channel_id)) is not None:
            session.delete(row)
    else:
        session.add(row)
    session.flush()
    logger.info("Bot %s: the persona of channel %s changed", bot.id, channel_id)
    return Persona(channel_id, known_channels(session=session, bot_id=bot.id or 0).get(channel_id, ""),
                   row.personality or "", dict(row.llms or {}))


def clear_persona(bot: Bot, channel: str, *, session: Session) -> None:
    """Remove the persona of ``channel``: the bot answers there as everywhere."""
    channel_id = resolve_channel(bot, channel, session=session)
    row = session.get(ChannelPersona, (bot.id, channel_id))
    if row is None:
        raise NotFoundError(f"bot '{bot.name}' has no persona in channel {channel}")
    session.delete(row)
    session.flush()
    logger.info("Bot %s: the persona of channel %s removed", bot.id, channel_id)


# Read for every message in a guild of a bot with personas: built once, and rows rather than ORM objects.
_PERSONAS_OF = select(col(ChannelPersona.channel_id), col(ChannelPersona.personality), col(ChannelPersona.llms)).where(
    ChannelPersona.bot_id == bindparam("bot_id"), col(ChannelPersona.channel_id).in_(bindparam("wanted", expanding=True)))


def for_message(*, session: Session, bot_id: int, channel_id: str | None,
                parent_channel_id: str | None) -> Any:
    """The persona a message in ``channel_id`` (a thread: its own, else its parent channel's) answers with:
    a row with its ``personality`` and ``llms``, or None."""
    wanted = [c for c in (channel_id, parent_channel_id) if c]
    if not wanted:
        return None
    rows = {r.channel_id: r for r in session.connection().execute(
        _PERSONAS_OF, {"bot_id": bot_id, "wanted": wanted}).all()}
    return next((rows[c] for c in wanted if c in rows), None)


def with_addition(personality: str, addition: str) -> str:
    """The bot's personality with a channel's addition after it."""
    return f"{personality}\n\n{addition}".strip() if addition else personality
