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
        msg = err.get("msg", "invalid")
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
            msg = "unknown field" if err.get("type") == "extra_forbidden" else err.get("msg", "invalid")
            errors.setdefault(key, msg.removeprefix("Value error, "))
        return errors
    return {}
