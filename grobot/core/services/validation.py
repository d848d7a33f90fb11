"""Turning pydantic validation errors into one clear line (or one message per field)."""

from __future__ import annotations

import logging
import re
from typing import Any, TypeVar

import pydantic

from grobot.core.errors import ValidationError

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=pydantic.BaseModel)


def describe(exc: pydantic.ValidationError, model: type[pydantic.BaseModel] | None = None) -> str:
    """``field: problem; other: problem`` for a pydantic error, in plain words (never pydantic's
    own "Input should be ..." or "Value error, ..."); with ``model``, a bound names the field's
    whole range ("must be between 0 and 20")."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "value"
        parts.append(f"{loc}: {_plain(err, model)}")
    return "; ".join(parts)


def validate(model: type[M], data: dict[str, Any]) -> M:
    """``model(**data)``, raising :class:`ValidationError` with a readable message."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ValidationError(describe(exc, model)) from None


# Fields whose name reads differently in the web app's labels than word by word.
_LABELS = {"api_key": "API key", "base_url": "Base URL", "url": "URL", "cwd": "Working directory", "args": "Arguments",
           "env": "Environment", "token": "Discord token"}


def label(name: str) -> str:
    """A field's name as people read it: ``max_tool_rounds`` -> ``Max tool rounds``, ``api_key`` -> ``API key``."""
    if name in _LABELS:
        return _LABELS[name]
    words = name.replace("_", " ").replace(".", " ").strip()
    return words[:1].upper() + words[1:]


def sentences(message: str) -> str:
    """A service's ``field: problem; other: problem`` as sentences naming each field
    ("Max tool rounds must be between 0 and 20.", "Model is required."); other text is
    returned capitalised."""
    problems = field_problems(message)
    if problems:
        return " ".join(field_sentence(name, problem) for name, problem in problems)
    return capitalised(message)


def field_problems(message: str) -> list[tuple[str, str]]:
    """The ``(field, problem)`` pairs of a service's ``field: problem; other: problem`` message
    (empty when it is other text), for forms that show each next to its field."""
    parts = [part.partition(": ") for part in _FIELD_PARTS.split(message)]
    if all(sep and _FIELD_NAME.fullmatch(name) and problem.strip() for name, sep, problem in parts):
        return [(name, problem.strip()) for name, _sep, problem in parts]
    return []


def capitalised(text: str) -> str:
    """``text`` with its first letter in upper case (a field's problem shown under it)."""
    return text[:1].upper() + text[1:]


def field_sentence(name: str, problem: str, shown: str | None = None) -> str:
    """One field's problem as a sentence that starts with the field's label (``shown``, else
    :func:`label` of its name)."""
    problem, shown = problem.strip().rstrip("."), shown or label(name)
    first = problem.split(" ", 1)[0]
    if not first[:1].islower() or first in _SUBJECTS:  # already a sentence of its own: after the label
        return f"{shown}: {capitalised(problem)}."
    return f"{shown} {_verb(problem)}."


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
            errors.setdefault(key, _plain(err, model))
        return errors
    return {}


def _verb(problem: str) -> str:
    """A problem as the rest of a sentence about its field ("required" -> "is required")."""
    return problem if problem.split(" ", 1)[0] in _VERBS else f"is {problem}"


_FIELD_NAME = re.compile(r"[a-z][a-z0-9_.]*")
_FIELD_PARTS = re.compile(r"; (?=[a-z][a-z0-9_.]*: )")  # "a: problem; b: problem", not "...; one of: x, y"
_VERBS = {"must", "is", "has", "needs", "cannot", "can", "may", "takes", "should"}  # "Label <problem>."
_SUBJECTS = {"the", "a", "an", "this", "that", "it", "its", "unknown"}  # a problem with a subject: "Label: <Problem>."
_BOUND_ERRORS = {"less_than_equal", "greater_than_equal", "less_than", "greater_than"}


def _bounds(model: type[pydantic.BaseModel] | None, loc: Any) -> tuple[Any, Any]:
    """The (lowest, highest) a top-level field of ``model`` allows (None where unbounded)."""
    info = model.model_fields.get(str(loc[0])) if model is not None and loc else None
    low = high = None
    for rule in info.metadata if info is not None else ():
        low = getattr(rule, "ge", getattr(rule, "gt", low))
        high = getattr(rule, "le", getattr(rule, "lt", high))
    return low, high


def _plain(err: Any, model: type[pydantic.BaseModel] | None = None) -> str:
    """A pydantic error in the words a form shows next to its field."""
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    if kind in _BOUND_ERRORS:
        low, high = _bounds(model, err.get("loc", ()))
        if low is not None and high is not None:
            return f"must be between {_num(low)} and {_num(high)}"
    plain = {
        "extra_forbidden": "unknown field",
        "missing": "required",
        "int_parsing": "must be a whole number",
        "int_from_float": "must be a whole number",
        "int_type": "must be a whole number",
        "float_parsing": "must be a number",
        "float_type": "must be a number",
        "bool_parsing": "must be yes or no",
        "less_than_equal": f"must be at most {_num(ctx.get('le'))}",
        "greater_than_equal": f"must be at least {_num(ctx.get('ge'))}",
        "less_than": f"must be less than {_num(ctx.get('lt'))}",
        "greater_than": f"must be more than {_num(ctx.get('gt'))}",
        "string_too_long": f"must be at most {ctx.get('max_length')} characters",
        "string_too_short": f"must be at least {ctx.get('min_length')} characters",
        "too_long": f"must have at most {ctx.get('max_length')} items",
    }.get(kind)
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        plain = "required"
    if plain:
        return plain
    text = str(err.get("msg", "invalid")).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
