"""Printing helpers shared by the commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "value"):
        return value.value
    return str(value)


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
