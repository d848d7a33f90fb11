"""Printing helpers shared by the commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TextIO

from grobot.core.visible_text import visible_controls

# How a command names a service's field in its errors: its flag ("--context-window"), or a
# function of the problem that returns the whole text ("--secret KEY=...: ...").
Flag = str | Callable[[str], str]


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "value"):
        return value.value
    return str(value)


def terminal_text(text: str) -> str:
    """``text`` as a terminal shows it without acting on it: each control character written as its
    escape (``\\x1b``), line feeds and tabs kept (a CR LF line end is a line feed)."""
    return visible_controls(text.replace("\r\n", "\n"), keep="\n\t")


class TerminalSafe:
    """A text stream that writes :func:`terminal_text` of what it is given to ``stream``.

    Every command prints text it does not control (answers, tool results, MCP servers' errors,
    memories, names): none of it may move the cursor, retitle the window or set the clipboard.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_text(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding...
        return getattr(self.stream, name)


@contextmanager
def terminal_safe_output() -> Iterator[None]:
    """Within this block, ``sys.stdout`` and ``sys.stderr`` write :func:`terminal_text` (each stream is
    given back after it unless something else replaced it meanwhile)."""
    out, err = TerminalSafe(sys.stdout), TerminalSafe(sys.stderr)
    before = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.stdout is out:
            sys.stdout = before[0]
        if sys.stderr is err:
            sys.stderr = before[1]


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=_default))


def print_table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> None:
    rows = [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    for row in rows:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())


def read_secret_from_stdin(what: str) -> str:
    """One line from stdin (for ``--token-stdin`` and friends); never echoed."""
    from grobot.core.errors import ValidationError

    if sys.stdin is None or sys.stdin.closed:
        raise ValidationError(f"expected the {what} on standard input")
    value = sys.stdin.readline().strip()
    if not value:
        raise ValidationError(f"expected the {what} on standard input, got nothing")
    return value


def flag_message(message: str, flags: Mapping[str, Flag]) -> str:
    """A service's ``field: problem; other: problem`` message with the command's flags for the fields."""
    from grobot.core.services.validation import field_problems

    problems = field_problems(message)
    if not any(name in flags for name, _problem in problems):
        return message
    parts = []
    for name, problem in problems:
        flag = flags.get(name, name)
        parts.append(flag(problem) if callable(flag) else f"{flag}: {problem}")
    return "; ".join(parts)


@contextmanager
def naming_flags(flags: Mapping[str, Flag]) -> Iterator[None]:
    """Within this block, a service's :class:`ValidationError` names the command's flags, not its fields
    (``context_window: must be ...`` -> ``--context-window: must be ...``)."""
    from grobot.core.errors import ValidationError

    try:
        yield
    except ValidationError as exc:
        message = flag_message(str(exc), flags)
        if message == str(exc):
            raise
        raise ValidationError(message) from None
