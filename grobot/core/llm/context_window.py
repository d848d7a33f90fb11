"""The context window: estimate tokens and trim a history to fit the model's window.

Token counts are estimated (about 4 characters per token) where the provider does
not report them; no tokenizer files are downloaded at run time.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


# How a BPE tokenizer (GPT's, Llama's, SmolLM's) cuts text, roughly: a word with its space is one token
# (a long one, one per 7 letters), a number one per 3 digits, each punctuation mark or symbol one, each
# character of a script written without spaces (CJK) one.
_TEXT_PIECES = re.compile(r"(?P<word>[^\W\d_]+)|(?P<number>\d+)|(?P<space>\s+)|(?P<other>.)", re.UNICODE)
_WIDE = re.compile("[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\u3040-\u30ff]")


def text_tokens(text: str) -> int:
    """An estimate of the tokens a model reads for ``text`` (a prompt field shown against a context window),
    closer to a real tokenizer's count than :func:`estimate_tokens` for words, numbers and other scripts."""
    total = 0
    for match in _TEXT_PIECES.finditer(text or ""):
        kind, piece = match.lastgroup, match.group()
        if kind == "word":
            wide = len(_WIDE.findall(piece))
            total += wide + (1 + (len(piece) - wide - 1) // 7 if len(piece) > wide else 0)
        elif kind == "number":
            total += (len(piece) + 2) // 3
        elif kind == "other":
            total += 1
        elif piece.count("\n") > 1:  # blank lines are tokens too; a space belongs to the next word
            total += 1
    return total


def message_tokens(message: dict[str, Any]) -> int:
    content = message.get("content") or ""
    if isinstance(content, list):
        size = 0
        for part in content:
            size += estimate_tokens(part.get("text", "")) if part.get("type") == "text" else 800
    else:
        size = estimate_tokens(str(content))
    if message.get("tool_calls"):
        size += estimate_tokens(json.dumps(message["tool_calls"]))
    return size + MESSAGE_OVERHEAD


def messages_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(message_tokens(m) for m in messages)


def prompt_room(context_window: int, *, reserve: int | None = None) -> int:
    """Tokens the prompt may use: the window minus room for the answer."""
    default = min(1024, context_window // 4)
    # A cap larger than the default reserve never leaves the prompt less than three quarters of the window.
    reserve = min(reserve, default) if reserve is not None and reserve > default else (reserve if reserve is not None else default)
    return max(64, context_window - reserve)


def _units(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Messages grouped so that an assistant's tool calls stay with their tool results."""
    units: list[list[dict[str, Any]]] = []
    for message in messages:
        if message.get("role") == "tool" and units:
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _cut(message: dict[str, Any], tokens: int) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, str):
        return message
    keep = max(0, tokens * CHARS_PER_TOKEN - 1)  # room for the "…" that marks the cut
    return {**message, "content": "…" + content[-keep:] if len(content) > keep + 1 else content}


def newest_within(history: list[dict[str, Any]], tokens: int) -> list[dict[str, Any]]:
    """The newest messages of a stored ``history`` that ``tokens`` (the largest context window of the
    models that will read it) can hold together, at least the newest one; a tool result stays with its call.

    What :func:`trim_history` would keep of it in any prompt of such a window is kept (a prompt has
    its system message, the user's message and names in front of the user messages besides, so it
    keeps no more), and what no such prompt can hold is not sent from the supervisor to the bot.
    """
    kept: list[list[dict[str, Any]]] = []
    used = 0
    for unit in reversed(_units(history)):
        used += messages_tokens(unit)
        if used > tokens and kept:
            break
        kept.append(unit)
    return [m for unit in reversed(kept) for m in unit]


def trim_history(messages: list[dict[str, Any]], room: int) -> list[dict[str, Any]]:
    """Drop the oldest messages until the rest fits ``room`` tokens (:func:`prompt_room`).

    Leading system messages are always kept first; the newest message is always kept
    (cut from its start when it alone is too long); tool results never lose their call.
    """
    head = []
    index = 0
    while index < len(messages) and messages[index].get("role") == "system":
        head.append(messages[index])
        index += 1
    # Fast path (the usual case): everything fits and no tool result leads the history.
    if (index >= len(messages) or messages[index].get("role") != "tool") and messages_tokens(messages) <= room:
        return list(messages)
    rest = messages[index:]
    used = messages_tokens(head)
    kept: list[list[dict[str, Any]]] = []
    for unit in reversed(_units(rest)):
        size = messages_tokens(unit)
        if used + size > room and kept:
            break
        if used + size > room:  # the newest message alone is too long
            unit = unit[:-1] + [_cut(unit[-1], max(16, room - used - MESSAGE_OVERHEAD))]
            size = messages_tokens(unit)
        kept.append(unit)
        used += size
    result = head + [m for unit in reversed(kept) for m in unit]
    # A tool result must follow its call: drop orphans at the start of the kept part.
    while len(result) > len(head) and result[len(head)].get("role") == "tool":
        result.pop(len(head))
    dropped = len(messages) - len(result)
    if dropped:
        logger.debug("Trimmed %d old messages to fit %d tokens", dropped, room)
    return result
