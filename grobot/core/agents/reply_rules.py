"""The reply rules: whether a message is for the bot, decided without an LLM (light to import:
an idle bot process evaluates them for every message it sees)."""

from __future__ import annotations

import re

from grobot.core.agents.types import IncomingMessage, ReplyRules


def rules_decision(bot: ReplyRules, msg: IncomingMessage) -> bool | None:
    """True: answer; False: stay silent; None: the rules leave it open (ask the decision model).

    Order: never other bots or itself; the allowed-channel list; DMs; mentions; replies
    to the bot; always-on channels; keywords; then "when relevant" leaves it open. ``bot``:
    its :class:`ReplyRules`, or anything with those fields (a ``Bot`` row). A thread follows
    its channel's rules, and its own when it is listed itself.
    """
    if msg.author_is_bot:
        return False
    if msg.platform != "discord":
        return True  # Test Chat and CLI always get an answer
    if msg.is_dm:
        return bool(bot.reply_in_dms)
    channels = _channels(msg)
    if bot.allowed_channel_ids and not channels.intersection(bot.allowed_channel_ids):
        return False
    if msg.mentions_bot and bot.reply_to_mentions:
        return True
    if msg.is_reply_to_bot and bot.reply_to_replies:
        return True
    if channels.intersection(bot.always_on_channel_ids or []):
        return True
    if bot.keywords and _has_keyword(msg.content, bot.keywords):
        return True
    if bot.reply_when_relevant:
        return None
    return False


def silence_reason(bot: ReplyRules, msg: IncomingMessage) -> str:
    """Why the rules leave ``msg`` unanswered, in plain words for a user who asked the bot
    directly (``/ask``, ``/council``: a command is never left without a word)."""
    if msg.is_dm:
        return "Sorry, I don't answer direct messages; ask me in a server channel."
    if bot.allowed_channel_ids and not _channels(msg).intersection(bot.allowed_channel_ids):
        return "Sorry, I don't answer in this channel."
    return "Sorry, I'm not set to answer questions here."


def _channels(msg: IncomingMessage) -> set[str]:
    """The channel ids the rules look for: a thread's own, and its channel's."""
    return {c for c in (msg.channel_id, msg.parent_channel_id) if c}


def _has_keyword(text: str, keywords: list[str]) -> bool:
    lowered = text.lower()
    for keyword in keywords:
        keyword = keyword.strip().lower()
        if keyword and re.search(rf"(?<!\w){re.escape(keyword)}(?!\w)", lowered):
            return True
    return False
