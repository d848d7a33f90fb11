"""The bot link's operations, declared once: what a bot process may ask of its supervisor.

Each :class:`Op` names the operation on the wire (``POST /v1/bots/{id}/store/{name}``), the
:class:`bot_worker.remote_store.BotStore` method the bot calls, the
:class:`bot_worker.local_store.LocalBotStore` method that serves it, and how each argument
and the result cross as JSON (:class:`Codec`). Both ends read the table:

- the bot's :class:`bot_worker.remote_store.RemoteBotStore` has one method per entry, made
  from it (and a generic :meth:`~bot_worker.remote_store.RemoteBotStore.call`);
- the supervisor's :func:`dispatch` decodes a request, calls the store, encodes the result.

Adding an operation is one entry in :data:`OPS` (and the ``LocalBotStore`` method).

Every operation acts on the bot of the request's path: the server passes that bot's id
to the store, and the codecs of values that carry a bot id (a message, log records)
overwrite it with that one. Domain errors reach the bot with their kind (:func:`dispatch`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bot_worker.bot_link import InParts, StoreError
from bot_worker.link_data import BotSettings, MessageData, incoming_dict
from grobot.core.agents.run_store import (
    Loaded,
    RunWrite,
    StoreUnavailable,
    message_from_key,
    message_key,
    records_from,
)
from grobot.core.agents.types import Attachment, IncomingMessage
from grobot.core.errors import GroBotError, NotFoundError, ValidationError

if TYPE_CHECKING:
    from grobot.core.tools.catalog import Link

logger = logging.getLogger(__name__)

REQUIRED: Any = inspect.Parameter.empty


def _same(value: Any, bot_id: int = 0) -> Any:
    return value


@dataclass(frozen=True)
class Codec:
    """How one value crosses the link: ``dump`` on the sending side (to JSON-ready data),
    ``load`` on the receiving side, given the bot of the request's path."""

    dump: Callable[[Any], Any] = _same
    load: Callable[[Any, int], Any] = _same


def _plain(convert: Callable[[Any], Any]) -> Codec:
    return Codec(load=lambda value, bot_id: convert(value))


def _optional(convert: Callable[[Any], Any]) -> Codec:
    return Codec(load=lambda value, bot_id: convert(value) if value is not None else None)


def _tuple(*converts: Callable[[Any], Any]) -> Codec:
    return Codec(dump=list, load=lambda value, bot_id: tuple(c(v) for c, v in zip(converts, value, strict=True)))


def _data(cls: Callable[[], Any] | type, *, optional: bool = False) -> Codec:
    """A value with ``as_dict`` / ``from_dict``; ``cls`` a class, or a function returning it (a lazy import)."""
    def of() -> Any:
        return cls if isinstance(cls, type) else cls()

    def dump(value: Any) -> Any:
        return value.as_dict() if value is not None or not optional else None

    def load(value: Any, bot_id: int) -> Any:
        return of().from_dict(value) if value or not optional else None

    return Codec(dump=dump, load=load)


def _int_or_none(value: Any) -> int | None:
    return int(value) if value is not None else None


def _forced(value: Any) -> Codec:
    """An argument the bot may not choose: whatever it sends, the supervisor uses ``value``."""
    return Codec(dump=lambda _: None, load=lambda _, bot_id: value)


PLAIN = Codec()
STR, INT, FLOAT, BOOL, LIST, DICT = (_plain(t) for t in (str, int, float, bool, list, dict))
OPT_STR, OPT_INT, OPT_FLOAT, OPT_LIST = (_optional(t) for t in (str, int, float, list))


def _link_class() -> type[Link]:
    from grobot.core.tools.catalog import Link

    return Link


def _council_plan_class() -> type:
    from grobot.core.agents.council import CouncilPlan

    return CouncilPlan


def _own_message(data: dict[str, Any], bot_id: int) -> IncomingMessage:
    """A message of the bot of the path (a bot's own messages answer Discord: no stored run)."""
    fields = {k: v for k, v in data.items() if k in IncomingMessage.__dataclass_fields__}
    fields["attachments"] = [Attachment(**a) for a in fields.get("attachments") or []]
    return IncomingMessage(**{**fields, "bot_id": bot_id, "run_id": None})


def _own_log_rows(rows: list[dict[str, Any]], bot_id: int) -> list[dict[str, Any]]:
    return [{"bot_id": bot_id, "created_at": datetime.fromisoformat(r["created_at"]), "level": str(r["level"]),
             "logger": str(r["logger"])[:200], "message": str(r["message"])[:10_000]} for r in rows]


LINK_LIST = Codec(dump=lambda links: [link.as_dict() for link in links],
                  load=lambda items, bot_id: [_link_class().from_dict(item) for item in items])
MESSAGE = Codec(dump=incoming_dict, load=_own_message)
# A bot's runs answer Discord messages: stored runs (run_id) are the supervisor's Test Chat jobs.
RUN_KEY = Codec(dump=message_key, load=lambda data, bot_id: message_from_key({**data, "bot_id": bot_id, "run_id": None}))
RECORDS = Codec(dump=lambda records: [dict(vars(r)) for r in records], load=lambda items, bot_id: records_from(items))
NOTES = Codec(dump=lambda notes: [list(n) for n in notes or []],
              load=lambda items, bot_id: [(str(u), str(n), float(r)) for u, n, r in items or []])
LOG_ROWS = Codec(dump=lambda rows: [{**row, "created_at": row["created_at"].isoformat()} for row in rows],
                 load=_own_log_rows)
ROLES = Codec(dump=lambda roles: [list(r) for r in roles],
              load=lambda items, bot_id: [(str(i), str(n)[:100], int(p)) for i, n, p in items or []][:1000])
AS_DICT = Codec(dump=lambda value: value.as_dict(), load=lambda value, bot_id: dict(value))


@dataclass(frozen=True)
class Arg:
    """One argument of an operation: its name (the keyword of both methods and the payload's key)."""

    name: str
    codec: Codec = PLAIN
    default: Any = REQUIRED


@dataclass(frozen=True)
class Op:
    """One operation of the bot link."""

    name: str  # on the wire: /v1/bots/{id}/store/{name}
    method: str  # the BotStore method the bot calls
    args: tuple[Arg, ...] = ()
    result: Codec = PLAIN
    local: str = ""  # the LocalBotStore method that serves it ("": ``method``)
    bot_arg: bool = True  # ``method`` takes the bot's id first (the link sends none: the path says it)
    local_bot_arg: bool | None = None  # ``local`` takes the path's bot id first (None: as ``bot_arg``)
    # An answer in two parts: ``local`` returns ``(first, awaitable of the rest)``; the rest crosses with this codec.
    rest: Codec | None = None
    signature: inspect.Signature = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if any(arg.name == "bot_id" for arg in self.args):
            raise ValueError(f"operation {self.name!r}: the bot's id comes from the path, not an argument")
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params = [inspect.Parameter("bot_id", kind)] if self.bot_arg else []
        params += [inspect.Parameter(arg.name, kind, default=arg.default) for arg in self.args]
        object.__setattr__(self, "signature", inspect.Signature(params))

    @property
    def served_by(self) -> str:
        return self.local or self.method

    @property
    def serves_bot_id(self) -> bool:
        return self.bot_arg if self.local_bot_arg is None else self.local_bot_arg

    def payload(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The request's JSON body for a call of :attr:`method` with these arguments (the bot's side)."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return {arg.name: arg.codec.dump(bound.arguments[arg.name]) for arg in self.args}

    def kwargs(self, payload: dict[str, Any], bot_id: int) -> dict[str, Any]:
        """The keyword arguments of :attr:`served_by` for a request of bot ``bot_id`` (the supervisor's side)."""
        kwargs: dict[str, Any] = {}
        for arg in self.args:
            if arg.name in payload:
                kwargs[arg.name] = arg.codec.load(payload[arg.name], bot_id)
            elif arg.default is not REQUIRED:
                kwargs[arg.name] = arg.default
            else:
                raise KeyError(arg.name)
        return kwargs


def _ops(*ops: Op) -> dict[str, Op]:
    """The table by name; each name and each bot-side method once."""
    if len({op.name for op in ops}) != len(ops) or len({op.method for op in ops}) != len(ops):
        raise ValueError("two operations of the bot link share a name or a method")
    return {op.name: op for op in ops}


OPS: dict[str, Op] = _ops(
    # -- the bot's own (BotStore) ---------------------------------------------------------------
    Op("start", "settings_at_start", result=_data(BotSettings, optional=True)),
    Op("prepare", "read_message", (Arg("msg", MESSAGE),), result=_data(MessageData), local="prepare_for_bot",
       rest=_optional(dict)),
    Op("online", "mark_online", (Arg("pid", INT), Arg("user_id", STR), Arg("user_name", STR), Arg("guild_count", INT),
                                 Arg("revision", INT)), result=BOOL),
    Op("exit", "record_exit", (Arg("detail", STR), Arg("pid", INT), Arg("rejected_revision", OPT_INT, None))),
    Op("forget", "forget", (Arg("key", STR), Arg("user_id", STR)), result=INT),
    Op("images", "output_takes_images", result=BOOL),
    Op("roles", "save_roles", (Arg("guild_id", STR), Arg("guild_name", STR), Arg("roles", ROLES)), result=INT),
    Op("logs", "write_logs", (Arg("rows", LOG_ROWS),), result=INT, bot_arg=False),
    # -- the chain's (RunStore) -----------------------------------------------------------------
    Op("load", "load", (Arg("msg", RUN_KEY),), result=_data(Loaded), bot_arg=False),
    Op("tool_settings", "tool_settings", result=_tuple(float, float), bot_arg=False),
    Op("write_run", "write_run", (Arg("write", Codec(dump=lambda w: w.as_dict(), load=lambda d, _: RunWrite.from_dict(d))),),
       result=_tuple(_int_or_none, _int_or_none), local="write_own_run",
       bot_arg=False, local_bot_arg=True),
    Op("save_calls", "save_calls", (Arg("run_id", OPT_INT), Arg("records", RECORDS), Arg("notes", NOTES, None)),
       local="save_own_calls"),
    Op("mcp_links", "mcp_links", result=LINK_LIST),
    Op("list_files", "list_files", result=LIST),
    Op("read_file", "read_file", (Arg("path", STR), Arg("max_chars", INT)), result=_tuple(str, bool)),
    Op("list_notes", "list_notes", (Arg("user", STR),), result=LIST),
    Op("add_note", "add_note", (Arg("user", STR), Arg("note", STR), Arg("reliability", FLOAT), Arg("source", STR, "tool")),
       result=DICT),
    Op("update_note", "update_note", (Arg("user", STR), Arg("note_id", INT), Arg("note", OPT_STR),
                                      Arg("reliability", OPT_FLOAT)), result=DICT),
    # -- the advisory council (grobot.core.agents.council.CouncilPort) ---------------------------
    Op("council_plan", "council_plan", (Arg("asker", OPT_STR),), result=_data(_council_plan_class)),
    Op("council_save", "save_deliberation", (Arg("deliberation", AS_DICT), Arg("asked_by", STR),
                                             Arg("platform", _forced("discord"), "discord"),
                                             Arg("deliberation_id", OPT_INT, None)), result=INT),
    Op("council_drop", "drop_deliberation", (Arg("deliberation_id", INT),)),
)


async def dispatch(store: Any, bot_id: int, name: str, payload: dict[str, Any]) -> Any:
    """Serve operation ``name`` for bot ``bot_id`` (the request's path) on ``store``: its JSON-ready result.

    An unknown operation is a 404, a payload it cannot read a 400; domain errors reach the
    bot with their kind and message (:class:`bot_worker.bot_link.StoreError`).
    """
    op = OPS.get(name)
    if op is None:
        raise StoreError("bad_request", f"unknown operation {name!r}", 404)
    try:
        kwargs = op.kwargs(payload, bot_id)
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError("bad_request", f"bad arguments for {name!r}: {type(exc).__name__}: {exc}", 400) from None
    method = getattr(store, op.served_by)
    try:
        result = await (method(bot_id, **kwargs) if op.serves_bot_id else method(**kwargs))
    except NotFoundError as exc:
        raise StoreError("not_found", str(exc), 404) from None
    except ValidationError as exc:
        raise StoreError("validation", str(exc), 422) from None
    except StoreUnavailable as exc:  # the bot tries again later
        raise StoreError("unavailable", str(exc), 503) from None
    except GroBotError as exc:
        raise StoreError("error", str(exc), 409) from None
    if op.rest is None:
        return op.result.dump(result)
    first, rest = result
    return InParts(op.result.dump(first), _dumped(op.rest, rest)) if rest is not None else op.result.dump(first)


async def _dumped(codec: Codec, rest: Any) -> Any:
    return codec.dump(await rest)
