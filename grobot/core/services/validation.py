"""Turning pydantic validation errors into one clear line (or one message per field)."""

from __future__ import annotations

import logging
from typing import Any, TypeVar

import pydantic

from grobot.core.errors import ValidationError

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=pydantic.BaseModel)


def describe(exc: pydantic.ValidationError) -> str:
    """``field: problem; other: problem`` for a pydantic error."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "value"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            msg = "unknown field"
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def validate(model: type[M], data: dict[str, Any]) -> M:
    """``model(**data)``, raising :class:`ValidationError` with a readable message."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ValidationError(describe(exc)) from None


def field_errors(model: type[pydantic.BaseModel], data: dict[str, Any]) -> dict[str, str]:
    """The problem of each top-level field of ``data`` for ``model`` (empty when it is valid),
    for forms that show an error next to its field."""
    try:
        model.model_validate(data)
    except pydantic.ValidationError as exc:
        errors: dict[str, str] = {}
        for err in exc.errors():
            loc = err.get("loc", ())
            key = str(loc[0]) if loc else "value"
            errors.setdefault(key, _plain(err))
        return errors
    return {}


def _plain(err: Any) -> str:
    """A pydantic error in the words a form shows next to its field."""
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    plain = {
        "extra_forbidden": "unknown field",
        "missing": "required",
        "int_parsing": "expected a whole number",
        "int_from_float": "expected a whole number",
        "float_parsing": "expected a number",
        "less_than_equal": f"must be at most {_num(ctx.get('le'))}",
        "greater_than_equal": f"must be at least {_num(ctx.get('ge'))}",
        "string_too_long": f"at most {ctx.get('max_length')} characters",
    }.get(kind)
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        plain = "required"
    return plain or str(err.get("msg", "invalid")).removeprefix("Value error, ")


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
