"""People who log into the web app: admins and testers."""

from __future__ import annotations

import logging
import re
import secrets

from sqlmodel import Session, func, select

from grobot.core import security
from grobot.core.errors import ConflictError, NotFoundError, ValidationError
from grobot.core.models import AppUser, AppUserBot, Role, utcnow

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
        raise ValidationError(f"password: at least {MIN_PASSWORD} characters")
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
    if len(password) < MIN_PASSWORD:
        raise ValidationError(f"password: at least {MIN_PASSWORD} characters")
    user.password_hash = security.hash_password(password)
    session.add(user)


def visible_bot_ids(user: AppUser, *, session: Session) -> set[int] | None:
    """The bots a user may see: None means all (admins)."""
    if user.role == Role.ADMIN.value:
        return None
    return set(session.exec(select(AppUserBot.bot_id).where(AppUserBot.app_user_id == user.id)).all())


def grant_bot(user: AppUser, bot_id: int, *, session: Session) -> None:
    if session.get(AppUserBot, (user.id, bot_id)) is None:
        session.add(AppUserBot(app_user_id=user.id, bot_id=bot_id))
        session.flush()


def list_users(*, session: Session) -> list[AppUser]:
    return list(session.exec(select(AppUser).order_by(AppUser.username)).all())
