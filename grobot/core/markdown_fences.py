"""Code blocks in Markdown a model wrote: where one is open, and the text with it closed.

A model's answer may open a fenced code block and never close it. Shown as it is, everything
after it (a note, the next heading of a council's synthesis) would render as code.
"""

from __future__ import annotations

import re

FENCE = re.compile(r"^\s*(```+|~~~+)")  # a line that opens or closes a fenced code block


def fence_open_at(text: str, position: int | None = None) -> str | None:
    """The fence line of the code block open at ``position`` of ``text`` (default: its end);
    None outside code."""
    limit = len(text) + 1 if position is None else position
    in_code, fence = False, ""
    pos = 0
    for line in text.split("\n"):
        if pos >= limit:
            break
        if FENCE.match(line):
            if not in_code:
                in_code, fence = True, line.strip()
            else:
                in_code = False
        pos += len(line) + 1
    return fence if in_code else None


def fences_closed(text: str) -> str:
    """``text`` with a code block left open at its end closed (with the fence it opened with)."""
    fence = fence_open_at(text)
    if fence is None:
        return text
    closing = fence[: len(fence) - len(fence.lstrip(fence[0]))]  # its run of ` or ~, without the language
    return f"{text.rstrip()}\n{closing}"
