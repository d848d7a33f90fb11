"""Turning pydantic validation errors into one clear line."""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic

from grobot.core.errors import ValidationError

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
