"""A fake Discord on 127.0.0.1: REST under ``/api/v10`` and the JSON gateway, for real discord.py clients.

It runs its own event loop in a background thread, so tests (sync or async) and benchmarks
drive it through plain methods::

    fake = FakeDiscord().start()
    token, user_id = fake.new_bot_token("alpha")         # any well-formed token works; the
                                                         # bot user id is its first segment
    env = {"DISCORD_API_BASE": fake.api_base, "DISCORD_GATEWAY_URL": fake.gateway_url}
    msg = fake.send_message(fake.channel_id, "hi <@123>", mentions=[123])
    fake.replies_to(msg["id"])                           # messages that reply to it
    fake.calls                                           # every REST call, with the bot that made it

Faults: :meth:`revoke` (401 at login), :meth:`reject_at_identify` (close 4004),
:meth:`deny_intent` (close 4014), :meth:`drop` (close a bot's gateway so it RESUMEs),
:meth:`invalidate_sessions` (the next RESUME gets INVALID_SESSION), :meth:`rate_limit`
(the next matching REST call gets a 429 with or without a ``Via`` header), :meth:`fail` (the
next matching REST calls get an error status: 403 Missing Permissions, 500, ...).
:meth:`hold` holds the next matching REST call until released (a barrier), after or before it
makes its message. A message sent with a ``nonce`` and ``enforce_nonce`` that its author already
sent in the past few minutes is returned instead of made again, as Discord does.
:meth:`delete_message` deletes a user's message: a later reply to it is refused (400, code
50035) unless it says ``fail_if_not_exists: false``, as Discord does. :meth:`create_thread`
opens a thread under a channel (THREAD_CREATE to the bots). Roles: :meth:`add_role` (GUILD_ROLE_CREATE),
:meth:`rename_role` (GUILD_ROLE_UPDATE), :meth:`give_role` / :meth:`take_role`: a member's roles are in
the ``member`` of their messages and interactions, and every role in the guild's GUILD_CREATE.

The wire details follow what discord.py 2.7 needs (content type exactly ``application/json``,
ids as strings, ``resume_gateway_url`` pointing back here).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import logging
import mimetypes
import re
import secrets
import string
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

logger = logging.getLogger(__name__)

INTENT_BITS = {"members": 1 << 1, "presences": 1 << 8, "message_content": 1 << 15}
REACTION_INTENTS = {"guild": 1 << 10, "dm": 1 << 13}  # GUILD_MESSAGE_REACTIONS, DIRECT_MESSAGE_REACTIONS
INTENT_NAMES = {"members": "Server Members Intent", "presences": "Presence Intent",
                "message_content": "Message Content Intent"}
_EPOCH_MS = 1420070400000
_ALPHABET = string.ascii_letters + string.digits + "-_"


def make_token(user_id: int) -> str:
    """A token shaped like a real one: base64url(user id) . 6 chars . 27+ chars."""
    first = base64.urlsafe_b64encode(str(user_id).encode()).decode().rstrip("=")
    return f"{first}.{''.join(secrets.choice(_ALPHABET) for _ in range(6))}." + "".join(
        secrets.choice(_ALPHABET) for _ in range(32)
    )


def user_id_from_token(token: str) -> int | None:
    """The bot user id encoded in the token's first segment (None when it is not one)."""
    try:
        first = token.split(".")[0]
        raw = base64.urlsafe_b64decode(first + "=" * (-len(first) % 4)).decode()
        return int(raw) if raw.isdigit() else None
    except Exception:
        return None


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=json.dumps(data).encode(), status=status, content_type="application/json",
                        headers=headers)


@dataclass
class RestCall:
    """One REST request the fake received."""

    bot_id: int | None  # the bot user id from the Authorization header (None: no header)
    method: str
    path: str  # without the /api/v10 prefix
    json: Any
    time: float = field(default_factory=time.monotonic)


@dataclass
class Session:
    """One gateway session (an IDENTIFY)."""

    session_id: str
    bot_id: int
    intents: int
    seq: int = 0
    ws: web.WebSocketResponse | None = None
    events: list[dict[str, Any]] = field(default_factory=list)  # for RESUME
    identified_at: float = field(default_factory=time.monotonic)
    resumes: int = 0


@dataclass
class _Fault:
    method: str
    pattern: str
    status: int
    body: dict[str, Any]
    remaining: int


# What Discord answers with each error status (``message`` and JSON ``code``).
FAULT_BODIES: dict[int, dict[str, Any]] = {
    400: {"message": "400: Bad Request", "code": 0},
    403: {"message": "Missing Permissions", "code": 50013},
    404: {"message": "Unknown Channel", "code": 10003},
    500: {"message": "500: Internal Server Error", "code": 0},
    502: {"message": "502: Bad Gateway", "code": 0},
    503: {"message": "503: Service Unavailable", "code": 0},
}


def unknown_reference() -> dict[str, Any]:
    """Discord's answer to a reply whose ``message_reference`` names a deleted message."""
    return {"message": "Invalid Form Body", "code": 50035,
            "errors": {"message_reference": {"_errors": [{"code": "MESSAGE_REFERENCE_UNKNOWN_MESSAGE",
                                                          "message": "Unknown message"}]}}}


NONCE_WINDOW_SECONDS = 300.0  # Discord: "the past few minutes"


@dataclass
class Hold:
    """A barrier on the next matching REST call (:meth:`FakeDiscord.hold`): ``reached`` is set when it
    arrives; it waits until :meth:`release`. ``after`` true: the message it posts is made (and shown in
    the channel) before it waits; false: it is lost on the way, never made (released, its connection
    drops). Either way its sender never learns what became of it."""

    method: str
    pattern: str
    after: bool
    loop: asyncio.AbstractEventLoop
    reached: threading.Event = field(default_factory=threading.Event)
    _released: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        self.loop.call_soon_threadsafe(self._released.set)

    async def wait(self) -> None:
        self.reached.set()
        await self._released.wait()


@dataclass
class _RateLimit:
    method: str
    pattern: str
    retry_after: float
    via: bool
    remaining: int


class FakeDiscord:
    """The fake server; every public method is safe to call from any thread."""

    def __init__(self, *, heartbeat_interval_ms: int = 41250, guild_name: str = "Test Guild") -> None:
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self.guild_id = self._snowflake()
        self.channel_id = self._snowflake()  # "general"
        self.other_channel_id = self._snowflake()  # "random"
        self.guild_name = guild_name
        self.channels: dict[int, dict[str, Any]] = {
            self.channel_id: {"id": str(self.channel_id), "type": 0, "name": "general", "position": 0},
            self.other_channel_id: {"id": str(self.other_channel_id), "type": 0, "name": "random", "position": 1},
        }
        self.dm_channels: dict[int, tuple[int, int]] = {}  # channel id -> (bot id, user id)
        self.users: dict[int, dict[str, Any]] = {}
        self.roles: dict[int, dict[str, Any]] = {}  # the guild's roles besides @everyone
        self.member_roles: dict[int, list[str]] = {}  # user id -> the ids of their roles in the guild
        self.alice = self.add_user("alice")
        self.bob = self.add_user("bob")
        self.bots: dict[int, str] = {}  # bot user id -> name
        self.revoked: set[str] = set()
        self.identify_rejected: set[str] = set()
        self.denied_intents: dict[int, set[str]] = {}
        self.calls: list[RestCall] = []
        self.messages: dict[int, dict[str, Any]] = {}
        self.sessions: dict[str, Session] = {}
        self.identifies: list[tuple[int, str, float]] = []  # (bot id, session id, time)
        self.max_open_sessions: dict[int, int] = {}  # bot id -> most gateway sessions open at once
        self.attachments: dict[str, tuple[bytes, str]] = {}
        self.interaction_responses: list[dict[str, Any]] = []
        self._rate_limits: list[_RateLimit] = []
        self._faults: list[_Fault] = []
        self.deleted: set[int] = set()  # message ids deleted (by a user or a bot)
        self.nonces: dict[tuple[int, str], tuple[int, float]] = {}  # (author, nonce) -> (message id, time)
        self._holds: list[Hold] = []
        self._listeners: list[Callable[[RestCall], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeDiscord:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._start_server())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fake-discord", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake Discord did not start")
        return self

    async def _start_server(self) -> None:
        app = web.Application(client_max_size=50 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/attachments/{key}/{filename}", self._attachment)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def stop(self) -> None:
        if self._loop is None:
            return

        async def shutdown() -> None:
            for session in list(self.sessions.values()):
                if session.ws is not None and not session.ws.closed:
                    await session.ws.close(code=1001)
            if self._runner is not None:
                await self._runner.cleanup()

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        except Exception:  # pragma: no cover - best effort
            logger.exception("fake Discord shutdown")
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None

    def __enter__(self) -> FakeDiscord:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        """Value for ``DISCORD_API_BASE``."""
        return f"{self.base_url}/api/v10"

    @property
    def gateway_url(self) -> str:
        """Value for ``DISCORD_GATEWAY_URL``."""
        return f"ws://127.0.0.1:{self.port}/gateway"

    def env(self) -> dict[str, str]:
        return {"DISCORD_API_BASE": self.api_base, "DISCORD_GATEWAY_URL": self.gateway_url}

    def _run(self, coro: Any, timeout: float = 10) -> Any:
        assert self._loop is not None, "fake Discord not started"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # ------------------------------------------------------------------ world
    def _snowflake(self) -> int:
        return ((int(time.time() * 1000) - _EPOCH_MS) << 22) + next(self._ids)

    def add_user(self, name: str, *, bot: bool = False, user_id: int | None = None) -> dict[str, Any]:
        with self._lock:
            uid = user_id or self._snowflake()
            user = {"id": str(uid), "username": name, "discriminator": "0", "global_name": name,
                    "avatar": None, "bot": bot, "public_flags": 0}
            self.users[uid] = user
            return user

    def add_role(self, name: str) -> dict[str, Any]:
        """A new role of the guild (GUILD_ROLE_CREATE to the connected bots, as Discord sends it)."""
        with self._lock:
            rid = self._snowflake()
            role = {"id": str(rid), "name": name, "permissions": "0", "position": len(self.roles) + 1, "color": 0,
                    "hoist": False, "managed": False, "mentionable": False, "flags": 0, "icon": None,
                    "unicode_emoji": None}
            self.roles[rid] = role
        if self._loop is not None:
            self._run(self._to_guild("GUILD_ROLE_CREATE", {"guild_id": str(self.guild_id), "role": dict(role)}))
        return dict(role)

    def rename_role(self, role: dict[str, Any], name: str) -> None:
        """An admin renames a role (GUILD_ROLE_UPDATE to the connected bots)."""
        with self._lock:
            stored = self.roles[int(role["id"])]
            stored["name"] = name
            data = {"guild_id": str(self.guild_id), "role": dict(stored)}
        self._run(self._to_guild("GUILD_ROLE_UPDATE", data))

    def give_role(self, user: dict[str, Any], role: dict[str, Any]) -> None:
        """``user`` gets ``role``: their next messages carry it (``member.roles``), as on Discord."""
        with self._lock:
            roles = self.member_roles.setdefault(int(user["id"]), [])
            if str(role["id"]) not in roles:
                roles.append(str(role["id"]))

    def take_role(self, user: dict[str, Any], role: dict[str, Any]) -> None:
        with self._lock:
            roles = self.member_roles.get(int(user["id"]), [])
            if str(role["id"]) in roles:
                roles.remove(str(role["id"]))

    async def _to_guild(self, name: str, data: dict[str, Any]) -> None:
        with self._lock:
            targets = [s for s in self.sessions.values() if s.ws is not None and not s.ws.closed]
        for session in targets:
            await self._dispatch(session, name, data)

    def new_bot_token(self, name: str | None = None, *, user_id: int | None = None) -> tuple[str, int]:
        """A fresh token for a new bot user (or a regenerated token for ``user_id``)."""
        uid = user_id or self._snowflake()
        with self._lock:
            if uid not in self.bots:
                self.bots[uid] = name or f"bot{uid % 100000}"
                self.add_user(self.bots[uid], bot=True, user_id=uid)
        return make_token(uid), uid

    def _bot_for_token(self, token: str) -> int | None:
        uid = user_id_from_token(token)
        if uid is None or token in self.revoked:
            return None
        with self._lock:
            if uid not in self.bots:
                self.bots[uid] = f"bot{uid % 100000}"
                self.add_user(self.bots[uid], bot=True, user_id=uid)
        return uid

    def forget_calls(self) -> None:
        """Forget the REST calls and interaction responses received so far (a test on a fleet shared
        with the tests before it starts from none)."""
        with self._lock:
            self.calls.clear()
            self.interaction_responses.clear()

    def revoke(self, token: str) -> None:
        """Discord no longer knows ``token``: 401 on REST, close 4004 on the gateway."""
        with self._lock:
            self.revoked.add(token)

    def reject_at_identify(self, token: str) -> None:
        """Login works but IDENTIFY with ``token`` is closed with 4004."""
        with self._lock:
            self.identify_rejected.add(token)

    def deny_intent(self, bot_id: int, intent: str = "message_content") -> None:
        """The privileged ``intent`` is not enabled for this bot: IDENTIFY asking for it gets 4014."""
        with self._lock:
            self.denied_intents.setdefault(bot_id, set()).add(intent)

    def rate_limit(self, method: str, path_regex: str, *, retry_after: float = 0.05, via: bool = True,
                   times: int = 1) -> None:
        """The next ``times`` REST calls matching get a 429 (with a ``Via`` header when ``via``)."""
        with self._lock:
            self._rate_limits.append(_RateLimit(method.upper(), path_regex, retry_after, via, times))

    def fail(self, method: str, path_regex: str, status: int, *, times: int = 1,
             body: dict[str, Any] | None = None) -> None:
        """The next ``times`` REST calls matching get ``status`` with Discord's body for it
        (:data:`FAULT_BODIES`, or ``body``). The calls are recorded as any other."""
        with self._lock:
            self._faults.append(_Fault(method.upper(), path_regex, status,
                                       body or FAULT_BODIES.get(status, {"message": f"{status}", "code": 0}), times))

    def delete_message(self, channel_id: int | str, message_id: int | str) -> None:
        """A user (or a moderator) deletes a message: MESSAGE_DELETE to the bots that see it."""
        self._run(self._delete_message(int(channel_id), int(message_id)))

    async def _delete_message(self, channel_id: int, message_id: int) -> None:
        with self._lock:
            self.messages.pop(message_id, None)
            self.deleted.add(message_id)
            dm = self.dm_channels.get(channel_id)
            targets = [s for s in self.sessions.values() if s.ws is not None and not s.ws.closed
                       and (dm is None or s.bot_id == dm[0])]
        data = {"id": str(message_id), "channel_id": str(channel_id),
                **({"guild_id": str(self.guild_id)} if dm is None else {})}
        for session in targets:
            await self._dispatch(session, "MESSAGE_DELETE", data)

    def create_thread(self, channel_id: int | str, name: str = "thread", *,
                      owner: dict[str, Any] | None = None) -> int:
        """A user opens a public thread under ``channel_id``: THREAD_CREATE to the bots; returns its id."""
        return int(self._run(self._create_thread(int(channel_id), name, owner or self.alice))["id"])

    async def _create_thread(self, parent_id: int, name: str, owner: dict[str, Any]) -> dict[str, Any]:
        thread = self._new_thread(parent_id, name, owner_id=str(owner["id"]))
        with self._lock:
            targets = [s for s in self.sessions.values() if s.ws is not None and not s.ws.closed]
        for session in targets:
            await self._dispatch(session, "THREAD_CREATE", dict(thread, newly_created=True))
        return thread

    def _new_thread(self, parent_id: int, name: str, *, owner_id: str) -> dict[str, Any]:
        """A public thread under ``parent_id`` (in :attr:`channels`, with its parent)."""
        tid = self._snowflake()
        thread = {"id": str(tid), "type": 11, "name": name, "guild_id": str(self.guild_id),
                  "parent_id": str(parent_id), "owner_id": owner_id, "position": 0,
                  "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                      "archive_timestamp": "2024-01-01T00:00:00+00:00", "locked": False},
                  "member_count": 1, "message_count": 0, "rate_limit_per_user": 0, "flags": 0}
        with self._lock:
            self.channels[tid] = thread
        return dict(thread)

    def add_attachment(self, filename: str, data: bytes, content_type: str) -> dict[str, Any]:
        """An attachment object served by the fake (for :meth:`send_message`)."""
        key = str(self._snowflake())
        with self._lock:
            self.attachments[key] = (data, content_type)
        return {"id": key, "filename": filename, "size": len(data), "content_type": content_type,
                "url": f"{self.base_url}/attachments/{key}/{filename}",
                "proxy_url": f"{self.base_url}/attachments/{key}/{filename}"}

    # ------------------------------------------------------------------ inspection
    def online_bots(self) -> set[int]:
        """Bot ids with an open, identified gateway connection."""
        with self._lock:
            return {s.bot_id for s in self.sessions.values() if s.ws is not None and not s.ws.closed}

    def session_of(self, bot_id: int) -> str | None:
        """The id of the open gateway session of ``bot_id``."""
        with self._lock:
            for s in self.sessions.values():
                if s.bot_id == bot_id and s.ws is not None and not s.ws.closed:
                    return s.session_id
        return None

    def identify_count(self, bot_id: int) -> int:
        with self._lock:
            return sum(1 for b, _, _ in self.identifies if b == bot_id)

    def calls_by(self, bot_id: int | None = None, method: str | None = None, path_regex: str | None = None) -> list[RestCall]:
        with self._lock:
            calls = list(self.calls)
        return [c for c in calls if (bot_id is None or c.bot_id == bot_id)
                and (method is None or c.method == method)
                and (path_regex is None or re.search(path_regex, c.path))]

    def replies_to(self, message_id: int | str) -> list[dict[str, Any]]:
        """Messages (as they are now, after edits) that reply to ``message_id``."""
        with self._lock:
            return [dict(m) for m in self.messages.values()
                    if (m.get("message_reference") or {}).get("message_id") == str(message_id)]

    def channel_messages(self, channel_id: int | str, *, bot_id: int | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(m) for m in self.messages.values() if m["channel_id"] == str(channel_id)
                    and (bot_id is None or m["author"]["id"] == str(bot_id))]

    def wait_call(self, predicate: Callable[[RestCall], bool], timeout: float = 10.0) -> RestCall:
        """Block until a REST call matching ``predicate`` arrives (checks past calls first)."""
        event = threading.Event()
        found: list[RestCall] = []

        def listener(call: RestCall) -> None:
            if not found and predicate(call):
                found.append(call)
                event.set()

        with self._lock:
            for call in self.calls:
                if predicate(call):
                    return call
            self._listeners.append(listener)
        try:
            if not event.wait(timeout):
                raise TimeoutError("no matching REST call")
            return found[0]
        finally:
            with self._lock:
                self._listeners.remove(listener)

    # ------------------------------------------------------------------ injection
    def dm_channel(self, bot_id: int, user: dict[str, Any]) -> int:
        with self._lock:
            for cid, (b, u) in self.dm_channels.items():
                if b == bot_id and u == int(user["id"]):
                    return cid
            cid = self._snowflake()
            self.dm_channels[cid] = (bot_id, int(user["id"]))
            return cid

    def send_message(
        self,
        channel_id: int | str,
        content: str,
        *,
        author: dict[str, Any] | None = None,
        mentions: list[int] | None = None,
        reply_to: int | str | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A user posts a message: it is stored and dispatched as MESSAGE_CREATE to the bots that see it."""
        return self._run(self._post_message(int(channel_id), content, author or self.alice, mentions or [],
                                            reply_to, attachments or []))

    def invoke_command(self, bot_id: int, name: str, options: dict[str, str] | None = None, *,
                       channel_id: int | None = None, user: dict[str, Any] | None = None) -> dict[str, Any]:
        """A user runs the slash command ``name`` of ``bot_id``; returns the interaction payload."""
        return self._run(self._interaction(bot_id, name, options or {}, channel_id or self.channel_id, user or self.alice))

    def react(self, channel_id: int | str, message_id: int | str, emoji: str, *,
              user: dict[str, Any] | None = None) -> None:
        """A user adds the reaction ``emoji`` to a message: MESSAGE_REACTION_ADD to the bots that see
        it and asked for reactions (their gateway intents)."""
        self._run(self._react(int(channel_id), int(message_id), emoji, user or self.alice))

    async def _react(self, channel_id: int, message_id: int, emoji: str, user: dict[str, Any]) -> None:
        with self._lock:
            dm = self.dm_channels.get(channel_id)
            intent = REACTION_INTENTS["dm" if dm is not None else "guild"]
            targets = [s for s in self.sessions.values() if s.ws is not None and not s.ws.closed
                       and (dm is None or s.bot_id == dm[0]) and s.intents & intent]
            author = (self.messages.get(message_id) or {}).get("author") or {}
        data: dict[str, Any] = {"user_id": user["id"], "channel_id": str(channel_id), "message_id": str(message_id),
                                "emoji": {"id": None, "name": emoji}, "burst": False, "type": 0,
                                "message_author_id": author.get("id")}
        if dm is None:
            data.update(guild_id=str(self.guild_id), member=self._member(user))
        for session in targets:
            await self._dispatch(session, "MESSAGE_REACTION_ADD", data)

    def drop(self, bot_id: int, code: int = 4000) -> None:
        """Close the bot's gateway connection (a resumable close code by default)."""

        async def close() -> None:
            for s in list(self.sessions.values()):
                if s.bot_id == bot_id and s.ws is not None and not s.ws.closed:
                    await s.ws.close(code=code)

        self._run(close())

    def invalidate_sessions(self) -> None:
        """Forget every session: the next RESUME gets INVALID_SESSION."""
        with self._lock:
            for sid in [sid for sid, s in self.sessions.items() if s.ws is None or s.ws.closed]:
                del self.sessions[sid]
            for s in self.sessions.values():
                s.session_id = "gone-" + s.session_id

    # ------------------------------------------------------------------ payloads
    def _member(self, user: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            roles = list(self.member_roles.get(int(user["id"]), []))
        return {"user": user, "roles": roles, "joined_at": "2024-01-01T00:00:00+00:00", "deaf": False,
                "mute": False, "flags": 0, "nick": None, "avatar": None, "pending": False}

    def _guild_payload(self) -> dict[str, Any]:
        with self._lock:
            members = [self._member(u) for u in self.users.values()]
            channels = [dict(c, permission_overwrites=[], nsfw=False, parent_id=None, topic=None,
                             rate_limit_per_user=0) for c in self.channels.values() if c["type"] != 11]
            threads = [dict(c) for c in self.channels.values() if c["type"] == 11]
        return {
            "id": str(self.guild_id), "name": self.guild_name, "icon": None, "splash": None,
            "owner_id": self.alice["id"], "afk_timeout": 300, "verification_level": 0,
            "default_message_notifications": 0, "explicit_content_filter": 0, "mfa_level": 0,
            "premium_tier": 0, "nsfw_level": 0, "preferred_locale": "en-US", "features": [],
            "roles": [{"id": str(self.guild_id), "name": "@everyone", "permissions": "1071698660929",
                       "position": 0, "color": 0, "hoist": False, "managed": False, "mentionable": False,
                       "flags": 0}, *[dict(r) for r in self.roles.values()]],
            "emojis": [], "stickers": [], "channels": channels, "threads": threads, "members": members,
            "member_count": len(members), "presences": [], "voice_states": [], "stage_instances": [],
            "guild_scheduled_events": [], "large": False, "unavailable": False,
            "joined_at": "2024-01-01T00:00:00+00:00", "system_channel_id": None,
        }

    def _message_payload(self, channel_id: int, author: dict[str, Any], content: str, *,
                         mentions: list[int], reply_to: int | str | None,
                         attachments: list[dict[str, Any]]) -> dict[str, Any]:
        mid = self._snowflake()
        msg: dict[str, Any] = {
            "id": str(mid), "channel_id": str(channel_id), "author": author, "content": content,
            "timestamp": "2024-01-01T00:00:00+00:00", "edited_timestamp": None, "tts": False,
            "mention_everyone": False, "mentions": [self.users[m] for m in mentions if m in self.users],
            "mention_roles": [], "attachments": attachments, "embeds": [], "pinned": False,
            "type": 0, "flags": 0, "components": [],
        }
        if channel_id in self.channels:
            msg["guild_id"] = str(self.guild_id)
            msg["member"] = {k: v for k, v in self._member(author).items() if k != "user"}
        if reply_to is not None:
            ref = self.messages.get(int(reply_to))
            msg["type"] = 19
            msg["message_reference"] = {"message_id": str(reply_to), "channel_id": str(channel_id),
                                        **({"guild_id": str(self.guild_id)} if "guild_id" in msg else {})}
            if ref is not None:
                msg["referenced_message"] = {k: v for k, v in ref.items() if k != "referenced_message"}
        return msg

    async def _post_message(self, channel_id: int, content: str, author: dict[str, Any], mentions: list[int],
                            reply_to: int | str | None, attachments: list[dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            msg = self._message_payload(channel_id, author, content, mentions=mentions, reply_to=reply_to,
                                        attachments=attachments)
            self.messages[int(msg["id"])] = msg
        await self._dispatch_message(msg)
        return msg

    async def _dispatch_message(self, msg: dict[str, Any]) -> None:
        channel_id = int(msg["channel_id"])
        with self._lock:
            dm = self.dm_channels.get(channel_id)
            targets = [s for s in self.sessions.values() if s.ws is not None and not s.ws.closed
                       and (dm is None or s.bot_id == dm[0])]
        mentioned = {int(u["id"]) for u in msg.get("mentions", [])}
        for session in targets:
            data = msg
            privileged = session.intents & INTENT_BITS["message_content"]
            if not privileged and dm is None and session.bot_id not in mentioned and msg["author"]["id"] != str(session.bot_id):
                data = dict(msg, content="", attachments=[], embeds=[])
            await self._dispatch(session, "MESSAGE_CREATE", data)

    async def _interaction(self, bot_id: int, name: str, options: dict[str, str], channel_id: int,
                           user: dict[str, Any]) -> dict[str, Any]:
        iid = self._snowflake()
        data: dict[str, Any] = {
            "id": str(iid), "application_id": str(bot_id), "type": 2, "token": f"itok{iid}", "version": 1,
            "data": {"id": str(self._snowflake()), "name": name, "type": 1,
                     "options": [{"name": k, "type": 3, "value": v} for k, v in options.items()]},
            "channel_id": str(channel_id), "locale": "en-US", "app_permissions": "1071698660929",
            "entitlements": [], "authorizing_integration_owners": {}, "context": 0,
            "attachment_size_limit": 26214400,
        }
        if channel_id in self.channels:
            data.update(guild_id=str(self.guild_id), guild_locale="en-US",
                        channel=dict(self.channels[channel_id], guild_id=str(self.guild_id)),
                        member=dict(self._member(user), permissions="1071698660929"))
        else:
            data.update(user=user, channel={"id": str(channel_id), "type": 1})
        with self._lock:
            targets = [s for s in self.sessions.values() if s.bot_id == bot_id and s.ws is not None and not s.ws.closed]
        for session in targets:
            await self._dispatch(session, "INTERACTION_CREATE", data)
        return data

    # ------------------------------------------------------------------ REST
    def _record(self, call: RestCall) -> None:
        with self._lock:
            self.calls.append(call)
            listeners = list(self._listeners)
        for listener in listeners:
            listener(call)

    def hold(self, method: str = "POST", path_regex: str = r"^/channels/\d+/messages$", *, after: bool) -> Hold:
        """Hold the next matching REST call until the returned :class:`Hold` is released (a positive
        barrier: a test acts while a sender waits for Discord's answer)."""
        assert self._loop is not None, "fake Discord not started"
        hold = Hold(method, path_regex, after, self._loop)
        with self._lock:
            self._holds.append(hold)
        return hold

    def _take_hold(self, method: str, path: str) -> Hold | None:
        with self._lock:
            for hold in self._holds:
                if hold.method == method and re.search(hold.pattern, path):
                    self._holds.remove(hold)
                    return hold
        return None

    def _check_fault(self, method: str, path: str) -> web.Response | None:
        with self._lock:
            for fault in self._faults:
                if fault.method == method and re.search(fault.pattern, path) and fault.remaining > 0:
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                    return _json(fault.body, fault.status)
        return None

    def _check_rate_limit(self, method: str, path: str) -> web.Response | None:
        with self._lock:
            for rl in self._rate_limits:
                if rl.method == method and re.search(rl.pattern, path) and rl.remaining > 0:
                    rl.remaining -= 1
                    if rl.remaining == 0:
                        self._rate_limits.remove(rl)
                    headers = {"Retry-After": str(rl.retry_after)}
                    if rl.via:
                        headers["Via"] = "1.1 google"
                    return _json({"message": "You are being rate limited.", "retry_after": rl.retry_after,
                                  "global": False}, 429, headers)
        return None

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        method = request.method
        body: Any = None
        if request.can_read_body:
            if request.content_type == "multipart/form-data":
                reader = await request.multipart()
                body = {}
                uploaded = []  # files sent with a message ("files[N]"): its attachments
                async for part in reader:
                    if part.name == "payload_json":
                        body = json.loads(await part.text())
                    else:
                        data = bytes(await part.read())
                        name = part.filename or "file"
                        kind = part.headers.get("Content-Type", "")
                        if kind in ("", "application/octet-stream"):  # Discord tells the type by the name
                            kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
                        uploaded.append((name, data, kind))
                if uploaded:
                    body["_uploaded"] = uploaded
            else:
                raw = await request.read()
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
        auth = request.headers.get("Authorization", "")
        token = auth[4:] if auth.startswith("Bot ") else None
        bot_id = self._bot_for_token(token) if token else None
        self._record(RestCall(bot_id, method, path, body))
        if token is not None and bot_id is None:
            return _json({"message": "401: Unauthorized", "code": 0}, 401)
        limited = self._check_rate_limit(method, path) or self._check_fault(method, path)
        if limited is not None:
            return limited
        return await self._route(method, path, body, bot_id, request)

    async def _route(self, method: str, path: str, body: Any, bot_id: int | None, request: web.Request) -> web.StreamResponse:
        parts = path.strip("/").split("/")
        if path in ("/gateway", "/gateway/bot"):
            return _json({"url": self.gateway_url, "shards": 1,
                          "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}})
        if path == "/users/@me" and method == "GET":
            return _json(self.users[bot_id]) if bot_id else _json({"message": "401: Unauthorized"}, 401)
        if path == "/oauth2/applications/@me":
            return _json({"id": str(bot_id), "name": self.bots.get(bot_id or 0, "app"), "description": "",
                          "icon": None, "bot_public": True, "bot_require_code_grant": False,
                          "owner": self.alice, "verify_key": "0" * 64, "flags": 0})
        if len(parts) == 3 and parts[0] == "applications" and parts[2] == "commands" and method == "PUT":
            return _json([dict(c, id=str(self._snowflake()), application_id=parts[1], version="1",
                               default_member_permissions=None, type=c.get("type", 1))
                          for c in (body or [])])
        if len(parts) == 3 and parts[0] == "applications" and parts[2] == "commands":
            return _json([])
        if parts[0] == "channels" and len(parts) >= 2:
            channel_id = int(parts[1])
            if len(parts) == 3 and parts[2] == "typing" and method == "POST":
                return web.Response(status=204)
            if len(parts) == 3 and parts[2] == "messages" and method == "POST":
                if self._reference_unknown(body or {}):
                    return _json(unknown_reference(), 400)
                hold = self._take_hold(method, path)
                if hold is not None and not hold.after:
                    await hold.wait()
                    if request.transport is not None:  # lost on the way: never made, the connection drops
                        request.transport.close()
                    return web.Response(status=499)
                made = await self._bot_message(bot_id, channel_id, body or {})
                if hold is not None and hold.after:
                    await hold.wait()
                return _json(made)
            if len(parts) == 3 and parts[2] == "messages" and method == "GET":
                limit = int(request.query.get("limit", "50"))
                msgs = sorted(self.channel_messages(channel_id), key=lambda m: int(m["id"]), reverse=True)
                return _json(msgs[:limit])
            if len(parts) == 4 and parts[2] == "messages" and method == "PATCH":
                with self._lock:
                    msg = self.messages.get(int(parts[3]))
                    if msg is None:
                        return _json({"message": "Unknown Message", "code": 10008}, 404)
                    if "content" in (body or {}):
                        msg["content"] = body["content"]
                    msg["edited_timestamp"] = "2024-01-01T00:00:01+00:00"
                    return _json(dict(msg))
            if len(parts) == 4 and parts[2] == "messages" and method == "DELETE":
                with self._lock:
                    gone = self.messages.pop(int(parts[3]), None)
                    if gone is not None:
                        self.deleted.add(int(parts[3]))
                return web.Response(status=204) if gone is not None else \
                    _json({"message": "Unknown Message", "code": 10008}, 404)
            if len(parts) >= 5 and parts[2] == "messages" and parts[4] == "reactions":
                return web.Response(status=204)
            if len(parts) == 5 and parts[2] == "messages" and parts[4] == "threads":
                return _json(self._new_thread(channel_id, (body or {}).get("name", "thread"), owner_id=str(bot_id)))
            if len(parts) == 2 and method == "GET":
                with self._lock:
                    channel = self.channels.get(channel_id)
                return _json(dict(channel, guild_id=str(self.guild_id)) if channel else {"id": str(channel_id), "type": 1})
        if parts[0] == "users" and path.endswith("/channels") and method == "POST":
            user = self.users.get(int((body or {}).get("recipient_id", 0)))
            cid = self.dm_channel(bot_id or 0, user or self.alice)
            return _json({"id": str(cid), "type": 1, "recipients": [user or self.alice], "last_message_id": None})
        if parts[0] == "interactions" and parts[-1] == "callback":
            with self._lock:
                self.interaction_responses.append({"kind": "callback", "interaction_id": parts[1], "body": body})
            if request.query.get("with_response") not in ("true", "True", "1"):
                return web.Response(status=204)
            # discord.py 2.7 asks for the callback response object.
            kind = (body or {}).get("type", 4)
            flags = ((body or {}).get("data") or {}).get("flags", 0) or 0
            resource: dict[str, Any] = {"type": kind}
            if kind == 4:
                resource["message"] = {
                    "id": str(self._snowflake()), "channel_id": str(self.channel_id), "author": self.alice,
                    "content": ((body or {}).get("data") or {}).get("content", ""), "timestamp": "2024-01-01T00:00:00+00:00",
                    "edited_timestamp": None, "tts": False, "mention_everyone": False, "mentions": [],
                    "mention_roles": [], "attachments": [], "embeds": [], "pinned": False, "type": 20,
                    "flags": flags, "components": []}
            return _json({"interaction": {"id": parts[1], "type": 2, "response_message_loading": kind == 5,
                                          "response_message_ephemeral": bool(flags & 64)},
                          "resource": resource})
        if parts[0] == "webhooks" and len(parts) >= 3:
            with self._lock:
                self.interaction_responses.append({"kind": f"webhook {method}", "token": parts[2], "body": body})
            return _json({"id": str(self._snowflake()), "channel_id": str(self.channel_id),
                          "author": self.users.get(int(parts[1]), self.alice), "content": (body or {}).get("content", ""),
                          "timestamp": "2024-01-01T00:00:00+00:00", "edited_timestamp": None, "tts": False,
                          "mention_everyone": False, "mentions": [], "mention_roles": [], "attachments": [],
                          "embeds": [], "pinned": False, "type": 0, "flags": (body or {}).get("flags", 0) or 0,
                          "components": []})
        return _json({"message": f"404: Not Found ({method} {path})", "code": 0}, 404)

    def _reference_unknown(self, body: dict[str, Any]) -> bool:
        """A reply to a deleted message that asks Discord to refuse it (``fail_if_not_exists`` true or absent)."""
        ref = body.get("message_reference") or {}
        if ref.get("message_id") is None or ref.get("fail_if_not_exists") is False:
            return False
        with self._lock:
            return int(ref["message_id"]) in self.deleted

    async def _bot_message(self, bot_id: int | None, channel_id: int, body: dict[str, Any]) -> dict[str, Any]:
        author = self.users[bot_id] if bot_id else self.alice
        ref = (body.get("message_reference") or {}).get("message_id")
        files = [self.add_attachment(name, data, kind) for name, data, kind in body.pop("_uploaded", [])]
        nonce = body.get("nonce")
        with self._lock:
            if nonce is not None and body.get("enforce_nonce"):
                # Discord: a message of the same author with this nonce in the past few minutes is
                # returned instead of a second one.
                known = self.nonces.get((int(author["id"]), str(nonce)))
                if known is not None and time.monotonic() - known[1] < NONCE_WINDOW_SECONDS \
                        and known[0] in self.messages:
                    return dict(self.messages[known[0]])
            if ref is not None and int(ref) in self.deleted:  # fail_if_not_exists false: sent without the reference
                ref = None
            msg = self._message_payload(channel_id, author, body.get("content", "") or "", mentions=[],
                                        reply_to=str(ref) if ref is not None else None, attachments=files)
            if nonce is not None:
                msg["nonce"] = str(nonce)
                self.nonces[(int(author["id"]), str(nonce))] = (int(msg["id"]), time.monotonic())
            self.messages[int(msg["id"])] = msg
        # Real Discord echoes every message to every bot that can see it (the author included).
        asyncio.get_running_loop().create_task(self._dispatch_message(msg))
        return msg

    async def _attachment(self, request: web.Request) -> web.StreamResponse:
        item = self.attachments.get(request.match_info["key"])
        if item is None:
            return web.Response(status=404)
        return web.Response(body=item[0], content_type=item[1].split(";")[0])

    # ------------------------------------------------------------------ gateway
    async def _send(self, ws: web.WebSocketResponse, payload: dict[str, Any]) -> None:
        if not ws.closed:
            await ws.send_str(json.dumps(payload))

    async def _dispatch(self, session: Session, name: str, data: Any) -> None:
        with self._lock:
            session.seq += 1
            payload = {"op": 0, "t": name, "s": session.seq, "d": data}
            session.events.append(payload)
            if len(session.events) > 500:
                del session.events[:100]
            ws = session.ws
        if ws is not None:
            try:
                await self._send(ws, payload)
            except ConnectionResetError:
                pass

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0)
        await ws.prepare(request)
        session: Session | None = None
        await self._send(ws, {"op": 10, "d": {"heartbeat_interval": self.heartbeat_interval_ms}, "s": None, "t": None})
        try:
            async for frame in ws:
                if frame.type != WSMsgType.TEXT:
                    if frame.type in (WSMsgType.ERROR, WSMsgType.CLOSE):
                        break
                    continue
                msg = json.loads(frame.data)
                op, d = msg.get("op"), msg.get("d")
                if op == 1:
                    await self._send(ws, {"op": 11, "d": None, "s": None, "t": None})
                elif op == 2:
                    session = await self._identify(ws, d or {})
                    if session is None:
                        break
                elif op == 6:
                    session = await self._resume(ws, d or {})
                elif op in (3, 4, 8):
                    pass  # presence, voice state, member requests: ignored
        finally:
            if session is not None and session.ws is ws:
                session.ws = None
        return ws

    async def _identify(self, ws: web.WebSocketResponse, d: dict[str, Any]) -> Session | None:
        token = str(d.get("token", ""))
        if token.startswith("Bot "):
            token = token[4:]
        bot_id = self._bot_for_token(token)
        if bot_id is None or token in self.identify_rejected:
            await ws.close(code=4004, message=b"Authentication failed.")
            return None
        intents = int(d.get("intents", 0))
        denied = self.denied_intents.get(bot_id, set())
        if any(intents & INTENT_BITS[name] for name in denied):
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return None
        session = Session(session_id=secrets.token_hex(16), bot_id=bot_id, intents=intents, ws=ws)
        with self._lock:
            # One live session per bot user is what a correct fleet produces; keep them all
            # so that a test can see a duplicate.
            self.sessions[session.session_id] = session
            self.identifies.append((bot_id, session.session_id, time.monotonic()))
            open_now = sum(1 for s in self.sessions.values() if s.bot_id == bot_id and s.ws is not None and not s.ws.closed)
            self.max_open_sessions[bot_id] = max(self.max_open_sessions.get(bot_id, 0), open_now)
        await self._dispatch(session, "READY", {
            "v": 10, "user": dict(self.users[bot_id], verified=True, mfa_enabled=False, flags=0),
            "guilds": [{"id": str(self.guild_id), "unavailable": True}], "session_id": session.session_id,
            "resume_gateway_url": self.gateway_url, "application": {"id": str(bot_id), "flags": 0},
            "private_channels": [], "relationships": [], "presences": [], "_trace": ["fake"],
        })
        await self._dispatch(session, "GUILD_CREATE", self._guild_payload())
        return session

    async def _resume(self, ws: web.WebSocketResponse, d: dict[str, Any]) -> Session | None:
        with self._lock:
            session = self.sessions.get(str(d.get("session_id")))
        token = str(d.get("token", ""))
        if session is None or self._bot_for_token(token) != session.bot_id:
            await self._send(ws, {"op": 9, "d": False, "s": None, "t": None})
            return None
        seq = int(d.get("seq") or 0)
        with self._lock:
            session.ws = ws
            session.resumes += 1
            missed = [e for e in session.events if e["s"] > seq]
        for event in missed:
            await self._send(ws, event)
        await self._dispatch(session, "RESUMED", {"_trace": ["fake"]})
        return session
