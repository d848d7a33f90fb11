"""People who log into the web app: admins and testers."""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import re
import secrets
from dataclasses import dataclass

from sqlmodel import Session, func, select

from grobot.core import security
from grobot.core.errors import ConflictError, NotFoundError, PermissionDenied, ValidationError
from grobot.core.models import AppUser, AppUserBot, Bot, Role, utcnow
from grobot.core.services import bots as bots_service

logger = logging.getLogger(__name__)

USERNAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{2,64}$")
MIN_PASSWORD = 8


def generate_password() -> str:
    return secrets.token_urlsafe(15)


def create_user(*, session: Session, username: str, password: str, role: str = Role.TESTER.value) -> AppUser:
    """Create a user with a hashed password."""
    username = username.strip()
    if not USERNAME_RE.match(username):
        raise ValidationError("username: 2-64 characters: letters, digits, '_', '.', '@', '-'")
    if len(password) < MIN_PASSWORD:
        raise ValidationError(f"password: must have at least {MIN_PASSWORD} characters")
    if role not in {r.value for r in Role}:
        raise ValidationError(f"role: one of {', '.join(r.value for r in Role)}")
    if session.exec(select(AppUser.id).where(AppUser.username == username)).first() is not None:
        raise ConflictError(f"a user named {username!r} already exists")
    user = AppUser(username=username, password_hash=security.hash_password(password), role=role)
    session.add(user)
    session.flush()
    logger.info("User %s created with role %s", username, role)
    return user


def count_admins(*, session: Session) -> int:
    return session.exec(select(func.count()).select_from(AppUser).where(AppUser.role == Role.ADMIN.value)).one()


def authenticate(*, session: Session, username: str, password: str) -> AppUser | None:
    """The user when the password matches and the account is enabled, else None."""
    user = session.exec(select(AppUser).where(AppUser.username == username.strip())).first()
    if user is None or user.disabled or not security.verify_password(password, user.password_hash):
        return None
    user.last_login_at = utcnow()
    session.add(user)
    return user


def get_user(ref: int | str, *, session: Session) -> AppUser:
    user = session.get(AppUser, int(ref)) if str(ref).isdigit() else None
    if user is None:
        user = session.exec(select(AppUser).where(AppUser.username == str(ref))).first()
    if user is None:
        raise NotFoundError(f"no user named {ref!r}")
    return user


def set_password(user: AppUser, password: str, *, session: Session) -> None:
    """A new password; the user's existing sessions stop working (their stamp changes)."""
    if len(password) < MIN_PASSWORD:
        raise ValidationError(f"password: must have at least {MIN_PASSWORD} characters")
    user.password_hash = security.hash_password(password)
    session.add(user)


def visible_bot_ids(user: AppUser, *, session: Session) -> set[int] | None:
    """The bots a user may see: None means all (admins)."""
    if user.role == Role.ADMIN.value:
        return None
    return set(session.exec(select(AppUserBot.bot_id).where(AppUserBot.app_user_id == user.id)).all())


def visible_bot(user: AppUser, bot_id: int, *, session: Session) -> Bot:
    """The bot ``bot_id`` when ``user`` may see it; otherwise :class:`NotFoundError` (a tester
    is not told whether a bot they may not see exists)."""
    visible = visible_bot_ids(user, session=session)
    bot = session.get(Bot, bot_id) if visible is None or bot_id in visible else None
    if bot is None:
        raise NotFoundError(f"no bot numbered {bot_id}, or you may not see it")
    return bot


def _only_testers(user: AppUser) -> None:
    if user.role != Role.TESTER.value:
        raise ValidationError("only testers are limited to some bots; admins see them all")


def grant_bot(user: AppUser, bot_id: int, *, session: Session) -> bool:
    """A tester may see the bot (False: they could already); an admin sees every bot already."""
    _only_testers(user)
    if session.get(AppUserBot, (user.id, bot_id)) is not None:
        return False
    bots_service.get_bot(bot_id, session=session)  # NotFoundError for a deleted bot
    session.add(AppUserBot(app_user_id=user.id, bot_id=bot_id))
    session.flush()
    return True


def revoke_bot(user: AppUser, bot_id: int, *, session: Session) -> bool:
    """A tester may no longer see the bot (False: they could not)."""
    _only_testers(user)
    link = session.get(AppUserBot, (user.id, bot_id))
    if link is None:
        return False
    session.delete(link)
    session.flush()
    return True


def set_granted_bots(user: AppUser, bot_ids: set[int], *, session: Session) -> None:
    """Exactly ``bot_ids`` become the bots a tester may see."""
    _only_testers(user)
    current = visible_bot_ids(user, session=session) or set()
    for bot_id in bot_ids - current:
        grant_bot(user, bot_id, session=session)
    for bot_id in current - bot_ids:
        revoke_bot(user, bot_id, session=session)
    logger.info("User %s may now see %d bot(s)", user.username, len(bot_ids))


def granted_bots(*, session: Session) -> dict[int, list[int]]:
    """Tester id -> the ids of the bots they may see, in one query."""
    result: dict[int, list[int]] = {}
    for user_id, bot_id in session.exec(select(AppUserBot.app_user_id, AppUserBot.bot_id)).all():
        result.setdefault(user_id, []).append(bot_id)
    return result


def list_users(*, session: Session) -> list[AppUser]:
    return list(session.exec(select(AppUser).order_by(AppUser.username)).all())


def _check_not_last_admin(user: AppUser, what: str, *, session: Session) -> None:
    if user.role != Role.ADMIN.value:
        return
    others = session.exec(
        select(func.count()).select_from(AppUser).where(
            AppUser.role == Role.ADMIN.value, AppUser.disabled == False, AppUser.id != user.id  # noqa: E712
        )
    ).one()
    if others == 0:
        raise ConflictError(f"cannot {what} the last enabled admin")


def set_disabled(user: AppUser, disabled: bool, *, session: Session, acting_user_id: int | None = None) -> None:
    """Disable (every session ends at once) or enable an account; never yourself nor the last admin."""
    if disabled:
        if acting_user_id is not None and user.id == acting_user_id:
            raise ConflictError("you cannot disable your own account")
        _check_not_last_admin(user, "disable", session=session)
    user.disabled = disabled
    session.add(user)
    session.flush()
    logger.info("User %s %s", user.username, "disabled" if disabled else "enabled")


def delete_user(user: AppUser, *, session: Session, acting_user_id: int | None = None) -> None:
    """Delete an account; never yourself nor the last admin."""
    if acting_user_id is not None and user.id == acting_user_id:
        raise ConflictError("you cannot delete your own account")
    _check_not_last_admin(user, "delete", session=session)
    session.delete(user)
    session.flush()
    logger.info("User %s deleted", user.username)


# --------------------------------------------------------------------------- web sessions

LOGIN_FAILED_MESSAGE = "Wrong username or password"
_dummy_hash: str | None = None


class NotSignedIn(PermissionDenied):
    """No valid session: none, expired, or its user is disabled, deleted or has a new password."""


class LoginRefused(PermissionDenied):
    """A login that did not succeed; the message never says which part was wrong."""

    def __init__(self, message: str = LOGIN_FAILED_MESSAGE, *, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class SignedInUser:
    """What the web app may keep about a signed-in user (never the password or its hash)."""

    id: int
    username: str
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN.value


def session_stamp(user: AppUser) -> str:
    """A short fingerprint of the password hash and session generation: a new password or a
    sign-out ends the sessions issued before."""
    return hashlib.sha256(f"{user.id}:{user.session_generation}:{user.password_hash}".encode()).hexdigest()[:16]


def end_sessions(user_id: int, *, session: Session) -> None:
    """Sign the user out everywhere: every session token issued so far stops working."""
    user = session.get(AppUser, user_id, with_for_update=True)
    if user is not None:
        user.session_generation += 1
        session.add(user)


def start_session(user: AppUser) -> str:
    """A signed session token for ``user`` (kept by the browser, checked on every request)."""
    return security.sign_session(user.id or 0, stamp=session_stamp(user))


def _spend_password_check(password: str) -> None:
    """Verify against a throwaway hash, so an unknown username takes as long as a known one."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = security.hash_password(secrets.token_urlsafe(16))
    security.verify_password(password, _dummy_hash)


def login(
    *, session: Session, username: str, password: str, client: str = "", throttle: security.LoginThrottle | None = None
) -> tuple[SignedInUser, str]:
    """Check a login from ``client`` (its address); returns the user and a new session token, or
    raises :class:`LoginRefused`.

    A client that failed too often lately waits before its next attempt (``security.LoginThrottle``:
    slowed down, client by client, never an account locked); an attempt made sooner is refused
    without checking the password.
    """
    throttle = throttle or security.login_throttle
    wait = throttle.retry_after(client, username)
    if wait > 0:
        raise LoginRefused(_wait_message(wait), retry_after=wait)
    user = authenticate(session=session, username=username, password=password) if username.strip() else None
    if user is None:
        if session.exec(select(AppUser.id).where(AppUser.username == username.strip())).first() is None:
            _spend_password_check(password)
        wait = throttle.record_failure(client, username)
        logger.info("Failed web login")
        raise LoginRefused(f"{LOGIN_FAILED_MESSAGE}. {_wait_message(wait)}" if wait > 0 else LOGIN_FAILED_MESSAGE,
                           retry_after=wait)
    throttle.record_success(client, username)
    logger.info("User %s signed in to the web app", user.username)
    return signed_in(user), start_session(user)


def _wait_message(wait: float) -> str:
    seconds = max(1, math.ceil(wait))
    return f"Too many failed attempts: wait {seconds} s before trying again."


def signed_in(user: AppUser) -> SignedInUser:
    return SignedInUser(id=user.id or 0, username=user.username, role=user.role)


def user_for_session(token: str, *, session: Session) -> AppUser | None:
    """The enabled user a session token belongs to; None when it is invalid, expired,
    for a deleted or disabled user, or made before the user's password changed."""
    claims = security.verify_session(token)
    if claims is None:
        return None
    user = session.get(AppUser, claims.user_id)
    if user is None or user.disabled or not hmac.compare_digest(claims.stamp, session_stamp(user)):
        return None
    return user


def authorize(token: str, *allowed: Role, session: Session) -> AppUser:
    """The session's user when it has one of the ``allowed`` roles (all roles when none given);
    raises :class:`NotSignedIn` without a valid session and :class:`PermissionDenied` for
    another role. Every web event handler that reads or writes data goes through this."""
    user = user_for_session(token, session=session)
    if user is None:
        raise NotSignedIn("please sign in")
    security.require_role(user.role, *(allowed or tuple(Role)))
    return user


def bots_visible_to(user: AppUser, *, session: Session) -> list[bots_service.BotSummary]:
    """The bots (with their status) that ``user`` may see: all for an admin, the granted ones for a tester."""
    visible = visible_bot_ids(user, session=session)
    summaries = bots_service.list_bots(session=session)
    if visible is None:
        return summaries
    return [summary for summary in summaries if summary.id in visible]
