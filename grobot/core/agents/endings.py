"""How a text cut at its output cap ends for a reader (an answer, an advisor's section)."""

from __future__ import annotations

import re

from grobot.core.markdown_fences import fence_open_at, fences_closed

# The end of a sentence: . ! ? with a closing quote or bracket, before a space or the end; or a CJK
# full stop (no space follows it).
_SENTENCE_END = re.compile(r"[.!?][\"')\]”’]*(?=\s|$)|[。！？][」』”’）]*")
KEEP_AT_LEAST = 0.6  # a cut answer ends at its last full sentence if that keeps this share of it


def ended_cleanly(text: str) -> str:
    """An answer cut at its output cap, ended for a reader: at its last full sentence when that keeps
    most of it, else with an ellipsis (an open code block is closed)."""
    body = text.rstrip()
    if fence_open_at(body) is not None:  # inside a code block: no sentences to look for
        return f"{fences_closed(body)}\n…"
    ends = [m.end() for m in _SENTENCE_END.finditer(body)]
    if ends and ends[-1] == len(body):
        return body
    if ends and ends[-1] >= KEEP_AT_LEAST * len(body):
        return body[: ends[-1]]
    return body.rstrip(",;:-–— ") + "…"
