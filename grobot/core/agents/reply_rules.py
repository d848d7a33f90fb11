"""The reply rules: whether a message is for the bot, decided without an LLM (light to import:
an idle bot process evaluates them for every message it sees)."""

from __future__ import annotations

import re

from grobot.core.agents.types import IncomingMessage, ReplyRules


def rules_decision(bot: ReplyRules, msg: IncomingMessage) -> bool | None:
    """True: answer; False: stay silent; None: the rules leave it open (ask the decision model).

    Order: never other bots or itself; who may use the bot (:func:`access_refused`); the
    allowed-channel list; DMs; mentions; replies to the bot; always-on channels; keywords; then
    "when relevant" leaves it open. ``bot``:
    its :class:`ReplyRules`, or anything with those fields (a ``Bot`` row). A thread follows
    its channel's rules, and its own when it is listed itself.
    """
    if msg.author_is_bot:
        return False
    if msg.platform != "discord":
        return True  # Test Chat and CLI always get an answer
    if access_refused(bot, msg):
        return False
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
    if msg.platform == "discord" and access_refused(bot, msg):
        return ACCESS_REFUSED
    if msg.is_dm:
        return "Sorry, I don't answer direct messages; ask me in a server channel."
    if bot.allowed_channel_ids and not _channels(msg).intersection(bot.allowed_channel_ids):
        return "Sorry, I don't answer in this channel."
    return "Sorry, I'm not set to answer questions here."


ACCESS_REFUSED = "Sorry, you are not allowed to use this bot here."


def access_refused(bot: ReplyRules, msg: IncomingMessage) -> bool:
    """Whether the author of ``msg`` may not use the bot: a blocked user, someone with a blocked
    role, or, when the bot has allowed users or roles, someone who is neither allowed nor has an
    allowed role. A block wins over an allowance. A DM carries no roles: with allowed roles set,
    only the allowed users are answered there."""
    blocked_users, blocked_roles = bot.blocked_user_ids, bot.blocked_role_ids
    allowed_users, allowed_roles = bot.allowed_user_ids, bot.allowed_role_ids
    if not (blocked_users or blocked_roles or allowed_users or allowed_roles):
        return False  # the common case: no lists, nothing to look up
    user, roles = str(msg.author_id or ""), msg.author_role_ids
    if (blocked_users and user in blocked_users) or (blocked_roles and any(r in blocked_roles for r in roles)):
        return True
    if not (allowed_users or allowed_roles):
        return False
    return not ((allowed_users and user in allowed_users) or (allowed_roles and any(r in allowed_roles for r in roles)))


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
