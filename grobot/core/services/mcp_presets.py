"""Adding a well-known MCP server from its preset (:mod:`grobot.core.tools.mcp_presets`) in one step."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlmodel import Session

from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import McpServer
from grobot.core.services import mcp_servers
from grobot.core.tools.mcp_presets import PRESETS, TIERS, McpPreset, get_preset, launch

logger = logging.getLogger(__name__)


def find_preset(name: str) -> McpPreset:
    """The preset ``name``, or :class:`NotFoundError` naming the known ones."""
    try:
        return get_preset(name)
    except KeyError as exc:
        raise NotFoundError(str(exc.args[0])) from None


def _secret_values(preset: McpPreset, secrets: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(env, headers)`` from the admin's secrets (each required one given, no unknown one)."""
    known = {field.key for field in preset.secrets}
    unknown = sorted(set(secrets) - known)
    if unknown:
        expected = ", ".join(sorted(known)) if known else "none"
        raise ValidationError(f"secrets: the {preset.name} preset has no secret {', '.join(unknown)} (it takes: {expected})")
    env: dict[str, str] = {}
    headers: dict[str, str] = {}
    missing = []
    for field in preset.secrets:
        value = str(secrets.get(field.key) or "").strip()
        if not value:
            missing.append(f"{field.key} ({field.label})")
            continue
        (headers if field.header else env)[field.key] = field.template.format(value=value)
    if missing:
        raise ValidationError(f"secrets: the {preset.name} preset needs {', '.join(missing)}")
    return env, headers


def _free_name(base: str, *, session: Session) -> str:
    """``base``, or ``base-2``, ``base-3``... when it is taken (a preset added twice)."""
    taken = {server.name for server in mcp_servers.list_servers(session=session)}
    if base not in taken:
        return base
    return next(f"{base}-{n}" for n in range(2, len(taken) + 3) if f"{base}-{n}" not in taken)


def add_from_preset(
    *, session: Session, preset: str, name: str | None = None, secrets: Mapping[str, str] | None = None,
    enabled: bool = True,
) -> McpServer:
    """Register the MCP server of ``preset`` (named ``name``; by default the preset's own name, made unique),
    with its secrets stored encrypted like any other server's environment or headers."""
    chosen = find_preset(preset)
    env, headers = _secret_values(chosen, secrets or {})
    fields: dict[str, Any] = {"name": (name or "").strip() or _free_name(chosen.name, session=session),
                              "enabled": enabled}
    if chosen.transport == "stdio":
        started = launch(chosen)
        fields.update(transport="stdio", command=started.command, args=list(started.args),
                      env={**chosen.env, **env} or None)
    else:
        fields.update(transport=chosen.transport, url=chosen.url, headers=headers or None)
    server = mcp_servers.create_server(session=session, **fields)
    logger.info("MCP server %s added from the %s preset", server.name, chosen.name)
    return server


def catalogue() -> list[dict[str, Any]]:
    """Every preset as shown to an admin: tier, what it does, how it starts here (``missing``: how to install
    a package that is not installed and that nothing here can download), its secrets."""
    rows = []
    for preset in PRESETS:
        where, installed, missing = preset.url, True, ""
        if preset.transport == "stdio":
            started = launch(preset)
            where, installed, missing = " ".join([started.command, *started.args]), started.installed, started.missing
        rows.append({
            "name": preset.name, "title": preset.title, "description": preset.description, "tier": preset.tier,
            "tier_label": TIERS[preset.tier], "transport": preset.transport, "package": preset.package,
            "where": where, "installed": installed, "missing": missing, "per_bot": preset.per_bot,
            "secrets": [{"key": f.key, "label": f.label, "help": f.help, "header": f.header} for f in preset.secrets],
        })
    return rows
