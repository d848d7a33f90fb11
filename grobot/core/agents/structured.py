"""Structured (JSON) answers of the decision and tools models: parse, repair, validate."""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import json_repair
from jsonschema import validators
from jsonschema.exceptions import SchemaError

logger = logging.getLogger(__name__)


class BadJSON(ValueError):
    """The answer is not a JSON object, even after repair."""


def parse_object(text: str) -> tuple[dict[str, Any], bool]:
    """``(object, repaired)`` from a model's answer; broken JSON is repaired with json-repair."""
    try:
        value = json.loads(text)
        repaired = False
    except ValueError:
        try:
            value = json_repair.loads(text)
        except Exception as exc:  # json-repair gives up on some inputs
            raise BadJSON(f"not JSON: {exc}") from None
        repaired = True
    if not isinstance(value, dict):
        raise BadJSON("the answer is not a JSON object")
    return value, repaired


def validation_errors(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Readable messages for every way ``instance`` breaks ``schema`` (empty: valid)."""
    try:
        cls = validators.validator_for(schema)
        cls.check_schema(schema)
    except SchemaError:
        logger.warning("A tool has an invalid input schema; arguments are not checked")
        return []
    errors = sorted(cls(schema).iter_errors(instance), key=lambda e: list(e.path))
    result = []
    for error in errors:
        where = "/".join(str(p) for p in error.path)
        result.append(f"{where}: {error.message}" if where else error.message)
    return result


def missing_required(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Top-level required properties absent from ``instance``."""
    if not isinstance(instance, dict):
        return list(schema.get("required", []))
    return [name for name in schema.get("required", []) if name not in instance or instance[name] in (None, "")]


def relaxed(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its top-level ``required`` (so a grammar never forces a made-up value)."""
    result = copy.deepcopy(schema) if isinstance(schema, dict) else {"type": "object"}
    result.pop("required", None)
    result.setdefault("type", "object")
    return result
