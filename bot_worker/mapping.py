"""A Discord message as the chain sees it (:class:`IncomingMessage`); duck-typed, no discord import."""

from __future__ import annotations

import logging
import re
from typing import Any

from grobot.core.agents.types import Attachment, IncomingMessage

logger = logging.getLogger(__name__)

_USER_MENTION = re.compile(r"<@!?(\d+)>")


def conversation_key(channel: Any, *, is_dm: bool) -> str:
    """``dm:<channel>``, ``thread:<thread>`` or ``guild:<channel>``."""
    if is_dm:
        return f"dm:{channel.id}"
    if parent_channel_id(channel) is not None:
        return f"thread:{channel.id}"
    return f"guild:{channel.id}"


def parent_channel_id(channel: Any) -> str | None:
    """The channel a thread is in (None: not a thread)."""
    parent = getattr(channel, "parent_id", None)
    return str(parent) if parent is not None and "thread" in str(getattr(channel, "type", "")) else None


def clean_content(content: str, *, bot_user_id: int, names: dict[int, str]) -> str:
    """Drop the bot's own mention; show other user mentions as ``@name``."""

    def repl(match: re.Match[str]) -> str:
        uid = int(match.group(1))
        if uid == bot_user_id:
            return ""
        return "@" + names.get(uid, "user")

    return re.sub(r"[ \t]{2,}", " ", _USER_MENTION.sub(repl, content or "")).strip()


def role_ids(member: Any) -> list[str]:
    """The ids of a guild member's roles, without @everyone (none for a user outside a guild: a DM)."""
    roles = getattr(member, "roles", None)
    if not roles:
        return []
    return [str(role.id) for role in roles if not role.is_default()]


def to_incoming(message: Any, *, bot_id: int, bot_user_id: int,
                attachments: list[Attachment] | None = None) -> IncomingMessage:
    """Map a discord.py ``Message`` (or any object shaped like it) to an :class:`IncomingMessage`."""
    guild = getattr(message, "guild", None)
    channel = message.channel
    is_dm = guild is None
    mentions = list(getattr(message, "mentions", []) or [])
    names = {int(u.id): getattr(u, "display_name", None) or u.name for u in mentions}
    reference = getattr(message, "reference", None)
    resolved = getattr(reference, "resolved", None) if reference is not None else None
    replied_author = getattr(resolved, "author", None)
    is_reply_to_bot = replied_author is not None and int(replied_author.id) == bot_user_id
    author = message.author
    return IncomingMessage(
        bot_id=bot_id,
        conversation_key=conversation_key(channel, is_dm=is_dm),
        content=clean_content(message.content or "", bot_user_id=bot_user_id, names=names),
        author_id=str(author.id),
        author_name=getattr(author, "display_name", None) or author.name,
        platform="discord",
        guild_id=str(guild.id) if guild is not None else None,
        guild_name=getattr(guild, "name", None) if guild is not None else None,
        channel_id=str(channel.id),
        channel_name=getattr(channel, "name", None),
        parent_channel_id=parent_channel_id(channel) if not is_dm else None,
        discord_message_id=str(message.id),
        attachments=list(attachments or []),
        is_dm=is_dm,
        mentions_bot=any(int(u.id) == bot_user_id for u in mentions),
        is_reply_to_bot=is_reply_to_bot,
        author_is_bot=bool(getattr(author, "bot", False)),
        author_role_ids=role_ids(author) if not is_dm else [],
        created_at=getattr(message, "created_at", None),
    )


TEXT_EXTENSIONS = (".txt", ".md", ".py", ".json", ".csv", ".log", ".yaml", ".yml", ".toml", ".ini", ".xml",
                   ".html", ".js", ".ts", ".sql", ".sh", ".c", ".h", ".cpp", ".java", ".go", ".rs", ".rb")
MAX_TEXT_BYTES = 200_000
MAX_IMAGE_BYTES = 8 * 1024 * 1024


def attachment_kind(filename: str, content_type: str | None, size: int) -> str:
    """``"text"``, ``"image"`` or ``"other"`` (too large counts as other)."""
    ctype = (content_type or "").split(";")[0].strip().lower()
    name = filename.lower()
    if (ctype.startswith("text/") or ctype in ("application/json", "application/xml") or name.endswith(TEXT_EXTENSIONS)) \
            and size <= MAX_TEXT_BYTES:
        return "text"
    if ctype.startswith("image/") and size <= MAX_IMAGE_BYTES:
        return "image"
    return "other"
