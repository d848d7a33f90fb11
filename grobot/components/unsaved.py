"""The guard against losing unsaved edits (``assets/unsaved_guard.js``): leaving a page with an edited
form asks "Discard unsaved changes?" first (links, a bot's tabs, the sidebar, closing or reloading)."""

from __future__ import annotations

from typing import Any

import reflex as rx

GUARD_SCRIPT = "/unsaved_guard.js"
CONFIRM_MESSAGE = "Discard unsaved changes?"


def guard_attrs() -> dict[str, Any]:
    """Props of an uncontrolled form the guard watches: it counts as edited once the admin types in it,
    until it is saved (a fresh dict each time: Reflex adds a component's other attributes to it)."""
    return {"custom_attrs": {"data-unsaved-guard": "true"}}


def unsaved_guard() -> rx.Component:
    """The guard's script (loaded once per page, whichever page includes it)."""
    return rx.script(src=GUARD_SCRIPT)


def unsaved_marker(dirty: rx.Var) -> rx.Component:
    """Tells the guard that fields kept in the page's state have unsaved edits."""
    return rx.el.span(data_unsaved=rx.cond(dirty, "true", "false"), display="none")


def confirm_when_checked(question: str | rx.Var) -> dict[str, Any]:
    """Attributes of a checkbox whose form asks ``question`` before it is sent with the box ticked."""
    return {"custom_attrs": {"data-confirm-when-checked": question}}
