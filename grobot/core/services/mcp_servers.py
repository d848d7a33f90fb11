"""The registry of MCP servers, and which bots use which server with which tools."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from grobot.core import security
from grobot.core.errors import ConflictError, NotFoundError, ValidationError
from grobot.core.models import Bot, BotMcpServer, McpServer, McpTransport, utcnow
from grobot.core.services.validation import validate
from grobot.core.tools.mcp_config import SERVER_NAME_RE, McpServerConfig

logger = logging.getLogger(__name__)

MIN_TIMEOUT, MAX_TIMEOUT = 1.0, 600.0


def _split_list(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _invalid(message: str) -> PydanticCustomError:
    """A validation error whose text is shown as is (no "Value error," prefix)."""
    return PydanticCustomError("invalid", message.replace("{", "{{").replace("}", "}}"))


class ServerFields(BaseModel):
    """The editable fields of an MCP server (all optional: an update names only what changes)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str | None = None
    transport: McpTransport | None = None
    command: str | None = Field(default=None, max_length=500)
    args: list[str] | None = Field(default=None, max_length=100)
    env: dict[str, str] | None = None
    cwd: str | None = Field(default=None, max_length=500)
    url: str | None = Field(default=None, max_length=1000)
    headers: dict[str, str] | None = None
    enabled: bool | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and (not SERVER_NAME_RE.match(value) or "__" in value):
            raise _invalid(
                "must be 1-32 characters: letters, digits, '_' and '-', starting with a letter or digit, "
                "without '__' (it separates the server from the tool in tool names)"
            )
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value:
            parsed = urlparse(value)
            if parsed.scheme not in ("http", "https") or not parsed.netloc:
                raise _invalid("must be an http:// or https:// URL")
        return value or None

    @field_validator("env", "headers")
    @classmethod
    def _mapping(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for key in value or {}:
            if not key or any(c.isspace() for c in key) or "=" in key:
                raise _invalid(f"{key!r} is not a valid name")
        return value


@dataclass(frozen=True)
class BotServerLink:
    """An MCP server enabled for a bot, with the association's own settings."""

    config: McpServerConfig
    allowed_tools: list[str] | None
    timeout_seconds: float


def _check_complete(server: McpServer) -> None:
    if server.transport == McpTransport.STDIO.value:
        if not server.command:
            raise ValidationError("command: required for a stdio server")
    elif not server.url:
        raise ValidationError(f"url: required for a {server.transport} server")


def get_server(ref: int | str, *, session: Session) -> McpServer:
    """The MCP server with id or name ``ref``."""
    server: McpServer | None = None
    if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
        server = session.get(McpServer, int(ref))
    if server is None and isinstance(ref, str):
        server = session.exec(select(McpServer).where(McpServer.name == ref)).first()
    if server is None:
        raise NotFoundError(f"no MCP server named or numbered {ref!r}")
    return server


def _apply(server: McpServer, data: ServerFields) -> None:
    values = data.model_dump(exclude_unset=True)
    for key, value in values.items():
        if key == "env":
            server.env_enc = security.encrypt_json(value) if value else None
        elif key == "headers":
            server.headers_enc = security.encrypt_json(value) if value else None
        elif key == "transport":
            server.transport = value.value if isinstance(value, McpTransport) else value
        else:
            setattr(server, key, value)


def _check_name_free(name: str, *, session: Session, exclude_id: int | None = None) -> None:
    existing = session.exec(select(McpServer.id).where(McpServer.name == name)).first()
    if existing is not None and existing != exclude_id:
        raise ConflictError(f"an MCP server named {name!r} already exists")


def create_server(*, session: Session, name: str, transport: str = "stdio", **fields: Any) -> McpServer:
    """Register an MCP server (validated; env and headers are encrypted)."""
    data = validate(ServerFields, {"name": name, "transport": transport, **fields})
    if not data.name:
        raise ValidationError("name: required")
    _check_name_free(data.name, session=session)
    server = McpServer(name=data.name)
    _apply(server, data)
    _check_complete(server)
    session.add(server)
    try:
        session.flush()
    except IntegrityError:
        raise ConflictError(f"an MCP server named {data.name!r} already exists") from None
    logger.info("MCP server %s (%s, %s) registered", server.id, server.name, server.transport)
    return server


def update_server(server: McpServer, changes: dict[str, Any], *, session: Session) -> McpServer:
    """Apply validated ``changes``; hubs reconnect when the connection settings changed."""
    data = validate(ServerFields, changes)
    if data.name is not None:
        _check_name_free(data.name, session=session, exclude_id=server.id)
    _apply(server, data)
    _check_complete(server)
    server.updated_at = utcnow()
    session.add(server)
    session.flush()
    return server


def delete_server(server: McpServer, *, session: Session) -> None:
    """Unregister a server (its bot associations go with it)."""
    session.delete(server)
    session.flush()
    logger.info("MCP server %s (%s) deleted", server.id, server.name)


def list_servers(*, session: Session) -> list[McpServer]:
    return list(session.exec(select(McpServer).order_by(McpServer.name)).all())


def bots_using(*, session: Session) -> dict[int, list[str]]:
    """Server id -> the names of the bots it is enabled for, in one query."""
    stmt = (
        select(BotMcpServer.mcp_server_id, Bot.name)
        .join(Bot, col(Bot.id) == col(BotMcpServer.bot_id))
        .where(BotMcpServer.enabled == True)  # noqa: E712
        .order_by(Bot.name)
    )
    result: dict[int, list[str]] = {}
    for server_id, bot_name in session.exec(stmt).all():
        result.setdefault(server_id, []).append(bot_name)
    return result


def parse_pairs(items: list[str], what: str) -> dict[str, str]:
    """``["A=1", "B=x"]`` -> ``{"A": "1", "B": "x"}`` (environment variables, HTTP headers)."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValidationError(f"{what}: expected KEY=VALUE, got a line without '='")
        pairs[key.strip()] = value
    return pairs


def placeholder_values(bot_id: int | None) -> dict[str, str]:
    """What a server's placeholders stand for, for bot ``bot_id`` (None: a test or a tool-list refresh,
    which get an empty folder of their own). The folders are created when missing."""
    from grobot.core.services.files import bot_root
    from grobot.core.settings import get_settings

    state = get_settings().mcp_state_dir(bot_id)
    files = bot_root(bot_id) if bot_id is not None else state / "files"
    for folder in (state, files):
        folder.mkdir(parents=True, exist_ok=True)
    return {"{bot_files}": str(files.resolve()), "{bot_state}": str(state.resolve())}


def server_config(server: McpServer, *, bot_id: int | None = None) -> McpServerConfig:
    """The decrypted connection settings of ``server`` (raises SecretKeyError on a wrong key), with its
    placeholders (``{bot_files}``, ``{bot_state}``) filled in for ``bot_id``."""
    config = McpServerConfig(
        name=server.name,
        transport=server.transport,
        command=server.command,
        args=tuple(server.args or ()),
        env=dict(security.decrypt_json(server.env_enc)) if server.env_enc else {},
        cwd=server.cwd,
        url=server.url,
        headers=dict(security.decrypt_json(server.headers_enc)) if server.headers_enc else {},
        server_id=server.id,
    )
    if not config.has_placeholders():
        return config
    return config.scoped(placeholder_values(bot_id), f"bot-{bot_id}" if bot_id is not None else "shared")


def server_summary(server: McpServer) -> dict[str, Any]:
    """Everything about a server that may be shown: secret values are never included."""
    env = security.decrypt_json(server.env_enc) if server.env_enc else {}
    headers = security.decrypt_json(server.headers_enc) if server.headers_enc else {}
    return {
        "id": server.id,
        "name": server.name,
        "transport": server.transport,
        "command": server.command,
        "args": list(server.args or []),
        "cwd": server.cwd,
        "url": server.url,
        "env": sorted(env),  # names only
        "headers": sorted(headers),  # names only
        "enabled": server.enabled,
        "tools": [t.get("name") for t in (server.tools_cache or [])],
        "tools_refreshed_at": server.tools_refreshed_at,
        "last_error": server.last_error,
    }


def record_tools(
    *, session: Session, server_id: int, tools: list[dict[str, Any]] | None, error: str = ""
) -> None:
    """Store the latest tool list (or keep the old one and store the error)."""
    server = session.get(McpServer, server_id)
    if server is None:
        return
    if tools is not None:
        server.tools_cache = tools
        server.tools_refreshed_at = utcnow()
    server.last_error = error
    session.add(server)
    session.flush()


# --------------------------------------------------------------------------- bot associations


def _clean_tools(allowed_tools: Any) -> list[str] | None:
    allowed_tools = _split_list(allowed_tools)
    if allowed_tools is None:
        return None
    names = [str(t).strip() for t in allowed_tools if str(t).strip()]
    if not names:
        return None
    return sorted(set(names))


def enable_for_bot(
    *,
    session: Session,
    bot_id: int,
    server: McpServer,
    allowed_tools: Any = None,
    timeout_seconds: float | None = None,
    fallbacks: Mapping[str, str | None] | None = None,
    access: Mapping[str, str | None] | None = None,
) -> BotMcpServer:
    """Let a bot use ``server`` (all tools, or only ``allowed_tools``), with its own call timeout.

    ``fallbacks``: tool -> the tool to try when it fails ("" or None: none); ``access``: tool ->
    ``read_only``, ``writes`` or ``auto`` (as its annotations say). Tools not named keep their settings.
    """
    link = session.get(BotMcpServer, (bot_id, server.id))
    if link is None:
        link = BotMcpServer(bot_id=bot_id, mcp_server_id=server.id)
    link.enabled = True
    tools = _clean_tools(allowed_tools)
    if allowed_tools is not None:
        known = {t.get("name") for t in (server.tools_cache or [])}
        unknown = [t for t in tools or [] if known and t not in known]
        if unknown:
            raise ValidationError(
                f"MCP server {server.name!r} has no tool named {', '.join(unknown)} "
                f"(known: {', '.join(sorted(n for n in known if n))})"
            )
        link.allowed_tools = tools
    if timeout_seconds is not None:
        if not MIN_TIMEOUT <= float(timeout_seconds) <= MAX_TIMEOUT:
            raise ValidationError(f"timeout must be between {MIN_TIMEOUT:g} and {MAX_TIMEOUT:g} seconds")
        link.timeout_seconds = float(timeout_seconds)
    if fallbacks or access:
        link.tool_settings = _tool_settings(session, link, server, fallbacks or {}, access or {})
    session.add(link)
    session.flush()
    logger.info("Bot %s: MCP server %s enabled", bot_id, server.name)
    return link


def disable_for_bot(*, session: Session, bot_id: int, server: McpServer) -> None:
    """Stop a bot using ``server`` (the association keeps its settings)."""
    link = session.get(BotMcpServer, (bot_id, server.id))
    if link is None or not link.enabled:
        raise NotFoundError(f"MCP server {server.name!r} is not enabled for this bot")
    link.enabled = False
    session.add(link)
    session.flush()
    logger.info("Bot %s: MCP server %s disabled", bot_id, server.name)


def bot_links(*, session: Session, bot_id: int, enabled_only: bool = True) -> list[tuple[BotMcpServer, McpServer]]:
    """The bot's associations with their servers (by default only usable ones)."""
    stmt = (
        select(BotMcpServer, McpServer)
        .join(McpServer, col(McpServer.id) == col(BotMcpServer.mcp_server_id))
        .where(BotMcpServer.bot_id == bot_id)
        .order_by(McpServer.name)
    )
    if enabled_only:
        stmt = stmt.where(BotMcpServer.enabled == True, McpServer.enabled == True)  # noqa: E712
    return [(link, server) for link, server in session.exec(stmt).all()]


def bot_servers(*, session: Session, bot_id: int) -> list[BotServerLink]:
    """What the hub needs to build a bot's catalog: enabled servers, decrypted, with their settings."""
    return [
        BotServerLink(
            config=server_config(server, bot_id=bot_id),
            allowed_tools=list(link.allowed_tools) if link.allowed_tools else None,
            timeout_seconds=float(link.timeout_seconds),
        )
        for link, server in bot_links(session=session, bot_id=bot_id)
    ]


def unchecked_configs(*, session: Session) -> list[McpServerConfig]:
    """Enabled servers never listed nor failed yet (e.g. added from a shell with ``--no-test``)."""
    rows = session.exec(
        select(McpServer).where(
            McpServer.enabled == True,  # noqa: E712
            col(McpServer.tools_refreshed_at).is_(None),
            (col(McpServer.last_error).is_(None)) | (McpServer.last_error == ""),
        )
    ).all()
    return [server_config(server) for server in rows]


def enabled_configs(*, session: Session) -> list[McpServerConfig]:
    """Every enabled server (for the scheduled tool-list refresh)."""
    rows = session.exec(select(McpServer).where(McpServer.enabled == True)).all()  # noqa: E712
    return [server_config(server) for server in rows]


# --------------------------------------------------------------------------- per-tool settings

ACCESS_CHOICES = ("auto", "read_only", "writes")


def _known_tools(server: McpServer) -> set[str]:
    """The server's tools as last listed (empty: never listed, nothing can be checked)."""
    return {str(t.get("name")) for t in (server.tools_cache or []) if t.get("name")}


def _check_tool(server: McpServer, tool: str) -> None:
    known = _known_tools(server)
    if known and tool not in known:
        raise ValidationError(f"MCP server {server.name!r} has no tool named {tool!r} (known: {', '.join(sorted(known))})")


def _access(tool: str, value: str | None) -> str:
    choice = (value or "auto").strip().lower().replace("-", "_")
    if choice not in ACCESS_CHOICES:
        raise ValidationError(f"the access of {tool!r} must be auto, read_only or writes, not {value!r}")
    return choice


def _fallback(session: Session, link: BotMcpServer, server: McpServer, tool: str, value: str | None) -> str:
    """The fallback of ``tool`` as stored: a tool of this server (its own name), ``<server>__<tool>``
    of another server the bot uses, or a built-in tool; "" for none."""
    from grobot.core.tools.builtins import builtin_names

    name = (value or "").strip()
    if not name:
        return ""
    builtins = builtin_names()
    prefix = f"{server.name}__"
    if name.startswith(prefix):
        name = name[len(prefix):]
    if name == tool:
        raise ValidationError(f"a tool cannot be its own fallback ({tool!r})")
    own = _known_tools(server)
    if name in own or (not own and "__" not in name and name not in builtins):
        allowed = link.allowed_tools
        if allowed and name not in allowed:
            raise ValidationError(f"the fallback {name!r} of {tool!r} is not among this bot's allowed tools of "
                                  f"{server.name!r} ({', '.join(allowed)})")
        return name
    if "__" in name:
        other_name, _, other_tool = name.partition("__")
        other = session.exec(select(McpServer).where(McpServer.name == other_name)).first()
        if other is None:
            raise ValidationError(f"the fallback {name!r} of {tool!r} names no registered MCP server ({other_name!r})")
        _check_tool(other, other_tool)
        other_link = session.get(BotMcpServer, (link.bot_id, other.id))
        if other_link is None or not other_link.enabled:
            raise ValidationError(f"the fallback {name!r} of {tool!r} is on MCP server {other_name!r}, which this "
                                  f"bot does not use: enable it first")
        if other_link.allowed_tools and other_tool not in other_link.allowed_tools:
            raise ValidationError(f"the fallback {name!r} of {tool!r} is not among this bot's allowed tools of "
                                  f"{other_name!r}")
        return name
    if name in builtins:
        return name
    raise ValidationError(
        f"there is no tool named {name!r} for a fallback of {tool!r} (a tool of {server.name!r}, "
        f"SERVER__TOOL of another MCP server of the bot, or a built-in tool)"
    )


def _tool_settings(session: Session, link: BotMcpServer, server: McpServer, fallbacks: Mapping[str, str | None],
                   access: Mapping[str, str | None]) -> dict[str, dict[str, str]] | None:
    """The link's per-tool settings with ``fallbacks`` and ``access`` applied (validated)."""
    settings = {tool: dict(values) for tool, values in (link.tool_settings or {}).items()}
    for tool, value in fallbacks.items():
        entry = settings.setdefault(tool, {})
        if not (value or "").strip():
            entry.pop("fallback", None)  # clearing needs no check (the tool may be gone from the server)
            continue
        _check_tool(server, tool)
        entry["fallback"] = _fallback(session, link, server, tool, value)
    for tool, value in access.items():
        entry = settings.setdefault(tool, {})
        choice = _access(tool, value)
        if choice == "auto":
            entry.pop("access", None)
            continue
        _check_tool(server, tool)
        entry["access"] = choice
    cleaned = {tool: values for tool, values in sorted(settings.items()) if values}
    return cleaned or None


def parse_tool_options(fallback_items: list[str] | None, writes: list[str] | None, read_only: list[str] | None,
                       auto: list[str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """``--fallback TOOL=FALLBACK`` (``TOOL=`` clears), ``--writes A,B``, ``--read-only A``, ``--auto A``
    -> ``(fallbacks, access)`` for :func:`enable_for_bot`."""
    fallbacks: dict[str, str] = {}
    for item in fallback_items or []:
        tool, sep, fallback = item.partition("=")
        if not sep or not tool.strip():
            raise ValidationError(f"--fallback: expected TOOL=FALLBACK (TOOL= to remove it), got {item!r}")
        fallbacks[tool.strip()] = fallback.strip()
    access: dict[str, str] = {}
    for choice, items in (("writes", writes), ("read_only", read_only), ("auto", auto)):
        for tool in _split_list(",".join(items or [])) or []:
            if tool in access and access[tool] != choice:
                raise ValidationError(f"{tool!r} is given as both {access[tool]} and {choice}")
            access[tool] = choice
    return fallbacks, access


def describe_tool_settings(settings: dict[str, dict[str, str]] | None) -> str:
    """One line, e.g. ``forecast: fallback backup; wipe: writes`` ("" when there are none)."""
    parts = []
    for tool, values in sorted((settings or {}).items()):
        bits = [f"fallback {values['fallback']}"] if values.get("fallback") else []
        if values.get("access"):
            bits.append(values["access"].replace("_", "-"))
        if bits:
            parts.append(f"{tool}: {', '.join(bits)}")
    return "; ".join(parts)
