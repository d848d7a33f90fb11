"""The MCP presets dialog: its state, what it reads and does through the services with the checks of each event (the view
is in :mod:`grobot.pages.mcp_presets`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import reflex as rx

from grobot.core.errors import GroBotError
from grobot.core.services import mcp_presets
from grobot.core.tools.mcp_presets import KEYLESS
from grobot.pages.mcp_state import McpState
from grobot.state.admin_state import AdminState, Refused

logger = logging.getLogger(__name__)

SECRET_PREFIX = "secret:"


@dataclass
class SecretRow:
    key: str
    label: str
    help: str
    field_name: str
    field_id: str


@dataclass
class PresetRow:
    """One preset as the picker shows it."""

    name: str
    title: str
    description: str
    tier: str
    transport: str
    package: str
    source: str  # where it runs from: "installed here", "npx downloads it on first start", how to install it, or its URL
    per_bot: bool
    secrets: list[SecretRow] = field(default_factory=list)
    missing: bool = False  # not installed, and nothing here can download it: ``source`` says how to install it


def _source(row: dict[str, Any]) -> str:
    if row["transport"] != "stdio":
        return f"remote: {row['where']}"
    if row["installed"]:
        return f"{row['package']}, installed here"
    if row["missing"]:
        return row["missing"]
    tool = "uvx" if row["package"] and not row["package"].startswith("@") and "/" not in row["package"] else "npx"
    return f"{row['package']}, downloaded by {tool} on first start"


def preset_rows() -> list[PresetRow]:
    return [
        PresetRow(
            name=row["name"], title=row["title"], description=row["description"], tier=row["tier"],
            transport=row["transport"],
            package=row["package"], source=_source(row), per_bot=row["per_bot"], missing=bool(row["missing"]),
            secrets=[SecretRow(key=s["key"], label=s["label"], help=s["help"], field_name=SECRET_PREFIX + s["key"],
                               field_id=f"preset-secret-{s['key']}") for s in row["secrets"]],
        )
        for row in mcp_presets.catalogue()
    ]


class McpPresetState(AdminState):
    """The picker: the catalogue, the preset whose secrets are asked for, and the add in progress."""

    presets_open: bool = False
    keyless: list[PresetRow] = []
    keyed: list[PresetRow] = []
    chosen: str = ""  # the preset whose secrets are asked for ("" = the catalogue is shown)
    chosen_title: str = ""
    chosen_secrets: list[SecretRow] = []
    preset_error: str = ""
    adding: str = ""
    form_version: int = 0

    @rx.event
    async def open_presets(self):
        """Show the catalogue (admins only)."""
        if refused := await self._refused():
            return refused
        rows = preset_rows()
        self.keyless = [r for r in rows if r.tier == KEYLESS]
        self.keyed = [r for r in rows if r.tier != KEYLESS]
        self.chosen, self.preset_error, self.adding = "", "", ""
        self.presets_open = True
        return None

    @rx.event
    def open_change(self, is_open: bool):
        if not is_open and not self.adding:
            self.presets_open = False

    @rx.event
    def back(self):
        self.chosen, self.preset_error = "", ""

    @rx.event
    async def choose(self, name: str):
        """A keyless preset is added at once; one with keys asks for them first."""
        row = next((r for r in self.keyless + self.keyed if r.name == name), None)
        if row is None:
            return
        if row.secrets:
            self.chosen, self.chosen_title, self.chosen_secrets = row.name, row.title, row.secrets
            self.preset_error = ""
            self.form_version += 1
            return
        async for event in self._add(name, "", {}):
            yield event

    @rx.event
    async def submit_secrets(self, form: dict[str, Any]):
        """The secrets form of the chosen preset (values go straight to the service, encrypted there)."""
        secrets = {key[len(SECRET_PREFIX):]: str(value or "") for key, value in form.items() if key.startswith(SECRET_PREFIX)}
        async for event in self._add(self.chosen, str(form.get("server_name") or ""), secrets):
            yield event

    async def _add(self, preset: str, name: str, secrets: dict[str, str]):
        """Register the preset's server, close the picker, then test it and show its row."""

        row = next((r for r in self.keyless + self.keyed if r.name == preset), None)
        downloads = row is not None and row.transport == "stdio" and ", installed here" not in row.source

        def work(session, user) -> tuple[int, str]:
            server = mcp_presets.add_from_preset(session=session, preset=preset, name=name or None, secrets=secrets)
            logger.info("Admin %s added MCP server %s from the %s preset", user.username, server.name, preset)
            return server.id or 0, server.name

        self.adding, self.preset_error = preset, ""
        yield
        try:
            server_id, added = await self._admin(work, readonly=False)
        except Refused as refused:
            self.adding = ""
            yield refused.event
            return
        except GroBotError as exc:
            self.adding = ""
            message = str(exc).removeprefix("secrets: ")
            self.preset_error = message[:1].upper() + message[1:]
            return
        self.adding, self.chosen, self.presets_open = "", "", False
        page = await self.get_state(McpState)
        if downloads:  # not started now: the first start downloads it (or it says how to install it)
            try:
                await page._reload()
            except Refused as refused:
                yield refused.event
                return
            if row is not None and row.missing:
                yield rx.toast.warning(f"MCP server {added} added. {row.source}")
                return
            yield rx.toast.info(f"MCP server {added} added. It is not installed here: its first start downloads "
                                f"it (Test starts it now).")
            return
        page.testing_id = server_id
        try:
            await page._reload()
        except Refused as refused:
            yield refused.event
            return
        yield rx.toast.info(f"MCP server {added} added; connecting to it...")
        yield await page._test(server_id)
