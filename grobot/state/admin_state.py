"""The base of the admin-only pages: every read and write checks the admin role on the server.

A page state derives from :class:`AdminState` and runs its database work with
:meth:`AdminState._admin`, which verifies the session token and the ``admin`` role in the
same transaction as the work. When the check fails it raises :class:`Refused`, carrying
the event that sends the browser away (to the login page, or home for a tester); handlers
return ``refused.event``. :meth:`AdminState._act` wraps the common case: one write, the
page reloaded (:meth:`_reload`), and a toast that says what happened.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

import reflex as rx
from reflex.event import EventSpec
from sqlmodel import Session

from grobot.core.errors import GroBotError, PermissionDenied
from grobot.core.models import AppUser, Role
from grobot.core.services.users import NotSignedIn
from grobot.core.services.validation import sentences
from grobot.state.app_state import HOME_ROUTE, AppState, run_authorized, sign_out_script

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Refused(Exception):
    """The session may not do this; ``event`` sends the browser where it belongs."""

    def __init__(self, event: EventSpec) -> None:
        super().__init__("refused")
        self.event = event


class AdminState(AppState):
    """Shared by the admin pages: the server-side role check around their database work."""

    async def _admin(self, work: Callable[[Session, AppUser], T], *, readonly: bool = True) -> T:
        """``work(session, user)`` in a thread, for an admin session only (else :class:`Refused`)."""
        token = self.session_token
        try:
            return await asyncio.to_thread(run_authorized, token, work, Role.ADMIN, readonly=readonly)
        except NotSignedIn:
            self._forget_session()
            raise Refused(sign_out_script(self._current_path())) from None
        except PermissionDenied:
            logger.warning("User %s (%s) was refused an admin action", self.username, self.role)
            raise Refused(rx.redirect(HOME_ROUTE, replace=True)) from None

    async def _reload(self) -> None:
        """Read what the page shows (each page overrides it; raises :class:`Refused`)."""

    async def _open(self) -> EventSpec | None:
        """The on-load read of a page (after ``AppState.require_admin``)."""
        if not self.user_id:
            return None  # the session check sends the browser to the login page
        try:
            await self._reload()
        except Refused as refused:
            return refused.event
        return None

    async def _refused(self) -> EventSpec | None:
        """Where a non-admin session goes instead (None for an admin), for handlers that only open a form."""
        try:
            await self._admin(lambda _session, _user: None)
        except Refused as refused:
            return refused.event
        return None

    async def _act(self, work: Callable[[Session, AppUser], T], success: str | Callable[[T], str] = "") -> EventSpec | None:
        """Run the write ``work`` as an admin and reload the page; the event to send back:
        a redirect when refused, the domain error as a toast, else the ``success`` toast."""
        try:
            result = await self._admin(work, readonly=False)
            await self._reload()
        except Refused as refused:
            return refused.event
        except GroBotError as exc:
            return rx.toast.error(sentences(str(exc)))
        message = success(result) if callable(success) else success
        return rx.toast.success(message) if message else None
