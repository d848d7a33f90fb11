"""``/council QUESTION`` on Discord: the bot's advisory council answers in the channel as its advisors finish.

The command is acknowledged at once ("thinking"); each advisor's section is sent as soon as
that advisor has answered (in finishing order), then the synthesis; every part is split to
Discord's 2000 characters. The deliberation is stored through the bot's store.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import discord

from bot_worker.run_stops import RunStops
from bot_worker.text import NOT_ANSWERED, split_message
from grobot.core.agents.reply_rules import silence_reason
from grobot.core.agents.types import IncomingMessage, ReplyRules
from grobot.core.answering import FloodGate, Prepared, admit
from grobot.core.errors import GroBotError

logger = logging.getLogger(__name__)

PLAN_TIMEOUT_SECONDS = 2.0  # Discord wants an answer to an interaction within 3 s
QUESTION_SHOWN_CHARS = 300
UNREADABLE = "Sorry, the council cannot meet right now; please try again shortly."


def _quote(question: str) -> str:
    shown = " ".join(question.split())
    shown = shown if len(shown) <= QUESTION_SHOWN_CHARS else shown[:QUESTION_SHOWN_CHARS - 1] + "…"
    return f"> {shown}"


async def answer_council(store: Any, bot_id: int, interaction: discord.Interaction, question: str, *,
                         incoming: IncomingMessage | None = None, gate: FloodGate | None = None,
                         stops: RunStops | None = None) -> None:
    """Run the council of ``bot_id`` on ``question`` and answer ``interaction`` (``store``: the bot's store).

    ``incoming`` and ``gate``: the command as a message, and the bot's flood state: a deliberation
    takes the way of a message that mentions the bot (:mod:`grobot.core.answering`: prepared, then
    admitted by the reply rules, limits, cooldown and runs at once) and counts as one run of the
    asker. ``stops``: the bot's answers in progress (the asker stops the council with /stop or a 🛑
    on a section).
    """
    from grobot.core.agents.council import CouncilError, check_plan

    question = question.strip()
    try:
        if not question:
            raise CouncilError("ask the council a question: /council QUESTION")
        plan, prepared = await _read(store, bot_id, interaction, incoming if gate is not None else None)
        check_plan(plan)
    except CouncilError as exc:
        await interaction.response.send_message(f"Sorry: {str(exc).rstrip('.')}.", ephemeral=True)
        return
    except _Unreadable:
        await interaction.response.send_message(UNREADABLE, ephemeral=True)
        return
    admission = None
    if prepared is not None and prepared.loaded is not None:  # the channel's persona, as a plain answer there
        plan = plan.in_channel(prepared.loaded.llms, prepared.loaded.bot.channel_personality)
    if prepared is not None and gate is not None:
        admission = admit(prepared, gate)
        prepared.discard()  # the council needs none of the chain's lookups
        if not admission.admitted:  # e.g. a channel the bot does not answer in: the asker alone is told
            said = admission.refusal or (NOT_ANSWERED if admission.moderated  # the moderation ignores it
                                         else silence_reason(prepared.rules or ReplyRules(), prepared.msg))
            await interaction.response.send_message(said, ephemeral=True)
            return
    task = asyncio.current_task()
    running = (stops.add(task, channel_id=str(interaction.channel_id), author_id=str(interaction.user.id))
               if stops is not None and task is not None else None)
    try:
        await _deliberate(store, plan, interaction, question, running)
    finally:
        if admission is not None:
            admission.release()


class _Unreadable(Exception):
    """The council or the bot could not be read in time (logged where it happened)."""


async def _read(store: Any, bot_id: int, interaction: discord.Interaction, incoming: IncomingMessage | None
                ) -> tuple[Any, Prepared | None]:
    """The council's plan and, for ``incoming``, the command as :func:`~grobot.core.answering.prepare`
    reads a message: side by side, within :data:`PLAN_TIMEOUT_SECONDS` together (Discord wants the
    interaction answered within 3 s)."""
    from grobot.core.agents.council import CouncilError

    reads = [store.council_plan(bot_id, str(interaction.user.id))]
    if incoming is not None:
        reads.append(store.prepare(incoming))
    try:
        results = await asyncio.wait_for(asyncio.gather(*reads, return_exceptions=True), PLAN_TIMEOUT_SECONDS)
    except TimeoutError:
        logger.error("/council could not read the council and the bot within %.0f s", PLAN_TIMEOUT_SECONDS)
        raise _Unreadable from None
    plan, prepared = (*results, None)[:2]
    if isinstance(plan, CouncilError):  # e.g. no such bot: said as it is
        raise plan
    if isinstance(plan, Exception):
        logger.error("/council could not read the council: %s",
                     plan if isinstance(plan, (ConnectionError, GroBotError)) else type(plan).__name__)
        raise _Unreadable from plan
    if isinstance(prepared, BaseException) or (isinstance(prepared, Prepared) and prepared.unreadable):
        why = prepared if isinstance(prepared, (ConnectionError, GroBotError)) else type(prepared).__name__ \
            if isinstance(prepared, BaseException) else prepared.unreadable if prepared is not None else ""
        logger.error("/council could not read the bot: %s", why)
        raise _Unreadable
    return plan, prepared if isinstance(prepared, Prepared) else None


async def _deliberate(store: Any, plan: Any, interaction: discord.Interaction, question: str, running: Any) -> None:
    """Defer, then send each advisor's section as it comes, the synthesis, and store the deliberation (as it
    runs, too: the Council tab follows it)."""
    from grobot.core.agents.council import StoredProgress, deliberate

    bot_id = plan.bot_id
    await interaction.response.defer(thinking=True)
    first = True

    async def send(text: str) -> None:
        for part in split_message(text):
            sent = await interaction.followup.send(part, allowed_mentions=discord.AllowedMentions.none(), wait=True)
            if running is not None:  # a 🛑 reaction to a section stops the council
                running.message_ids.add(str(sent.id))

    async def shown(answer: Any) -> None:
        nonlocal first
        text = answer.section(public=True)  # a failure in plain words: not the provider's reply or address
        if first:  # the first part replaces "thinking": it says what was asked
            text, first = f"{_quote(question)}\n\n{text}", False
        try:
            await send(text)
        except discord.HTTPException as exc:
            logger.warning("Could not send the section of advisor %s: %s", answer.name, exc)

    records: list[Any] = []  # the LLM calls as they end: a stopped council still accounts for them
    stored = StoredProgress(store, bot_id, asked_by=interaction.user.display_name, platform="discord")
    try:
        result = await deliberate(plan, question, on_advisor=shown, records=records, on_progress=stored)
        await send(result.synthesis(public=True))
    except asyncio.CancelledError as exc:
        await asyncio.shield(stored.drop())
        if records:
            try:
                await asyncio.shield(store.save_calls(bot_id, None, list(records)))
            except Exception as save_error:
                logger.warning("Could not store the LLM calls of a stopped council: %s", type(save_error).__name__)
        reason = exc.args[0] if exc.args and isinstance(exc.args[0], str) else "stopped"
        try:
            await interaction.followup.send(f"_The council was stopped ({reason}) before its synthesis._",
                                            allowed_mentions=discord.AllowedMentions.none())
        except discord.HTTPException:
            pass
        raise
    except Exception:
        logger.exception("/council failed")
        await stored.drop()
        try:
            await interaction.followup.send("Sorry, the council could not finish; an admin can see why in the bot's logs.")
        except discord.HTTPException:
            pass
        return
    try:
        await stored.finish(result)
    except Exception as exc:
        logger.warning("Could not store the deliberation: %s", exc if isinstance(exc, (ConnectionError, GroBotError))
                       else type(exc).__name__)
