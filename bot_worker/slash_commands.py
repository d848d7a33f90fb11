"""The bot's slash commands: ``/reset``, ``/stop``, ``/ask`` and ``/council`` (Discord glue: what a
command answers comes from :mod:`grobot.core.answering` and the bot's store)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot_worker.discord_io import delivery_failure
from bot_worker.mapping import parent_channel_id, role_ids
from bot_worker.text import ERROR_REPLY, NOT_ANSWERED, public_text, split_message, with_note
from grobot.core.agents.types import Event, EventKind, IncomingMessage
from grobot.core.answering import answer_message
from grobot.core.errors import GroBotError
from grobot.core.llm.public_errors import GENERIC

if TYPE_CHECKING:
    from bot_worker.fleet_bot import FleetBot

logger = logging.getLogger(__name__)


def register_commands(bot: FleetBot) -> None:
    """Add the commands to ``bot``'s command tree (synced when it is ready)."""

    @bot.tree.command(name="reset", description="Forget our conversation in this channel")
    async def reset(interaction: discord.Interaction) -> None:
        key = interaction_key(interaction)
        try:
            removed = await bot.store.forget(bot.bot_id, key, str(interaction.user.id))
            text = "Done: I forgot our conversation here." if removed else "There was nothing to forget here."
        except Exception as exc:
            logger.error("/reset failed: %s", exc if isinstance(exc, (ConnectionError, GroBotError))
                         else type(exc).__name__)
            text = "Sorry, I could not reset the conversation right now."
        await interaction.response.send_message(text, ephemeral=True)

    @bot.tree.command(name="stop", description="Stop my answer to you in this channel")
    async def stop(interaction: discord.Interaction) -> None:
        stopped = bot.stops.stop_asked(str(interaction.channel_id), str(interaction.user.id),
                                        f"stopped by {interaction.user.display_name} with /stop")
        await interaction.response.send_message("Stopped." if stopped else "I'm not answering you here right now.",
                                                ephemeral=True)

    @bot.tree.command(name="ask", description="Ask me privately: only you see the answer")
    @app_commands.describe(question="What do you want to ask?")
    async def ask(interaction: discord.Interaction, question: str) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        task = asyncio.current_task()
        if task is not None:  # /stop (and the bot's shutdown) stops it like any answer
            bot.track_answer(task, channel_id=str(interaction.channel_id), author_id=str(interaction.user.id))
        text = await ask_privately(bot, interaction, question)
        await send_privately(interaction, text)

    @bot.tree.command(name="council", description="Put a question to my advisory council")
    @app_commands.describe(question="What should the council deliberate on?")
    async def council(interaction: discord.Interaction, question: str) -> None:
        from bot_worker.council_command import answer_council

        await answer_council(bot.store, bot.bot_id, interaction, question, gate=bot.gate, stops=bot.stops,
                             incoming=command_message(bot.bot_id, interaction, question,
                                                      key=f"council:{interaction.user.id}"))


async def ask_privately(bot: FleetBot, interaction: discord.Interaction, question: str) -> str:
    """``/ask``: the question goes the way of a message that mentions the bot (reply rules,
    limits, cooldown, runs at once, then the chain); what the asker is told, privately."""
    incoming = command_message(bot.bot_id, interaction, question, key=f"ask:{interaction.user.id}")
    said: list[str] = []  # the answer as it streams
    final: dict[str, str] = {}

    async def sink(event: Event) -> None:
        if event.kind == EventKind.TOKEN:
            said.append(str(event.data.get("text", "")))
        elif event.kind == EventKind.DONE:
            final["text"] = str(event.data.get("text", ""))
        elif event.kind == EventKind.ERROR and not event.data.get("cancelled"):
            final["error"] = public_text(event.data)

    try:
        result = await answer_message(incoming, bot.deps, bot.gate, sink=sink)  # the chain reads the tools
    except asyncio.CancelledError:  # /stop: what was said so far, marked as stopped
        await send_privately(interaction, with_note("".join(said), "(stopped)") if said else "(stopped)")
        raise
    except Exception:
        logger.exception("/ask failed")
        return ERROR_REPLY.format(error=GENERIC)
    text = result.refusal or final.get("text") or result.text
    error = final.get("error") or result.public_error or result.error
    if error and not text:
        return ERROR_REPLY.format(error=error[:1500])
    return text or NOT_ANSWERED


async def send_privately(interaction: discord.Interaction, text: str) -> None:
    """Follow a deferred command up with ``text``, seen by its user only."""
    try:
        for part in split_message(text):
            await interaction.followup.send(part, ephemeral=True)
    except Exception as exc:  # refused, unreachable, or the client closing (the bot stops)
        logger.warning("Could not answer /%s: %s", getattr(interaction.command, "name", "?"), delivery_failure(exc))


def command_message(bot_id: int, interaction: discord.Interaction, text: str, *, key: str) -> IncomingMessage:
    """A slash command as a message to the bot (its checks and its run)."""
    return IncomingMessage(
        bot_id=bot_id, conversation_key=key, content=text,
        author_id=str(interaction.user.id), author_name=interaction.user.display_name,
        author_role_ids=role_ids(interaction.user) if interaction.guild_id else [],
        guild_id=str(interaction.guild_id) if interaction.guild_id else None,
        guild_name=interaction.guild.name if interaction.guild else None,
        channel_id=str(interaction.channel_id) if interaction.channel_id else None,
        channel_name=getattr(interaction.channel, "name", None), is_dm=interaction.guild_id is None,
        parent_channel_id=parent_channel_id(interaction.channel) if interaction.guild_id else None,
        mentions_bot=True,  # a command is addressed to the bot, as a mention is
    )


def interaction_key(interaction: discord.Interaction) -> str:
    """The conversation a command belongs to (as :func:`bot_worker.mapping.to_incoming` keys messages)."""
    channel = interaction.channel
    if interaction.guild_id is None:
        return f"dm:{interaction.channel_id}"
    if isinstance(channel, discord.Thread):
        return f"thread:{channel.id}"
    return f"guild:{interaction.channel_id}"
