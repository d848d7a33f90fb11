"""The base of the admin-only pages: every read and write checks the admin role on the server.

A page state derives from :class:`AdminState` and runs its database work with
:meth:`AdminState._admin`, which verifies the session token and the ``admin`` role in the
same transaction as the work. When the check fails it raises :class:`Refused`, carrying
the event that sends the browser away (to the login page, or home for a tester); handlers
return ``refused.event``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

import reflex as rx
from reflex.event import EventSpec
from sqlmodel import Session

from grobot.core.errors import PermissionDenied
from grobot.core.models import AppUser, Role
from grobot.core.services.users import NotSignedIn
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
            raise Refused(sign_out_script()) from None
        except PermissionDenied:
            logger.warning("User %s (%s) was refused an admin action", self.username, self.role)
            raise Refused(rx.redirect(HOME_ROUTE, replace=True)) from None
