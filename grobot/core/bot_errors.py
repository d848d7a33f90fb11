"""What an admin is told when Discord refuses a bot (plain text; bot processes import it)."""

from __future__ import annotations

TOKEN_REJECTED = "Discord rejected the token: set a new one (Bot page of the Discord developer portal)"
INTENT_NAMES = {"message_content": "Message Content Intent", "members": "Server Members Intent",
                "presences": "Presence Intent"}


def intent_error(intents: list[str]) -> str:
    """The error shown when Discord refuses privileged intents (close 4014)."""
    names = " and ".join(INTENT_NAMES.get(i, i) for i in intents) or "the privileged intents this bot asks for"
    return (f"Discord refused the privileged intent: enable {names} on the Bot page of the Discord "
            "developer portal (or turn it off for this bot)")
