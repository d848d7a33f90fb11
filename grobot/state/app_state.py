"""The root state of the web app.

Every page state derives from :class:`AppState`, so what all pages share (the signed-in
user and their role, once login exists) lives here. This module imports nothing else of
the app. Every state var reaches the browser: never put a secret in one.
"""

from __future__ import annotations

import logging

import reflex as rx

logger = logging.getLogger(__name__)


class AppState(rx.State):
    """State shared by every page (the base of every page's substate)."""
