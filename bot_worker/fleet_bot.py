"""The discord.py client of one GroBot bot (the Discord glue of a bot process).

It keeps the gateway connection and takes each message the one way of every host
(:mod:`grobot.core.answering`): prepared (one request to the supervisor: settings, the reply
rules' word, the run, memories, tool scores; none when the settings read last ignore it),
admitted, then answered, streamed into a reply. Heartbeats and lease fencing are
:mod:`bot_worker.lease`'s, the slash commands :mod:`bot_worker.slash_commands`'.
"""


from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import discord
from discord import app_commands

from bot_worker.bot_link import BotLinkClient, initial_lease
from bot_worker.discord_io import (
    BotDiscordActions,
    build_intents,
    delivery_failure,
    read_attachments,
    reply_to,
    send_images,
    typing,
)
from bot_worker.exit_codes import EXIT_OK, EXIT_REPLACED
from bot_worker.lease import DatabaseHeartbeats, LeaseKeeper
from bot_worker.mapping import to_incoming
from bot_worker.remote_store import BotSettings, BotStore, SettingsCache
from bot_worker.run_stops import RunningAnswer, RunStops
from bot_worker.slash_commands import register_commands
from bot_worker.streaming import ReplyStreamer
from bot_worker.text import ERROR_REPLY, public_text, with_note
from bot_worker.timings import timings_logger
from grobot.core.agents.deps import ChainDeps
from grobot.core.agents.types import Event, EventKind
from grobot.core.answering import Admission, FloodGate, Prepared, admit, answer, prepare
from grobot.core.errors import GroBotError
from grobot.core.llm.public_errors import GENERIC
from grobot.core.memory import MemoryPort, NoopMemory
from grobot.core.settings import Settings

logger = logging.getLogger(__name__)


UNDELIVERED = "the answer could not be delivered on Discord"  # why such a run was stopped


@dataclass(frozen=True)
class ProcessConfig:
    """Timings of a bot process (from :class:`~grobot.core.settings.Settings`; short values in tests)."""

    heartbeat_seconds: float = 5.0
    guild_ready_timeout: float = 2.0
    stream_edit_seconds: float = 1.0
    supervisor_id: str | None = None
    fencing: bool = False  # PostgreSQL: several supervisors may exist

    @classmethod
    def from_settings(cls, settings: Settings) -> ProcessConfig:
        worker = settings.worker
        return cls(supervisor_id=worker.supervisor_id, fencing=settings.database_url.startswith("postgresql"),
                   heartbeat_seconds=worker.heartbeat_seconds, guild_ready_timeout=worker.guild_ready_timeout,
                   stream_edit_seconds=worker.stream_edit_seconds)


def _privileged(bot: BotSettings) -> list[str]:
    return [name for name, on in (("message_content", bot.message_content_intent), ("members", bot.members_intent)) if on]


class FleetBot(discord.Client):
    """The discord.py client of one GroBot bot."""

    def __init__(self, bot: BotSettings, config: ProcessConfig, store: BotStore,
                 link: BotLinkClient | None = None, memory: MemoryPort | None = None) -> None:
        super().__init__(
            intents=build_intents(message_content=bot.message_content_intent, members=bot.members_intent),
            guild_ready_timeout=config.guild_ready_timeout,
            max_messages=None,
            chunk_guilds_at_startup=False,
            # What a model writes never pings: not everyone, a role, a user, nor the author replied to.
            allowed_mentions=discord.AllowedMentions.none(),
        )
        self.bot_id = bot.id
        self.store = store
        self.revision = bot.gateway_revision
        self.privileged = _privileged(bot)
        self.config = config
        self.pid = os.getpid()
        self.exit_code = EXIT_OK
        self.gate = FloodGate()  # cooldowns, runs at once, notices
        self.stops = RunStops()  # the answers in progress, for /stop and a 🛑 reaction
        self.actions = BotDiscordActions(self)
        # What its runs use: the supervisor's store, its memory (over the link), MCP sessions of its own.
        self.deps = ChainDeps(store=store, discord=self.actions, memory=memory if memory is not None else NoopMemory())
        self.tree = app_commands.CommandTree(self)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._answers: set[asyncio.Task[Any]] = set()  # the answers in progress (also in _tasks)
        self._synced = False
        self._connected = False
        # Heartbeats, lease fencing and the supervisor's word on the settings version. Its first
        # word is the read at start: a fleet that starts in a busy guild does not ask for every
        # message until its first heartbeat answers. Started by hand: heartbeats go to the database.
        self.lease = LeaseKeeper(self, link if link is not None else DatabaseHeartbeats(store), bot_id=bot.id,
                                 heartbeat_seconds=config.heartbeat_seconds, supervisor_id=config.supervisor_id,
                                 fencing=config.fencing, config_version=bot.version if link is not None else "",
                                 pid=self.pid)
        cache = getattr(store, "settings", None)
        if isinstance(cache, SettingsCache):  # the settings read at the start serve until they change
            cache.keep(bot)
            cache.vouches = self.lease.vouches_for
        register_commands(self)

    # ------------------------------------------------------------------ lifecycle
    async def setup_hook(self) -> None:
        await self.lease.start(initial_lease())  # may stop a bot that took long to start

    async def close(self) -> None:
        self.lease.close()
        await super().close()

    def dispatch(self, event: str, /, *args: Any, **kwargs: Any) -> None:
        """Drop events once closing has begun. discord.py's close() leaves its READY task running
        (it waits ``guild_ready_timeout`` for the guilds), and that task dispatches 'ready' on a
        client whose loop is gone: a traceback in the bot's log at every stop soon after a start."""
        if self.is_closed():
            logger.debug("Closed: dropped the %r event", event)
            return
        super().dispatch(event, *args, **kwargs)

    async def stop(self, exit_code: int | None = None) -> None:
        """Close the client; ``exit_code`` becomes the process's (None: keep it)."""
        if exit_code is not None:
            self.exit_code = exit_code
        await self.close()

    def gateway_state(self) -> tuple[int, bool]:
        """``(guild count, connected)``: what the heartbeats report."""
        return len(self.guilds), self._connected

    async def run_until_closed(self, token: str) -> None:
        """Connect and run until closed (a signal, fencing, the supervisor gone); then end the
        answers in progress while the store is still open."""
        async with self:
            try:
                await self.start(token)
            finally:
                await self.finish_answers()

    async def finish_answers(self, timeout: float = 1.5) -> None:
        """At the end: stop the answers in progress (each one stores its end) and give the
        Archivist a moment, while the bot's store is still open (within the supervisor's 3 s
        grace period before SIGKILL)."""
        from grobot.core.agents.chain import wait_for_background

        answers = [t for t in self._answers if not t.done()]
        for task in answers:
            task.cancel()
        if answers:
            await asyncio.wait(answers, timeout=timeout)
        if "grobot.core.agents.archivist" in sys.modules:
            await wait_for_background(timeout=0.5)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def on_connect(self) -> None:
        """READY (a new gateway session): the bot is online; guilds keep arriving after this."""
        assert self.user is not None
        self._connected = True
        try:
            ok = await self.store.mark_online(self.bot_id, pid=self.pid, user_id=str(self.user.id),
                                              user_name=self.user.name, guild_count=len(self.guilds),
                                              revision=self.revision)
        except Exception as exc:
            logger.warning("Could not record the online status: %s", exc if isinstance(exc, ConnectionError)
                           else type(exc).__name__)
            ok = True
        if not ok:
            logger.error("Another process is registered for this bot: stopping")
            self.exit_code = EXIT_REPLACED
            await self.close()
            return
        logger.info("Online as %s (gateway session started)", self.user.name)

    async def on_disconnect(self) -> None:
        self._connected = False

    async def on_resumed(self) -> None:
        self._connected = True

    async def on_ready(self) -> None:
        if not self._synced:
            self._synced = True
            self._spawn(self._sync_commands())

    # ------------------------------------------------------------------ roles seen (the access lists show them by name)
    async def on_guild_available(self, guild: discord.Guild) -> None:
        self._spawn(self._report_roles(guild))

    async def on_guild_join(self, guild: discord.Guild) -> None:
        self._spawn(self._report_roles(guild))

    async def on_guild_role_create(self, role: discord.Role) -> None:
        self._spawn(self._report_roles(role.guild))

    async def on_guild_role_update(self, _before: discord.Role, after: discord.Role) -> None:
        self._spawn(self._report_roles(after.guild))

    async def on_guild_role_delete(self, role: discord.Role) -> None:
        self._spawn(self._report_roles(role.guild))

    async def _report_roles(self, guild: discord.Guild) -> None:
        roles = [(str(r.id), r.name, r.position) for r in guild.roles if not r.is_default()]
        try:
            await self.store.save_roles(self.bot_id, str(guild.id), guild.name or "", roles)
        except Exception as exc:  # the names wait for the next change; access by id works meanwhile
            logger.info("Could not report the roles of guild %s: %s", guild.id, exc if isinstance(
                exc, (ConnectionError, GroBotError)) else type(exc).__name__)

    async def _sync_commands(self) -> None:
        try:
            await self.tree.sync()
        except Exception as exc:
            logger.warning("Could not register the slash commands: %s", exc)

    # ------------------------------------------------------------------ messages
    async def on_message(self, message: discord.Message) -> None:
        received = time.perf_counter()
        if self.user is None or message.author.id == self.user.id or message.author.bot:
            return
        incoming = to_incoming(message, bot_id=self.bot_id, bot_user_id=self.user.id)
        prepared = await prepare(incoming, self.deps)
        admission = admit(prepared, self.gate)
        if admission.notify:  # unreadable, over a limit, in a cooldown or busy: said at most once a window
            await self._notice(message, admission.refusal)
        if admission.admitted:
            marks = {"received": received, "config": time.perf_counter()}
            task = self._spawn(self._answer(message, prepared, admission, marks))
            self.track_answer(task, channel_id=str(message.channel.id), author_id=incoming.author_id)

    def track_answer(self, task: asyncio.Task[Any], *, channel_id: str, author_id: str) -> RunningAnswer:
        """An answer in progress: its asker stops it (/stop, 🛑), and so does the bot's shutdown."""
        self._answers.add(task)
        task.add_done_callback(self._answers.discard)
        return self.stops.add(task, channel_id=channel_id, author_id=author_id)

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        """🛑 on a streaming answer, from the user it answers, stops it."""
        if self.user is not None and payload.user_id != self.user.id:
            self.stops.stop_by_reaction(str(payload.message_id), str(payload.user_id), str(payload.emoji))

    async def _notice(self, message: discord.Message, text: str) -> None:
        try:
            await reply_to(message, text)
        except (discord.HTTPException, OSError) as exc:
            logger.warning("Could not send a notice: %s", delivery_failure(exc))
        except RuntimeError:  # aiohttp's "Session is closed": the bot is shutting down
            if not self.is_closed():
                raise
            logger.info("A notice was not sent: the bot is shutting down")

    async def _answer(self, message: discord.Message, prepared: Prepared, admission: Admission,
                      marks: dict[str, float]) -> None:
        """Answer an admitted message: its attachments, then the chain, streamed into a reply.

        An answer Discord does not take (no permission in the channel, the channel gone, its
        servers failing after discord.py's retries) is logged once and stops the run: nobody
        would see the rest, and the run's end says it was not delivered.
        """
        incoming, loaded = prepared.msg, prepared.loaded
        assert loaded is not None  # admitted
        running = self.stops.current()
        ended = False  # the run's last event has come
        chain_running = False

        def undeliverable(exc: Exception) -> None:
            logger.error("Could not deliver an answer (channel %s, user %s): %s", incoming.channel_id,
                         incoming.author_id, delivery_failure(exc))
            if chain_running and not ended and running is not None:
                running.task.cancel(UNDELIVERED)

        async def send(text: str, index: int) -> discord.Message:
            sent = await (reply_to(message, text) if index == 0 else message.channel.send(text))
            if running is not None:  # a 🛑 reaction to it stops the answer
                running.message_ids.add(str(sent.id))
            return sent

        streamer = ReplyStreamer(
            send=send,
            edit=lambda handle, text: handle.edit(content=text),
            delete=lambda handle: handle.delete(),
            interval=self.config.stream_edit_seconds,
            on_failure=undeliverable,
        )

        async def sink(event: Event) -> None:
            nonlocal ended
            if event.kind == EventKind.TOKEN:
                marks.setdefault("first_token", time.perf_counter())
                streamer.feed(str(event.data.get("text", "")))
            elif event.kind == EventKind.PROGRESS and event.data.get("acknowledgement"):
                await self._acknowledge(message, streamer, str(event.data["acknowledgement"]))
            elif event.kind == EventKind.DONE and not ended:
                ended = True
                text = event.data.get("text")
                marks["done_event"] = time.perf_counter()
                if event.data.get("moderated") == "withheld":  # the answer broke a moderation rule: nothing stays
                    await streamer.withdraw()
                else:  # (a refused answer: its draft is replaced by the refusal)
                    await streamer.finish(str(text) if text is not None else None)
                marks["completed"] = time.perf_counter()
            elif event.kind == EventKind.ERROR and not ended:
                ended = True
                if event.data.get("cancelled"):  # stopped: what was said stays, marked as stopped
                    await (streamer.finish(with_note(streamer.text, "(stopped)")) if streamer.started
                           else streamer.abort())
                else:
                    await self._send_error(streamer, public_text(event.data))

        try:
            if message.attachments:
                images = loaded.llms["output"].supports_images
                incoming.attachments = await read_attachments(message, images_allowed=images)
            async with typing(self, message.channel.id):
                tools = await self.tools_for_message(prepared.links, bot=loaded.bot)
                marks["tools"] = time.perf_counter()
                chain_running = True
                try:
                    result = await answer(prepared, admission, self.deps, sink=sink, tools=tools)
                finally:
                    chain_running = False
            if not ended:
                if result.error:
                    await self._send_error(streamer, result.public_error or result.error)
                elif result.replied and (result.text or streamer.text):
                    await streamer.finish(result.text or None)
            if result.images and not result.error and streamer.failure is None:
                await self._send_images(message, result.images)
        except Exception:
            logger.exception("Answering a message failed")
            await self._send_error(streamer, GENERIC)
        finally:
            admission.release()
            if timings_logger.isEnabledFor(logging.DEBUG):
                start = marks.pop("received")
                timings_logger.debug("message timings (ms from receipt): %s", ", ".join(
                    f"{k} {1000 * (v - start):.1f}" for k, v in sorted(marks.items(), key=lambda kv: kv[1])))

    @staticmethod
    async def _acknowledge(message: discord.Message, streamer: ReplyStreamer, text: str) -> None:
        """A short message before a slow answer ("one moment…"); Discord refusing it ends the answer's delivery too."""
        if streamer.failure is not None:
            return
        try:
            await message.channel.send(text[:2000])
        except (discord.HTTPException, OSError) as exc:
            streamer.fail(exc)

    @staticmethod
    async def _send_images(message: discord.Message, images: list[Any]) -> None:
        """The tools' images of the answer, as attachments of a reply right after it."""
        try:
            await send_images(message, images)
        except (discord.HTTPException, OSError) as exc:
            logger.error("Could not send the answer's images (channel %s): %s", message.channel.id,
                         delivery_failure(exc))

    @staticmethod
    async def _send_error(streamer: ReplyStreamer, error: str) -> None:
        """Say why the answer failed: after what was streamed, or as the reply (nothing, when Discord refused the answer)."""
        if streamer.started:
            await streamer.finish(with_note(streamer.text, f"({error[:300]})"))
        else:
            await streamer.finish(ERROR_REPLY.format(error=error[:1500]))

    async def tools_for_message(self, links: Any = None, *, bot: Any = None) -> Any:
        """The bot's tools now (an empty catalog when they cannot be read: the answer goes on);
        ``bot``: its settings as read for the message (its web tools)."""
        try:
            return await self.deps.catalog(self.bot_id, links, bot=bot)
        except Exception as exc:
            logger.warning("Tools unavailable for this message: %s", exc)
            from grobot.core.tools.base import EmptyCatalog

            return EmptyCatalog()
