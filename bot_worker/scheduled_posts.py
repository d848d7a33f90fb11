"""Scheduled posts in the worker: any live supervisor claims the due runs and posts them itself.

Every ``GROBOT_SCHEDULE_POLL_SECONDS`` each supervisor claims the runs due
(:func:`grobot.core.services.schedules.claim_due`: once across supervisors, held until the post is
confirmed) and posts each one through Discord's REST API with the bot's token (discord.py's HTTP
client, one per bot), without waiting for the bot's process: a fixed text as it is, a prompt answered
here through the one entry point of every message (prepare -> admit -> answer), as Test Chat runs
the chain in the supervisor. Each message carries a nonce derived from the run (``enforce_nonce``):
a run taken again after its supervisor died is not posted twice. Before it answers a prompt and again
before it posts, the poster checks that it still holds the run's claim and that the bot and the
schedule are still enabled (:func:`grobot.core.services.schedules.hold_run`): a supervisor that stalled
past its claim leaves the run to the one that took it, a run of a bot disabled since is skipped. Each
run is a line in the bot's Logs.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import discord
from discord.http import HTTPClient, handle_message_parameters

from grobot.core.agents.deps import ChainDeps
from grobot.core.services.schedules import ScheduledRun

logger = logging.getLogger(__name__)

Write = Callable[..., Awaitable[Any]]
UNCHECKED = "unchecked"  # the check before a post could not be made (the database): left to its claim's expiry


class SchedulePoster:
    """The supervisor's end: post the runs it claimed, keep its claims while it works, confirm them."""

    def __init__(self, owner: str, deps: ChainDeps, write: Write, *, claim_seconds: float) -> None:
        self.owner = owner
        self.deps = deps
        self.write = write  # runs a service function in a write session off the event loop
        self.claim_seconds = claim_seconds
        self.running: dict[int, asyncio.Task[None]] = {}  # by run id
        self._claimed: dict[int, float] = {}  # by run id: when this supervisor claimed it (monotonic)
        self.finished: list[tuple[ScheduledRun, str]] = []  # posted (or failed for good), to confirm
        self._renewed = 0.0
        self._clients: dict[int, tuple[str, HTTPClient]] = {}  # by bot id: its token, its client
        # The checks before an answer or a post (hold_run), made together for the runs that ask at once.
        self._holds: list[tuple[ScheduledRun, bool, str | None, asyncio.Future[str | None]]] = []
        self._holding: asyncio.Task[None] | None = None
        from bot_worker.discord_io import redirect
        from grobot.core.settings import get_settings

        settings = get_settings()
        redirect(settings.discord_api_base, settings.discord_gateway_url)  # a proxy, or the fake

    def start(self, run: ScheduledRun) -> None:
        """Post ``run`` in its own task (a run already being posted here is left to that task)."""
        if run.run_id not in self.running:
            self._claimed[run.run_id] = time.monotonic()  # claimed just now
            if not self.running:
                self._renewed = time.monotonic()
            task = asyncio.get_running_loop().create_task(self._run(run), name=f"scheduled-post-{run.run_id}")
            self.running[run.run_id] = task
            task.add_done_callback(functools.partial(self._ended, run.run_id))

    def _ended(self, run_id: int, _task: asyncio.Task[None]) -> None:
        self.running.pop(run_id, None)
        self._claimed.pop(run_id, None)

    def _fresh(self, run: ScheduledRun) -> bool:
        """Claimed so recently that the claim's own check still holds: no other supervisor can have taken it
        (its claim has not expired), the bot and the schedule were enabled a moment ago. A supervisor that
        stalled since is past this (the monotonic clock counts a SIGSTOP)."""
        return time.monotonic() - self._claimed.get(run.run_id, float("-inf")) < self.claim_seconds / 2

    async def _run(self, run: ScheduledRun) -> None:
        status = await self.post(run)
        if status is not None:  # None: another supervisor took the run, it confirms it
            self.finished.append((run, status))

    async def keep(self, renew_after: float) -> None:
        """Confirm the runs posted since the last call (one write for all), and renew the claims on the
        runs still being posted when the last renewal is older than ``renew_after`` seconds."""
        from grobot.core.services import schedules

        done, self.finished = self.finished, []
        if done:
            try:
                await self.write(schedules.finish_runs, done, self.owner)
            except Exception:
                self.finished = done + self.finished  # confirmed next time (or taken again, same nonce)
                raise
        if self.running and time.monotonic() - self._renewed > renew_after:
            await self.write(schedules.renew_claims, self.owner, list(self.running), self.claim_seconds)
            self._renewed = time.monotonic()

    async def post(self, run: ScheduledRun) -> str | None:
        """Post one run; what happened, in a few words (also a line of the bot's Logs); None when another
        supervisor took the run meanwhile (this one stalled past its claim): nothing posted from here."""
        label = f"Scheduled post {run.schedule_id}" + (f" ({run.name})" if run.name else "")
        try:
            if not run.token:
                raise LookupError("the bot has no Discord token")
            http = await self._client(run.bot_id, run.token)
            if run.kind == "prompt":
                if run.answer is None and not self._fresh(run) and (why := await self._hold(run)) is not None:
                    return self._not_posted(run, label, why)
                text = run.answer if run.answer is not None else await self.answer(run, http)
                if not text:
                    logger.warning("%s: the bot gave no answer to its prompt; nothing posted", label,
                                   extra={"bot_id": run.bot_id})
                    return "no answer: nothing posted"
            else:
                text = run.content
            # A fixed text goes out right after its claim (its check); a prompt's answer, or a post after a
            # stall, is checked again (and marked as begun, its answer kept) first.
            if (run.kind == "prompt" or not self._fresh(run)) and \
                    (why := await self._hold(run, sending=True, answer=text if run.kind == "prompt" else None)) is not None:
                return self._not_posted(run, label, why)
            await self.send(http, run, text)
        except Exception as exc:
            from bot_worker.discord_io import delivery_failure

            why = (delivery_failure(exc) if isinstance(exc, discord.HTTPException)
                   else "Discord refused the bot's token" if isinstance(exc, discord.LoginFailure)
                   else str(exc) if isinstance(exc, LookupError) else type(exc).__name__)
            logger.error("%s: could not post in channel %s: %s", label, run.channel_id, why,
                         extra={"bot_id": run.bot_id})
            return f"not posted: {why}"[:200]
        logger.info("%s: posted in channel %s (%d characters)", label, run.channel_id, len(text),
                    extra={"bot_id": run.bot_id})
        return "posted"

    async def _hold(self, run: ScheduledRun, *, sending: bool = False, answer: str | None = None) -> str | None:
        """Whether this supervisor may go on with ``run`` (None) or why not (its claim renewed, or marked as
        being posted with its answer kept: :func:`~grobot.core.services.schedules.hold_run`), checked in one
        write with the other runs asking at the same time."""
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._holds.append((run, sending, answer, future))
        if self._holding is None or self._holding.done():
            self._holding = asyncio.get_running_loop().create_task(self._hold_all(), name="scheduled-post-checks")
        return await future

    async def _hold_all(self) -> None:
        from grobot.core.services import schedules

        while self._holds:
            batch, self._holds = self._holds, []
            try:
                results = await self.write(schedules.hold_runs, self.owner, [(r, s, a) for r, s, a, _ in batch],
                                           self.claim_seconds)
            except Exception as exc:  # the run stays claimed: taken again (same nonce) once its claim expires
                logger.warning("Could not check %d scheduled post(s) before posting them (%s); they are taken "
                               "again shortly", len(batch), type(exc).__name__)
                results = [UNCHECKED] * len(batch)
            for (*_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)

    def _not_posted(self, run: ScheduledRun, label: str, why: str) -> str | None:
        """The run is not posted from here: taken by another supervisor (None), or skipped (its status)."""
        from grobot.core.services import schedules

        if why == UNCHECKED:
            return None
        if why == schedules.TAKEN:
            logger.warning("%s: this worker stalled past its claim and another one took the run; not posted "
                           "from here", label, extra={"bot_id": run.bot_id})
            return None
        logger.warning("%s: not posted: %s", label, why,
                       extra={} if why == "the bot was deleted" else {"bot_id": run.bot_id})
        return f"skipped: {why}"

    async def _client(self, bot_id: int, token: str) -> HTTPClient:
        """The bot's REST client (signed in once; again when its token changed)."""
        known = self._clients.get(bot_id)
        if known is not None and known[0] == token:
            return known[1]
        if known is not None:
            await known[1].close()
        http = HTTPClient(asyncio.get_running_loop())
        self._clients[bot_id] = (token, http)
        try:
            await http.static_login(token)
        except Exception:
            self._clients.pop(bot_id, None)
            await http.close()
            raise
        return http

    @staticmethod
    async def send(http: HTTPClient, run: ScheduledRun, text: str) -> None:
        """As any answer: within Discord's length, in as many messages as it takes, pinging nobody;
        each part with its nonce (Discord returns the part already made instead of a second one)."""
        from bot_worker.text import split_message

        for index, part in enumerate(split_message(text)):
            with handle_message_parameters(content=part, nonce=run.nonce(index),
                                           allowed_mentions=discord.AllowedMentions.none()) as params:
                await http.send_message(int(run.channel_id), params=params)

    async def answer(self, run: ScheduledRun, http: HTTPClient) -> str:
        """The bot's answer to a schedule's prompt, through the chain with its tools (as any message),
        kept with the run as its post begins, so that a run taken again posts the same words."""
        from grobot.core.agents.types import IncomingMessage
        from grobot.core.answering import FloodGate, admit, answer, prepare

        try:
            channel = await http.get_channel(int(run.channel_id))
        except discord.NotFound:
            raise LookupError(f"the bot cannot see channel {run.channel_id}") from None
        guild_id, name = channel.get("guild_id"), channel.get("name")
        msg = IncomingMessage(bot_id=run.bot_id, conversation_key=f"guild:{run.channel_id}",
                              content=run.content, author_id="", author_name="Schedule", platform="schedule",
                              guild_id=str(guild_id) if guild_id else None, channel_id=run.channel_id,
                              channel_name=str(name) if name else None)
        prepared = await prepare(msg, self.deps)
        admission = admit(prepared, FloodGate())  # not counted in the users' cooldowns
        if not admission.admitted:
            raise LookupError(admission.refusal or "the bot's settings could not be read")
        result = await answer(prepared, admission, self.deps)
        if result.error:
            raise LookupError(result.public_error or "the answer failed")
        return str(result.text or "").strip()  # kept with the run as its post begins (hold_run)

    async def close(self, grace: float = 5.0) -> None:
        """Let the posts under way end (a run cut short is taken again once its claim expires), then
        sign the REST clients out."""
        if self.running:
            await asyncio.wait(list(self.running.values()), timeout=grace)
        for task in list(self.running.values()):
            task.cancel()
        try:
            await self.keep(renew_after=float("inf"))
        except Exception as exc:
            logger.warning("Could not record the scheduled posts made (%s)", type(exc).__name__)
        for _, http in self._clients.values():
            await http.close()
        self._clients.clear()
