"""Scheduled posts in the worker: the supervisor claims its bots' due runs, each bot process posts its own.

The supervisor holding a bot's lease claims the bot's due runs every ``GROBOT_SCHEDULE_POLL_SECONDS``
(:func:`grobot.core.services.schedules.claim_due`: once across supervisors) and puts them in its
:class:`PostBox`. The bot process, which holds the Discord connection, waits for them over the bot link
(``posts``: a request the supervisor answers as soon as a run is there, or empty after a while) and posts
each one as an ordinary message (:class:`SchedulePoster`): a fixed text as it is, a prompt answered
through the one entry point of every message (prepare -> admit -> answer). With its next request it
reports how each run went; the supervisor writes it with the schedule. Each run is a line in the bot's Logs.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import discord

    from bot_worker.bot_link import BotLinkClient
    from grobot.core.services.schedules import ScheduledRun

logger = logging.getLogger(__name__)

WAIT_SECONDS = 20.0  # a bot's request for posts is answered within this, empty when none came
MAX_WAITING = 100  # runs kept for one bot process that does not take them
PATH = "posts"


class PostBox:
    """The claimed runs waiting for their bot process to take them (on the supervisor's event loop)."""

    def __init__(self) -> None:
        self._runs: dict[int, list[ScheduledRun]] = defaultdict(list)
        self._waiters: dict[int, asyncio.Event] = defaultdict(asyncio.Event)

    def put(self, run: ScheduledRun) -> None:
        runs = self._runs[run.bot_id]
        runs.append(run)
        if len(runs) > MAX_WAITING:  # a bot that stays offline: its oldest runs go (each would be stale)
            _skip(runs.pop(0), "too many runs were waiting for it")
        self._waiters[run.bot_id].set()

    def pending(self, bot_id: int) -> int:
        return len(self._runs.get(bot_id, ()))

    async def take(self, bot_id: int, *, wait: float = WAIT_SECONDS) -> list[ScheduledRun]:
        """The runs of ``bot_id`` (waiting up to ``wait`` seconds for one)."""
        event = self._waiters[bot_id]
        if not self._runs.get(bot_id):
            event.clear()
            try:
                await asyncio.wait_for(event.wait(), timeout=wait)
            except TimeoutError:
                return []
        runs, self._runs[bot_id] = self._runs.get(bot_id, []), []
        now = datetime.now(UTC)
        fresh = [run for run in runs if (now - run.due_at).total_seconds() <= run.grace_seconds]
        for run in runs:
            if run not in fresh:
                _skip(run, "its bot was not online within the schedule's grace time")
        return fresh


def _skip(run: ScheduledRun, why: str) -> None:
    logger.warning("Scheduled post %s%s, due %s: not posted, %s", run.schedule_id, f" ({run.name})" if run.name else "",
                   run.due_at.strftime("%Y-%m-%d %H:%M:%S UTC"), why, extra={"bot_id": run.bot_id})


def run_as_dict(run: ScheduledRun) -> dict[str, Any]:
    return {"schedule_id": run.schedule_id, "name": run.name, "channel_id": run.channel_id, "kind": run.kind,
            "content": run.content, "due_at": run.due_at.isoformat()}


class SchedulePoster:
    """The bot process's end: wait for the runs its supervisor claimed, post each one."""

    def __init__(self, client: Any, link: BotLinkClient, *, wait: float = WAIT_SECONDS) -> None:
        self.client = client  # the FleetBot
        self.link = link
        self.wait = wait
        self._done: list[dict[str, Any]] = []

    async def loop(self) -> None:
        """Until the client closes: ask for runs, post them (one after the other, in their order)."""
        failures = 0
        while not self.client.is_closed():
            done, self._done = self._done, []
            try:
                status, data = await self.link.call(self.client.bot_id, PATH, {"wait": self.wait, "done": done},
                                                    timeout=self.wait + 10)
                if status != 200:
                    raise ConnectionError(str(data.get("error") or status))
                failures = 0
            except (ConnectionError, OSError) as exc:
                if self.client.is_closed():  # the bot is stopping: its link went first
                    return
                self._done = done + self._done  # reported next time
                failures += 1
                if failures == 1:
                    logger.warning("Could not ask the supervisor for scheduled posts (%s); retrying", exc)
                await asyncio.sleep(min(5.0, 0.5 * failures))
                continue
            for run in data.get("result") or []:
                status_line = await self.post(run)
                self._done.append({"schedule_id": run["schedule_id"], "status": status_line})

    async def post(self, run: dict[str, Any]) -> str:
        """Post one run; what happened, in a few words (also a line of the bot's Logs)."""
        label = f"Scheduled post {run['schedule_id']}" + (f" ({run['name']})" if run.get("name") else "")
        try:
            channel = await self._channel(str(run["channel_id"]))
            if run["kind"] == "prompt":
                text = await self.answer(run, channel)
                if not text:
                    logger.warning("%s: the bot gave no answer to its prompt; nothing posted", label)
                    return "no answer: nothing posted"
            else:
                text = str(run["content"])
            await self.send(channel, text)
        except Exception as exc:
            from bot_worker.discord_io import delivery_failure

            why = delivery_failure(exc) if _is_discord_error(exc) else (str(exc) if isinstance(exc, LookupError)
                                                                        else type(exc).__name__)
            logger.error("%s: could not post in channel %s: %s", label, run["channel_id"], why)
            return f"not posted: {why}"[:200]
        logger.info("%s: posted in channel %s (%d characters)", label, run["channel_id"], len(text))
        return "posted"

    async def _channel(self, channel_id: str) -> Any:
        import discord

        channel = self.client.get_channel(int(channel_id))
        if channel is None:
            try:
                channel = await self.client.fetch_channel(int(channel_id))
            except discord.NotFound:
                raise LookupError(f"the bot cannot see channel {channel_id}") from None
        return channel

    @staticmethod
    async def send(channel: discord.abc.Messageable, text: str) -> None:
        """As any answer: within Discord's length, in as many messages as it takes."""
        from bot_worker.text import split_message

        for part in split_message(text):
            await channel.send(part)

    async def answer(self, run: dict[str, Any], channel: Any) -> str:
        """The bot's answer to a schedule's prompt, through the chain with its tools (as any message)."""
        from grobot.core.agents.types import IncomingMessage
        from grobot.core.answering import FloodGate, admit, answer, prepare

        guild = getattr(channel, "guild", None)
        msg = IncomingMessage(bot_id=self.client.bot_id, conversation_key=f"guild:{channel.id}",
                              content=str(run["content"]), author_id="", author_name="Schedule",
                              platform="schedule", guild_id=str(guild.id) if guild else None,
                              guild_name=getattr(guild, "name", None), channel_id=str(channel.id),
                              channel_name=getattr(channel, "name", None))
        prepared = await prepare(msg, self.client.deps)
        admission = admit(prepared, FloodGate())  # not counted in the users' cooldowns
        if not admission.admitted:
            raise LookupError(admission.refusal or "the bot's settings could not be read")
        loaded = prepared.loaded
        tools = await self.client.tools_for_message(prepared.links, bot=loaded.bot if loaded else None)
        result = await answer(prepared, admission, self.client.deps, tools=tools)
        if result.error:
            raise LookupError(result.public_error or "the answer failed")
        return str(result.text or "").strip()


def _is_discord_error(exc: BaseException) -> bool:
    import discord

    return isinstance(exc, discord.HTTPException)
