"""The bot's slash commands: ``/reset``, ``/stop``, ``/ask`` and ``/council`` (Discord glue: what a
command answers comes from :mod:`grobot.core.answering` and the bot's store)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import discord
from discord import app_commands

from bot_worker.text import ERROR_REPLY, public_text, split_message
from grobot.core.agents.types import Event, EventKind, IncomingMessage
from grobot.core.answering import answer_message
from grobot.core.errors import GroBotError
from grobot.core.public_errors import GENERIC

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
        incoming = command_message(bot.bot_id, interaction, question, key=f"ask:{interaction.user.id}")
        final: dict[str, str] = {}

        async def sink(event: Event) -> None:
            if event.kind == EventKind.DONE:
                final["text"] = str(event.data.get("text", ""))
            elif event.kind == EventKind.ERROR:
                final["error"] = public_text(event.data)

        try:
            # The reply rules are for messages in channels: an explicit /ask is answered,
            # within the limits, cooldown and runs at once like any message.
            result = await answer_message(incoming, bot.deps, bot.gate, sink=sink, tools=await bot.tools_for_message(),
                                          decision=True)
            text = result.refusal or final.get("text") or result.text
            error = final.get("error") or result.public_error or result.error
        except Exception:
            logger.exception("/ask failed")
            text, error = "", GENERIC
        if error and not text:
            text = ERROR_REPLY.format(error=error[:1500])
        for part in split_message(text or "(no answer)"):
            await interaction.followup.send(part, ephemeral=True)

    @bot.tree.command(name="council", description="Put a question to my advisory council")
    @app_commands.describe(question="What should the council deliberate on?")
    async def council(interaction: discord.Interaction, question: str) -> None:
        from bot_worker.council_command import answer_council

        await answer_council(bot.store, bot.bot_id, interaction, question, gate=bot.gate, stops=bot.stops,
                             incoming=command_message(bot.bot_id, interaction, question,
                                                      key=f"council:{interaction.user.id}"))


def command_message(bot_id: int, interaction: discord.Interaction, text: str, *, key: str) -> IncomingMessage:
    """A slash command as a message to the bot (its checks and its run)."""
    return IncomingMessage(
        bot_id=bot_id, conversation_key=key, content=text,
        author_id=str(interaction.user.id), author_name=interaction.user.display_name,
        guild_id=str(interaction.guild_id) if interaction.guild_id else None,
        guild_name=interaction.guild.name if interaction.guild else None,
        channel_id=str(interaction.channel_id) if interaction.channel_id else None,
        channel_name=getattr(interaction.channel, "name", None), is_dm=interaction.guild_id is None,
        mentions_bot=True,
    )


def interaction_key(interaction: discord.Interaction) -> str:
    """The conversation a command belongs to (as :func:`bot_worker.mapping.to_incoming` keys messages)."""
    channel = interaction.channel
    if interaction.guild_id is None:
        return f"dm:{interaction.channel_id}"
    if isinstance(channel, discord.Thread):
        return f"thread:{channel.id}"
    return f"guild:{interaction.channel_id}"
