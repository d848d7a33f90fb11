"""Discord specifics of a bot process: redirection, replies, typing, attachments, and the DiscordActions tools."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import discord
import yarl

from bot_worker.mapping import attachment_kind
from grobot.core.agents.types import Attachment

logger = logging.getLogger(__name__)

TYPING_EVERY = 8.0  # Discord shows "typing" for ~10 s per request
# An answer that starts within this time needs no "typing" (and costs no request of the bot's
# rate limits); a slower one shows it from then on.
TYPING_AFTER = 0.5


def redirect(api_base: str, gateway_url: str) -> None:
    """Point discord.py at ``DISCORD_API_BASE`` / ``DISCORD_GATEWAY_URL`` (a proxy, or the fake)."""
    discord.VoiceClient.warn_nacl = False  # bots never join voice: no warning about it
    discord.VoiceClient.warn_dave = False
    discord.http.Route.BASE = api_base.rstrip("/")
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


async def reply_to(message: discord.Message, text: str) -> discord.Message:
    """Reply to ``message`` without pinging its author. A message deleted meanwhile still gets
    its answer, in its channel (Discord drops the reference instead of refusing the reply)."""
    return await message.channel.send(text, reference=message.to_reference(fail_if_not_exists=False),
                                      mention_author=False)


async def send_images(message: discord.Message, images: list[Any]) -> discord.Message:
    """The images of an answer (each a :class:`~grobot.core.tools.base.ToolImage`), as attachments
    of one reply to ``message`` right after the answer (pinging nobody)."""
    files = [discord.File(io.BytesIO(image.data), filename=image.name or "image.png") for image in images]
    return await message.channel.send(files=files, reference=message.to_reference(fail_if_not_exists=False),
                                      mention_author=False)


def delivery_failure(exc: BaseException) -> str:
    """Why Discord did not take a message, in plain words for the bot's log (discord.py has
    already retried what it retries: a 429, and a 500, 502, 504 or 524 up to five times)."""
    if isinstance(exc, discord.DiscordServerError):
        return f"Discord's servers failed (HTTP {exc.status})"  # their body may be an HTML page
    if isinstance(exc, discord.HTTPException):
        said = f"HTTP {exc.status}" + (f", code {exc.code}" if exc.code else "")
        text = " ".join(str(exc.text).split())[:200]  # e.g. "Missing Permissions"
        said += f": {text}" if text else ""
        if isinstance(exc, discord.Forbidden):
            return f"Discord refused it: the bot lacks a permission in this channel ({said})"
        if isinstance(exc, discord.NotFound):
            return f"the channel or the message is gone ({said})"
        return f"Discord refused it ({said})"
    if isinstance(exc, (OSError, aiohttp.ClientError)):
        return f"Discord could not be reached ({type(exc).__name__})"
    return f"an unexpected error ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"


def build_intents(*, message_content: bool, members: bool) -> discord.Intents:
    """Guilds, guild messages, DMs and their reactions, plus the privileged intents the bot is configured for."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = True
    intents.guild_reactions = True  # a 🛑 reaction stops an answer
    intents.dm_reactions = True
    intents.message_content = message_content
    intents.members = members
    return intents


@contextlib.asynccontextmanager
async def typing(client: discord.Client, channel_id: int, *, after: float = TYPING_AFTER) -> AsyncIterator[None]:
    """Show "typing" in a channel while the block runs, once it has run ``after`` seconds
    (without delaying the block)."""

    async def loop() -> None:
        await asyncio.sleep(after)
        while True:
            try:
                await client.http.send_typing(channel_id)
            except (discord.HTTPException, OSError) as exc:
                logger.debug("typing failed: %s", exc)
            await asyncio.sleep(TYPING_EVERY)

    task = asyncio.get_running_loop().create_task(loop())
    try:
        yield
    finally:
        task.cancel()


async def read_attachments(message: discord.Message, *, images_allowed: bool) -> list[Attachment]:
    """Text attachments decoded into the context; images as base64 when the output model takes images."""
    out: list[Attachment] = []
    for item in message.attachments:
        kind = attachment_kind(item.filename, item.content_type, item.size)
        att = Attachment(filename=item.filename, content_type=item.content_type or "application/octet-stream",
                         size=item.size, url=item.url)
        try:
            if kind == "text":
                att.text = (await item.read()).decode("utf-8", errors="replace")
            elif kind == "image" and images_allowed:
                att.image_base64 = base64.b64encode(await item.read()).decode()
        except (discord.HTTPException, OSError) as exc:
            logger.warning("Could not read an attachment (%s): %s", kind, type(exc).__name__)
        out.append(att)
    return out


class BotDiscordActions:
    """The :class:`grobot.core.tools.base.DiscordActions` of one bot process."""

    def __init__(self, client: discord.Client) -> None:
        self.client = client

    async def _channel(self, channel_id: str) -> Any:
        channel = self.client.get_channel(int(channel_id))
        if channel is None:
            channel = await self.client.fetch_channel(int(channel_id))
        return channel

    async def react(self, channel_id: str, message_id: str, emoji: str) -> None:
        await self.client.http.add_reaction(int(channel_id), int(message_id), emoji)

    async def reply_in_thread(self, channel_id: str, message_id: str, text: str, *, thread_name: str | None = None) -> str:
        channel = await self._channel(channel_id)
        if isinstance(channel, discord.Thread):
            thread = channel
        else:
            partial = channel.get_partial_message(int(message_id))
            thread = await partial.create_thread(name=(thread_name or "Answer")[:100])
        from bot_worker.text import split_message

        for part in split_message(text):
            await thread.send(part)
        return str(thread.id)

    async def recent_messages(self, channel_id: str, *, limit: int = 20) -> list[dict[str, Any]]:
        channel = await self._channel(channel_id)
        rows = [m async for m in channel.history(limit=max(1, min(limit, 100)))]
        return [{"id": str(m.id), "author": m.author.display_name, "content": m.content,
                 "created_at": m.created_at.isoformat()} for m in reversed(rows)]
