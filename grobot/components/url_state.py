"""The page's URL as the state of what is open (a selected user, a conversation): changed in place
so that a link or a reload opens the same view, without a navigation that reloads the page."""

from __future__ import annotations

import json
import logging

import reflex as rx

logger = logging.getLogger(__name__)


def replace_url(url: str) -> rx.event.EventSpec:
    """Show ``url`` (same origin, e.g. ``/bots/1/knowledge?user=42``) in the address bar in place of the
    current one, keeping the router's history state."""
    return rx.call_script(f"window.history.replaceState(window.history.state, '', {json.dumps(url)})")
