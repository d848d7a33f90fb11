"""The one interface every tool is seen through, built-in or MCP.

The agent chain depends only on this module: it asks a :class:`ToolCatalog` for the
tools of a bot and calls them by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ToolSpec:
    """What the model is shown of a tool."""

    name: str  # unique in the catalog, namespaced for MCP tools ("time__get_current_time")
    description: str
    input_schema: dict[str, Any]
    read_only: bool = False  # known not to change anything (readOnlyHint, the built-in's flag, the admin)
    # Known to change something (the MCP annotations, the built-in's flag, the admin): such a call
    # runs alone, in order, and a timed-out one is not sent again unless it is idempotent.
    # Calls of every other tool run in parallel.
    writes: bool = False
    idempotent: bool = False  # MCP annotation idempotentHint: calling it twice does no more harm
    source: str = "builtin"  # "builtin" or the MCP server's name
    timeout_seconds: float | None = None  # per-tool override of the call timeout
    fallback: str | None = None  # name (in the catalog) of a tool to try when this one fails
    # Arguments that record what the user said (a fact to note or remember): their words must come
    # from the conversation; a value a model wrote on its own is not used (the user is asked).
    from_user: tuple[str, ...] = ()
    done: str = ""  # what a call that worked did, in a word ("Noted"): the reply's confirmation (default: its result)
    # The tool reads what the user asks from their message when it is called without arguments (a web
    # search's query): the chain calls it so, with no Parameter Extractor call; a model that calls tools
    # itself (native mode) may still give them.
    takes_message: bool = False

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }


@dataclass(frozen=True)
class ToolImage:
    """An image a tool returned (checked: a PNG, JPEG, GIF or WebP within the size limit,
    :func:`grobot.core.tools.images.checked_image`): shown to the user, never read by the model."""

    mime_type: str
    data: bytes
    name: str = ""


@dataclass
class ToolResult:
    """The outcome of one call, as the model will read it (``images``: shown to the user beside the answer)."""

    content: str
    is_error: bool = False
    structured: Any = None
    transient: bool = False  # a fault worth retrying (timeout, connection lost)
    meta: dict[str, Any] = field(default_factory=dict)
    images: list[ToolImage] = field(default_factory=list)


# What the answering model hears of an MCP server's failure: the error itself (an address, the
# server's last stderr lines, which may print a key) is for the admins, and the model may repeat
# what it hears to a user.
SERVER_FAILED = "its MCP server could not be used right now"


class ToolError(Exception):
    """A tool could not run; ``transient`` faults may be retried.

    ``may_have_run``: the call was sent but its answer never came (a timeout, the connection lost
    mid-call), so it may have run: a tool known to write is then not sent again unless it is
    idempotent. ``told``: what the model answering a user may hear of it (None: the message).
    """

    def __init__(self, message: str, *, transient: bool = False, may_have_run: bool = False,
                 told: str | None = None) -> None:
        super().__init__(message)
        self.transient = transient or may_have_run
        self.may_have_run = may_have_run
        self.told = told


@dataclass
class ToolContext:
    """Who is calling: passed to built-in tools (files, notes, Discord actions)."""

    bot_id: int
    user_id: str | None = None
    user_name: str | None = None
    channel_id: str | None = None
    guild_id: str | None = None
    message_id: str | None = None
    platform: str = "discord"  # "discord" or "test_chat"
    discord: Any = None  # a DiscordActions object inside a bot process, else None
    said: str = ""  # the message being answered (a search asks for the user's words)


@runtime_checkable
class ToolCatalog(Protocol):
    """The tools one bot may use for one message."""

    async def list_tools(self) -> list[ToolSpec]:
        """Every tool available now (unavailable servers are left out and reported)."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any], *, context: ToolContext, timeout: float) -> ToolResult:
        """Call a tool; raise :class:`ToolError` (or return ``is_error``) when it fails."""
        ...

    def unavailable(self) -> dict[str, str]:
        """Tools or servers that could not be reached: name -> one-line reason."""
        ...


class EmptyCatalog:
    """A catalog with no tools (bots without tools, and tests)."""

    async def list_tools(self) -> list[ToolSpec]:
        return []

    async def call_tool(self, name: str, arguments: dict[str, Any], *, context: ToolContext, timeout: float) -> ToolResult:
        raise ToolError(f"unknown tool {name!r}")

    def unavailable(self) -> dict[str, str]:
        return {}


@runtime_checkable
class DiscordActions(Protocol):
    """What the Discord built-in tools may do; implemented inside a bot process only."""

    async def react(self, channel_id: str, message_id: str, emoji: str) -> None: ...

    async def reply_in_thread(self, channel_id: str, message_id: str, text: str, *, thread_name: str | None = None) -> str:
        """Answer in a thread on ``message_id`` (created when missing); returns the thread id."""
        ...

    async def recent_messages(self, channel_id: str, *, limit: int = 20) -> list[dict[str, Any]]:
        """The newest messages of a channel, oldest first: ``{id, author, content, created_at}``."""
        ...
