"""Built-in tools: date and time, the bot's files, user notes, memory, its documents, Discord actions, the web.

Each tool is a :class:`BuiltinTool`: its :class:`ToolSpec` (name, description, JSON
input schema, read-only flag) and an async function of ``(arguments, context)``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from grobot.core.documents.message import TOOL_NAME as DOCUMENTS_TOOL
from grobot.core.errors import GroBotError
from grobot.core.tools.base import ToolContext, ToolError, ToolResult, ToolSpec

logger = logging.getLogger(__name__)

MAX_NOTE_CHARS = 1000  # one note about a user (the notes tools announce it, the notes service enforces it)

MODEL_TEXT_LIMIT = 20_000  # characters of a file a tool hands to the model
Runner = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True)
class BuiltinTool:
    spec: ToolSpec
    run: Runner

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Validate the arguments against the schema, then run; domain errors become :class:`ToolError`."""
        import jsonschema  # only when a tool is called (not at the import of every bot process)

        try:
            jsonschema.validate(arguments, self.spec.input_schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            raise ToolError(f"invalid arguments for {self.spec.name}: {where + ': ' if where else ''}{exc.message}") from None
        try:
            return await self.run(arguments, context)
        except GroBotError as exc:
            raise ToolError(f"{self.spec.name}: {exc}") from None


def _schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _spec(name: str, description: str, schema: dict[str, Any], *, read_only: bool,
          from_user: tuple[str, ...] = (), done: str = "", takes_message: bool = False) -> ToolSpec:
    return ToolSpec(name=name, description=description, input_schema=schema, read_only=read_only, writes=not read_only,
                    source="builtin", from_user=from_user, done=done, takes_message=takes_message)


def _json_result(data: Any) -> ToolResult:
    return ToolResult(content=json.dumps(data, ensure_ascii=False, default=str), structured=data)


def _need_user(context: ToolContext) -> str:
    if not context.user_id:
        raise ToolError("this tool needs to know who is talking (no Discord user in this conversation)")
    return str(context.user_id)


# --------------------------------------------------------------------------- date and time


async def _datetime_now(args: dict[str, Any], context: ToolContext) -> ToolResult:
    name = (args.get("timezone") or "UTC").strip()
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(f"unknown time zone {name!r}; use an IANA name such as 'Europe/Paris' or 'UTC'") from None
    now = datetime.now(zone)
    data = {
        "timezone": name,
        "datetime": now.isoformat(timespec="seconds"),
        "date": now.date().isoformat(),
        "time": now.strftime("%H:%M:%S"),
        "day_of_week": now.strftime("%A"),
        "utc_offset": now.strftime("%z"),
    }
    return _json_result(data)


DATETIME = BuiltinTool(
    _spec(
        "datetime_now",
        "The current date and time in a time zone.",
        _schema({"timezone": {"type": "string", "description": "IANA time zone, e.g. 'Europe/Paris'; default UTC"}}),
        read_only=True,
    ),
    _datetime_now,
)


# --------------------------------------------------------------------------- files


def _files_tools(bot_id: int, store: Any) -> list[BuiltinTool]:
    async def list_(args: dict[str, Any], context: ToolContext) -> ToolResult:
        return _json_result(await store.list_files(bot_id))

    async def read(args: dict[str, Any], context: ToolContext) -> ToolResult:
        text, cut = await store.read_file(bot_id, args["path"], MODEL_TEXT_LIMIT)
        if cut:
            text += f"\n[... cut at {MODEL_TEXT_LIMIT} characters]"
        return ToolResult(content=text, meta={"truncated": cut})

    return [
        BuiltinTool(
            _spec("files_list", "List the bot's files: which files it has (path, size, type).", _schema({}), read_only=True), list_
        ),
        BuiltinTool(
            _spec(
                "files_read",
                "Read a file: show what is in one of the bot's text files (by its name, e.g. notes.txt).",
                _schema({"path": {"type": "string", "description": "path as listed by files_list"}}, ["path"]),
                read_only=True,
            ),
            read,
        ),
    ]


# --------------------------------------------------------------------------- user notes


def _notes_tools(bot_id: int, store: Any) -> list[BuiltinTool]:
    async def read(args: dict[str, Any], context: ToolContext) -> ToolResult:
        return _json_result(await store.list_notes(bot_id, _need_user(context)))

    async def add(args: dict[str, Any], context: ToolContext) -> ToolResult:
        return _json_result(await store.add_note(bot_id, _need_user(context), args["note"],
                                                    float(args.get("reliability", 0.5)), "tool"))

    async def update(args: dict[str, Any], context: ToolContext) -> ToolResult:
        reliability = args.get("reliability")
        return _json_result(await store.update_note(bot_id, _need_user(context), int(args["note_id"]),
                                                       args.get("note"),
                                                       float(reliability) if reliability is not None else None))

    reliability = {"type": "number", "minimum": 0, "maximum": 1, "description": "0 = a guess, 1 = certain"}
    return [
        BuiltinTool(
            _spec(
                "user_notes_read",
                "What do you know about me? Read the notes kept about the user you are talking with (most reliable first).",
                _schema({}),
                read_only=True,
            ),
            read,
        ),
        BuiltinTool(
            _spec(
                "user_notes_add",
                "Note a fact the user you are talking with tells about themselves (name, where they live, what they like), "
                "with how reliable it is.",
                _schema(
                    {"note": {"type": "string", "minLength": 1, "maxLength": MAX_NOTE_CHARS},
                     "reliability": reliability},
                    ["note", "reliability"],
                ),
                read_only=False,
                from_user=("note",),
                done="Noted",
            ),
            add,
        ),
        BuiltinTool(
            _spec(
                "user_notes_update",
                "Correct a note about the user you are talking with (its text and/or reliability).",
                _schema(
                    {"note_id": {"type": "integer"},
                     "note": {"type": "string", "minLength": 1, "maxLength": MAX_NOTE_CHARS},
                     "reliability": reliability},
                    ["note_id"],
                ),
                read_only=False,
                from_user=("note",),
                done="Note updated",
            ),
            update,
        ),
    ]


# --------------------------------------------------------------------------- memory


def _memory_tools(bot_id: int, memory: Any) -> list[BuiltinTool]:
    async def search(args: dict[str, Any], context: ToolContext) -> ToolResult:
        found = await memory.search(bot_id, args["query"], int(args.get("k", 5)))
        return _json_result(list(found))

    async def remember(args: dict[str, Any], context: ToolContext) -> ToolResult:
        metadata = {k: v for k, v in {"user_id": context.user_id, "user_name": context.user_name,
                                      "channel_id": context.channel_id, "guild_id": context.guild_id,
                                      "source_message_id": context.message_id, "source": "tool"}.items() if v}
        await memory.remember(bot_id, [args["text"]], metadata)
        return ToolResult(content="remembered")

    return [
        BuiltinTool(
            _spec(
                "memory_search",
                "Search the bot's long-term memory for things related to a query.",
                _schema({"query": {"type": "string", "minLength": 1},
                         "k": {"type": "integer", "minimum": 1, "maximum": 20}}, ["query"]),
                read_only=True,
            ),
            search,
        ),
        BuiltinTool(
            _spec(
                "memory_remember",
                "Store a fact in the bot's long-term memory.",
                _schema({"text": {"type": "string", "minLength": 1, "maxLength": 4000}}, ["text"]),
                read_only=False,
                from_user=("text",),
                done="Remembered",
            ),
            remember,
        ),
    ]


# --------------------------------------------------------------------------- documents


def _documents_tools(bot_id: int, memory: Any) -> list[BuiltinTool]:
    async def search(args: dict[str, Any], context: ToolContext) -> ToolResult:
        search = getattr(memory, "documents", None)
        found = await search(bot_id, args["query"], int(args.get("k", 3)), quote=False) if search else None
        if not found:
            return ToolResult(content="No passage of the bot's documents matches." if found is not None
                              else "The bot has no documents indexed.")
        text = "\n".join(f"[{' '.join(p.source().split())}] {' '.join(p.text.split())}" for p in found)
        return ToolResult(content=text, structured=[p.as_dict() for p in found])

    return [
        BuiltinTool(
            _spec(
                DOCUMENTS_TOOL,
                "Search the bot's documents (its uploaded manuals, FAQs, policies) for the passages about a topic; "
                "each comes with its source (file and section).",
                _schema({"query": {"type": "string", "minLength": 1, "description": "what to look for, in words"},
                         "k": {"type": "integer", "minimum": 1, "maximum": 8}}, ["query"]),
                read_only=True,
            ),
            search,
        ),
    ]


# --------------------------------------------------------------------------- the web


def _web_tools(access: Any) -> list[BuiltinTool]:
    """``web_search`` and ``web_read`` (see :mod:`grobot.core.tools.web`); ``access``: a ``WebAccess``."""

    async def search(args: dict[str, Any], context: ToolContext) -> ToolResult:
        from grobot.core.tools import web

        query = web.grounded_query(str(args.get("query") or ""), context.said)
        if not query:
            raise ToolError("web_search: no words to search for", told="there was nothing to search for")
        try:
            hits = await web.search(query, access)
        except web.WebUnavailable as exc:
            raise ToolError(f"web search failed ({access.engine}): {exc}", told=web.SEARCH_UNAVAILABLE) from None
        return ToolResult(content=web.results_text(query, hits),
                          structured={"results": [vars(h) for h in hits]}, meta={"engine": access.engine})

    async def read(args: dict[str, Any], context: ToolContext) -> ToolResult:
        from grobot.core.tools import web

        try:
            page = await web.read_page(str(args["url"]), access)
        except web.WebUnavailable as exc:
            raise ToolError(f"web_read: {exc}", told=web.PAGE_UNAVAILABLE) from None
        return ToolResult(content=web.page_text(page), meta={"truncated": page.cut})

    return [
        BuiltinTool(
            _spec(
                "web_search",
                "Search the web (internet) for the latest news and facts: the top results, each with "
                "its title, address and a short extract.",
                _schema({"query": {"type": "string", "minLength": 1, "maxLength": 200,
                                   "description": "what to look for, in a few words; default: the user's message"}}),
                read_only=True,
                takes_message=True,
            ),
            search,
        ),
        BuiltinTool(
            _spec(
                "web_read",
                "Open a web page (a link, URL or address such as https://...) and read what it says.",
                _schema({"url": {"type": "string", "pattern": "^https?://", "maxLength": 2000,
                                 "description": "the page's address, starting with http:// or https://"}}, ["url"]),
                read_only=True,
            ),
            read,
        ),
    ]


# --------------------------------------------------------------------------- Discord


def _discord_tools(discord: Any) -> list[BuiltinTool]:
    def where(args: dict[str, Any], context: ToolContext) -> tuple[str, str]:
        channel = context.channel_id
        message = str(args.get("message_id") or context.message_id or "")
        if not channel or not message:
            raise ToolError("no Discord message to act on in this conversation")
        return str(channel), message

    def actions(context: ToolContext) -> Any:
        return context.discord or discord

    async def react(args: dict[str, Any], context: ToolContext) -> ToolResult:
        channel, message = where(args, context)
        await actions(context).react(channel, message, args["emoji"])
        return ToolResult(content=f"reacted with {args['emoji']}")

    async def reply_in_thread(args: dict[str, Any], context: ToolContext) -> ToolResult:
        channel, message = where(args, context)
        thread_id = await actions(context).reply_in_thread(
            channel, message, args["text"], thread_name=args.get("thread_name")
        )
        return _json_result({"thread_id": thread_id})

    async def recent(args: dict[str, Any], context: ToolContext) -> ToolResult:
        if not context.channel_id:
            raise ToolError("no Discord channel in this conversation")
        messages = await actions(context).recent_messages(str(context.channel_id), limit=int(args.get("limit", 20)))
        return _json_result(messages)

    message_id = {"type": "string", "pattern": "^[0-9]+$", "description": "default: the message being answered"}
    return [
        BuiltinTool(
            _spec(
                "discord_react",
                "React to a Discord message with an emoji.",
                _schema({"emoji": {"type": "string", "minLength": 1, "maxLength": 64}, "message_id": message_id},
                        ["emoji"]),
                read_only=False,
            ),
            react,
        ),
        BuiltinTool(
            _spec(
                "discord_reply_in_thread",
                "Answer in a thread on a Discord message (the thread is created when missing).",
                _schema({"text": {"type": "string", "minLength": 1, "maxLength": 2000},
                         "thread_name": {"type": "string", "maxLength": 100}, "message_id": message_id}, ["text"]),
                read_only=False,
            ),
            reply_in_thread,
        ),
        BuiltinTool(
            _spec(
                "discord_recent_messages",
                "Read the most recent messages of the current Discord channel (oldest first).",
                _schema({"limit": {"type": "integer", "minimum": 1, "maximum": 100}}),
                read_only=True,
            ),
            recent,
        ),
    ]


def builtin_tools(bot_id: int, *, store: Any, discord: Any = None, memory: Any = None,
                  web: Any = None) -> list[BuiltinTool]:
    """The built-in tools of a bot: its files and notes through ``store`` (its
    :class:`~grobot.core.agents.run_store.RunStore`), Discord actions only with ``discord``, memory only
    with ``memory``, web search and reading only with ``web`` (a :class:`~grobot.core.tools.web.WebAccess`:
    the bot has them on)."""
    tools = [DATETIME, *_files_tools(bot_id, store), *_notes_tools(bot_id, store)]
    if memory is not None:
        tools += _memory_tools(bot_id, memory) + _documents_tools(bot_id, memory)
    if web is not None:
        tools += _web_tools(web)
    if discord is not None:
        tools += _discord_tools(discord)
    return tools


def builtin_names() -> list[str]:
    """The name of every built-in tool a bot may have (the Discord and memory ones included)."""
    placeholder = object()  # the tools are only built, never called
    return [t.spec.name for t in builtin_tools(0, store=placeholder, discord=placeholder, memory=placeholder,
                                               web=placeholder)]
