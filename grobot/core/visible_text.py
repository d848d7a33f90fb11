"""Text for a terminal or a log line: control characters are written out, never acted on."""

from __future__ import annotations

import re

# What a terminal acts on instead of showing: the C0 controls (ESC starts colour, cursor, title and
# clipboard sequences; CR overwrites the line; LF starts what looks like a new log entry), DEL, the
# C1 controls (0x9b is a one-character ESC [) and the bidirectional overrides that show text in
# another order than it is.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def visible_controls(text: str, *, keep: str = "") -> str:
    """``text`` with each control character but those in ``keep`` written as its escape
    (``\\x1b``, ``\\u202e``)."""

    def escaped(match: re.Match[str]) -> str:
        char = match.group()
        if char in keep:
            return char
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _CONTROLS.sub(escaped, text)
