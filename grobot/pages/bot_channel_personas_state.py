"""The Settings tab's "Persona per channel" card: its state, mixed into the tab's state (which provides
``_change``: a change made as an admin of the open bot, then the settings shown again)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.core.models import AppUser, Bot
from grobot.core.services import channel_personas
from grobot.state.llm_check import INHERIT

LLM_FIELDS = ("provider", "model", "base_url", "context_window", "temperature")  # as `bot channel set`
NEW = "new"  # the form's channel choice before one is made


def persona_change(form_data: dict[str, Any]) -> tuple[str, str, dict[str, dict[str, Any]]]:
    """(the channel: chosen, else typed; its personality addition; its overrides per category) from the card's form."""
    channel = str(form_data.get("channel_id") or "").strip()
    chosen = str(form_data.get("channel") or "").strip()
    if not channel and chosen != NEW:
        channel = chosen
    llms = {}
    for category in channel_personas.CATEGORIES:
        fields = {name: str(form_data.get(f"{category}_{name}") or "").strip() for name in LLM_FIELDS}
        if fields["provider"] == INHERIT:
            fields["provider"] = ""
        llms[category] = {k: v for k, v in fields.items() if v}
    return channel, str(form_data.get("personality") or ""), llms


@dataclass
class ChannelChoices:
    """The bot's channel personas, each ``{"channel_id", "label", "personality", "models", "<category>_<field>"}``
    (the page's rows and its form's stored values), and the channels it has seen, each ``[id, "#name"]``."""

    personas: list[dict[str, str]] = field(default_factory=list)
    seen: list[list[str]] = field(default_factory=list)


def channel_choices(session: Session, bot: Bot) -> ChannelChoices:
    """The bot's channel personas (by channel name) and the channels it has seen."""
    rows = []
    for persona in channel_personas.personas(bot, session=session):
        row = {"channel_id": persona.channel_id, "label": f"#{persona.name}" if persona.name else persona.channel_id,
               "personality": persona.personality, "models": persona.models()}
        for category in channel_personas.CATEGORIES:
            fields = persona.llms.get(category) or {}
            row.update({f"{category}_{name}": str(fields.get(name, "")) for name in LLM_FIELDS})
        rows.append(row)
    seen = channel_personas.known_channels(session=session, bot_id=bot.id or 0)
    return ChannelChoices(personas=rows, seen=[[cid, f"#{name}" if name else cid] for cid, name in seen.items()])


class ChannelPersonaMixin(rx.State, mixin=True):
    """The channel personas of the open bot, and the card's form."""

    channel_personas: list[dict[str, str]] = []
    channel_choices: list[list[str]] = []  # [id, "#name"] of the channels the bot has seen
    persona_channel: str = NEW  # the channel the form edits (a persona's: its stored values)
    persona_error: str = ""
    persona_version: int = 0  # bumped after a save: the form starts over from the stored values

    @rx.var
    def persona_form(self) -> dict[str, str]:
        """The stored values of the channel the form edits ({} for a channel without a persona)."""
        blank = {"personality": "", **{f"{c}_{n}": "" for c in channel_personas.CATEGORIES for n in LLM_FIELDS}}
        return {**blank, **next((p for p in self.channel_personas if p.get("channel_id") == self.persona_channel), {})}

    def _show_channels(self, channels: ChannelChoices) -> None:
        self.channel_personas, self.channel_choices = channels.personas, channels.seen

    @rx.event
    def choose_persona_channel(self, value: str) -> None:
        """Edit the persona of another channel (the form shows its stored values)."""
        self.persona_channel, self.persona_error = str(value)[:32], ""
        self.persona_version += 1

    @rx.event
    async def save_channel_persona(self, form_data: dict[str, Any]):
        """Save the persona of the channel chosen (or typed) in the card: its addition and its overrides."""
        channel, personality, llms = persona_change(form_data)
        if not channel:
            self.persona_error = "Choose a channel, or type its id."
            return None

        def change(session: Session, _user: AppUser, bot: Bot) -> None:
            channel_personas.set_persona(bot, channel, session=session, personality=personality, llms=llms)

        self.persona_error = await self._change(change, "persona")  # type: ignore[attr-defined]
        if self.persona_error:
            return None
        self.persona_channel = next((p["channel_id"] for p in self.channel_personas
                                     if p["channel_id"] == channel or p["label"] == channel), NEW)
        self.persona_version += 1
        return rx.toast.success("Channel persona saved. It applies from the next message there.")

    @rx.event
    async def remove_channel_persona(self, channel_id: str):
        """Remove a channel's persona: the bot answers there with its own again."""
        def change(session: Session, _user: AppUser, bot: Bot) -> None:
            channel_personas.clear_persona(bot, str(channel_id), session=session)

        self.persona_error = await self._change(change, "persona")  # type: ignore[attr-defined]
        if self.persona_error:
            return None
        if self.persona_channel == str(channel_id):
            self.persona_channel = NEW
        self.persona_version += 1
        return rx.toast.success("Channel persona removed.")
