"""Text a bot sends: an answer split into Discord messages (2000 characters each, never inside a
code block), and the reply to a failed answer."""

from __future__ import annotations

import logging
import re
from typing import Any

from grobot.core.markdown_fences import FENCE, fence_open_at, fences_closed

logger = logging.getLogger(__name__)

DISCORD_LIMIT = 2000
NOT_ANSWERED = "Sorry, I'm not answering that here."  # the decision model or the moderation chose silence
ERROR_REPLY = "Sorry, I could not answer that: {error}"


def public_text(data: dict[str, Any]) -> str:
    """What a failed run's error event tells a Discord user: its public reason when the run gave one
    (never a server's address or a provider's reply), else its message (a refusal, a stop)."""
    return str(data.get("public") or data.get("message") or "unknown error")


_CLOSE = "\n```"

# Cut priorities: a higher one always wins over a lower one, whatever its position.
_PARAGRAPH, _LINE, _SPACE, _IN_CODE_LINE = 3, 2, 1, 0


def _candidates(text: str, limit: int) -> tuple[dict[int, int], list[tuple[int, str]]]:
    """Best cut per priority within ``limit``, and where code blocks open.

    Returns ({priority: cut position}, [(line start, fence line)] of the code block that is
    open at each in-code line cut). A cut position is where the next part starts.
    """
    best: dict[int, int] = {}
    reopen_at: dict[int, str] = {}
    in_code = False
    fence_line = ""
    pos = 0
    lines = text.split("\n")
    for index, line in enumerate(lines):
        start, end = pos, pos + len(line)
        pos = end + 1
        if start > limit:
            break
        match = FENCE.match(line)
        was_in_code = in_code
        if match:
            if not in_code:
                in_code, fence_line = True, line.strip()
            else:
                in_code = False
        # Spaces inside a prose line.
        if not was_in_code and not match:
            for m in re.finditer(r" ", line):
                cut = start + m.start() + 1
                if 0 < cut <= limit:
                    best[_SPACE] = max(best.get(_SPACE, 0), cut)
        if index == len(lines) - 1:
            break
        cut = end + 1  # the next line starts here
        if in_code:
            # A cut inside a code block needs room to close it.
            if cut - 1 + len(_CLOSE) <= limit and start > 0 and not match:
                if best.get(_IN_CODE_LINE, 0) < cut:
                    best[_IN_CODE_LINE] = cut
                    reopen_at[cut] = fence_line
            continue
        if cut - 1 <= limit:
            next_line = lines[index + 1]
            priority = (_PARAGRAPH if (line.strip() == "" or next_line.strip() == "" or match or FENCE.match(next_line))
                        else _LINE)
            best[priority] = max(best.get(priority, 0), cut)
            if priority == _PARAGRAPH:
                best[_LINE] = max(best.get(_LINE, 0), cut)
    return best, [(c, f) for c, f in reopen_at.items()]


def with_note(text: str, note: str) -> str:
    """``text`` with ``note`` ("(stopped)", an error) after it, outside any code block left open."""
    return f"{fences_closed(text.rstrip())}\n\n{note}"


def split_message(text: str, limit: int = DISCORD_LIMIT) -> list[str]:
    """Split ``text`` into parts of at most ``limit`` characters.

    Cuts prefer a paragraph boundary (or the end of a code block), then a line end, then a
    space, all outside code blocks. Only a code block longer than a whole message is cut
    inside, at a line end, and then it is closed in one part and reopened (same language)
    in the next, so every part renders as valid Markdown.
    """
    if limit < 20:
        raise ValueError("limit too small")
    parts: list[str] = []
    text = text.strip("\n")
    while len(text) > limit:
        best, reopen = _candidates(text, limit)
        reopen_map = dict(reopen)
        fence: str | None = None
        for priority in (_PARAGRAPH, _LINE, _SPACE):
            if best.get(priority, 0) > 0:
                cut = best[priority]
                break
        else:
            if best.get(_IN_CODE_LINE, 0) > 0:
                cut = best[_IN_CODE_LINE]
                fence = reopen_map.get(cut)
            else:
                # No boundary at all: a hard cut (closing a code block if one is open).
                fence = fence_open_at(text, limit - len(_CLOSE))
                cut = limit - len(_CLOSE) if fence is not None else limit
        head, rest = text[:cut].rstrip(), text[cut:].lstrip("\n")
        if fence is not None:
            head = head + _CLOSE
            rest = fence + "\n" + rest
        if not head.strip():  # never emit an empty part
            head, rest = text[:limit], text[limit:]
        parts.append(head)
        text = rest
    if text.strip():
        parts.append(text)
    return parts
