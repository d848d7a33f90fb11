"""Context: the hybrid system prompt and the user's message as the models see it.

System prompt = core directives (code) + runtime context (platform, place, time,
attachments, the user's profile directives and notes, retrieved memories) + the bot's
personality (database).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.types import IncomingMessage
from grobot.core.llm import errors

logger = logging.getLogger(__name__)

MAX_ATTACHMENT_CHARS = 8000
MAX_NOTES = 20




@dataclass
class UserKnowledge:
    """What the bot knows of the person it answers."""

    directives: str = ""
    notes: list[tuple[str, float]] = field(default_factory=list)  # (note, reliability)


def one_line(text: object) -> str:
    """``text`` on one line: a name, a note or a memory (what users and models wrote) cannot add lines
    of its own (a rule, a directive) to the system prompt."""
    return errors.one_line(text, limit=None)


def _place(msg: IncomingMessage) -> str:
    if msg.platform == "test_chat":
        return "the Test Chat of the GroBot web app (an admin or tester trying you out)"
    if msg.platform == "cli":
        return "the GroBot command line (an admin trying you out)"
    if msg.is_dm:
        return "a Discord direct message"
    parts = ["Discord"]
    if msg.guild_name or msg.guild_id:
        parts.append(f'server "{one_line(msg.guild_name or msg.guild_id)}"')
    if msg.channel_name or msg.channel_id:
        kind = "thread" if msg.conversation_key.startswith("thread:") else "channel"
        parts.append(f"{kind} #{one_line(msg.channel_name or msg.channel_id)}")
    return ", ".join(parts)


def build_system_prompt(
    *,
    bot_name: str,
    personality: str,
    msg: IncomingMessage,
    user: UserKnowledge,
    memories: list[str],
    unavailable: dict[str, str] | None = None,
    now: datetime | None = None,
) -> str:
    now = now or datetime.now(UTC)
    lines = [prompts.CORE_DIRECTIVES, "", prompts.RUNTIME_HEADER]
    lines.append(f"- You are {bot_name}, on {_place(msg)}.")
    lines.append(f"- Now: {now.strftime('%A %Y-%m-%d %H:%M')} UTC.")
    author = one_line(msg.author_name)
    lines.append(f"- You are answering {author} (user id {msg.author_id}).")
    if msg.attachments:
        names = ", ".join(f"{one_line(a.filename)} ({one_line(a.content_type)}, {a.size} bytes)"
                          for a in msg.attachments)
        lines.append(f"- The message has attachments: {names}.")
    if user.directives.strip():
        lines.append(f"- How to treat {author} (set by an admin): {user.directives.strip()}")
    if user.notes:
        lines.append(f"- What you know about {author} (reliability in brackets):")
        lines.extend(f"  - {one_line(note)} [{reliability:.1f}]" for note, reliability in user.notes[:MAX_NOTES])
    if memories:
        lines.append("- Things you remember from earlier conversations:")
        lines.extend(f"  - {one_line(m)}" for m in memories if m.strip())
    if unavailable:  # their names only: why (an address, a crashed server's last stderr) is for the admins
        lines.append("- Tools that cannot be used right now (say so if the user needs them): "
                     + ", ".join(one_line(name) for name in unavailable))
    lines += ["", prompts.PERSONALITY_HEADER, personality.strip() or prompts.DEFAULT_PERSONALITY]
    return "\n".join(lines)


def user_text(msg: IncomingMessage) -> str:
    """The message text with its text attachments appended."""
    text = msg.content
    for attachment in msg.attachments:
        if attachment.text:
            body = attachment.text[:MAX_ATTACHMENT_CHARS]
            cut = " (cut)" if len(attachment.text) > MAX_ATTACHMENT_CHARS else ""
            text += f"\n\n[attachment {attachment.filename}{cut}]\n{body}"
    return text


def user_message(msg: IncomingMessage, *, with_name: bool, images: bool) -> dict[str, Any]:
    """The user's message in OpenAI format; images as content parts when the model takes them."""
    text = user_text(msg)
    if with_name:
        text = f"{one_line(msg.author_name)}: {text}"
    pictures = [a for a in msg.attachments if a.image_base64] if images else []
    if not pictures:
        return {"role": "user", "content": text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for a in pictures:
        kind = a.content_type if a.content_type.startswith("image/") else "image/png"
        parts.append({"type": "image_url", "image_url": {"url": f"data:{kind};base64,{a.image_base64}"}})
    return {"role": "user", "content": parts}


def history_for_model(history: list[dict[str, Any]], *, with_names: bool) -> list[dict[str, Any]]:
    """Stored history as the models see it: speakers' names in front of user messages."""
    result = []
    for item in history:
        item = dict(item)
        name = item.pop("name", None) if item.get("role") == "user" else item.get("name")
        if item.get("role") == "user" and with_names and name and isinstance(item.get("content"), str):
            item["content"] = f"{one_line(name)}: {item['content']}"
        result.append(item)
    return result
