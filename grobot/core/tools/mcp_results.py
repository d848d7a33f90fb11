"""MCP tool descriptions and results, seen through GroBot's tool interface."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from typing import Any

from mcp import types as mcp_types

from grobot.core.errors import ValidationError
from grobot.core.tools.base import ToolImage, ToolResult, ToolSpec
from grobot.core.tools.images import MAX_IMAGES_PER_RUN, decoded_image, describe

logger = logging.getLogger(__name__)

MAX_NAME = 64
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def namespaced(server: str, tool: str) -> str:
    """``<server>__<tool>`` limited to ``[a-zA-Z0-9_-]`` and 64 characters (a hash keeps long names unique)."""
    name = _UNSAFE.sub("_", f"{server}__{tool}")
    if len(name) > MAX_NAME:
        digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


def annotated_access(annotations: mcp_types.ToolAnnotations | None) -> tuple[bool, bool]:
    """``(read_only, writes)`` as a tool's annotations tell them; an unannotated tool is neither.

    Known to write: ``readOnlyHint`` set to false, or ``destructiveHint`` set to true (without
    ``readOnlyHint`` true). The spec's defaults for unset hints are not assumed: a tool that says
    nothing runs in parallel with the others, as calls do unless known to write.
    """
    if annotations is None:
        return False, False
    if annotations.read_only_hint is True:
        return True, False
    return False, annotations.read_only_hint is False or annotations.destructive_hint is True


def tool_spec(server: str, tool: mcp_types.Tool, *, timeout: float | None = None) -> ToolSpec:
    """The :class:`ToolSpec` of an MCP tool of ``server``."""
    annotations = tool.annotations
    read_only, writes = annotated_access(annotations)
    schema = dict(tool.input_schema or EMPTY_SCHEMA)
    schema.setdefault("type", "object")
    description = tool.description or (annotations.title if annotations and annotations.title else "") or tool.name
    return ToolSpec(
        name=namespaced(server, tool.name),
        description=description.strip(),
        input_schema=schema,
        read_only=read_only,
        writes=writes,
        idempotent=bool(annotations and annotations.idempotent_hint),
        source=server,
        timeout_seconds=timeout,
    )


def tool_as_dict(tool: mcp_types.Tool) -> dict[str, Any]:
    """A tool as stored in ``mcp_server.tools_cache`` (``read_only`` / ``writes``: as annotated)."""
    read_only, writes = annotated_access(tool.annotations)
    return {
        "name": tool.name,
        "description": tool.description or "",
        "input_schema": tool.input_schema or EMPTY_SCHEMA,
        "read_only": read_only,
        "writes": writes,
    }


def _image(encoded: str, name: str, images: list[ToolImage]) -> str:
    """Keep an image a tool sent (shown to the user); what the model reads in its place."""
    if len(images) >= MAX_IMAGES_PER_RUN:
        return "[an image left out: a result shows at most 4]"
    try:
        image = decoded_image(encoded, name=name)
    except ValidationError as exc:
        logger.info("An MCP tool sent an image that is not used: %s", exc)
        return f"[an image that cannot be shown: {exc}]"
    images.append(image)
    return describe(image)


def _content_text(item: Any, images: list[ToolImage]) -> str:
    if isinstance(item, mcp_types.TextContent):
        return item.text
    if isinstance(item, mcp_types.ImageContent):
        return _image(item.data, "", images)
    if isinstance(item, mcp_types.AudioContent):
        return f"[audio {item.mime_type}]"
    if isinstance(item, mcp_types.ResourceLink):
        return f"[resource {item.uri}]"
    if isinstance(item, mcp_types.EmbeddedResource):
        resource = item.resource
        text = getattr(resource, "text", None)
        blob = getattr(resource, "blob", None)
        if text is None and blob is not None and str(resource.mime_type or "").startswith("image/"):
            return _image(blob, str(resource.uri).rsplit("/", 1)[-1], images)
        return text if text is not None else f"[resource {resource.uri}]"
    return str(item)


def tool_result(result: mcp_types.CallToolResult) -> ToolResult:
    """The model-readable outcome of an MCP tool call; its images (``ImageContent``, or an embedded
    image resource) are kept for the user, the model reads a line in their place."""
    images: list[ToolImage] = []
    parts = [_content_text(item, images) for item in (result.content or [])]
    text = "\n".join(p for p in parts if p)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return ToolResult(content=text, is_error=bool(result.is_error), structured=result.structured_content,
                      images=images)
