"""Bots: create, read, change and delete, with validation."""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from grobot.core import moderation, security
from grobot.core.agents.types import ACCESS_FIELDS
from grobot.core.errors import ConflictError, NotFoundError, ValidationError
from grobot.core.models import AgentMode, AppUserBot, Bot, BotState, BotStatus, utcnow
from grobot.core.services.fleet import stale_after_seconds
from grobot.core.services.validation import validate
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$")
# Discord bot tokens: base64(user id) . timestamp . HMAC, all base64url.
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{18,40}\.[A-Za-z0-9_-]{4,10}\.[A-Za-z0-9_-]{20,60}$")
# Fields whose change needs a new gateway connection (the bot process restarts).
GATEWAY_FIELDS = {"message_content_intent", "members_intent"}
# Per-bot daily limits (NULL: the global default of the same name in ``setting``).
DAILY_LIMIT_FIELDS = ("daily_token_limit", "daily_call_limit", "user_daily_message_limit")
# Per-bot budgets beside them (NULL: the global default; 0: none); costs in the admin's currency.
BUDGET_FIELDS = ("daily_cost_limit", "monthly_token_limit", "monthly_call_limit", "monthly_cost_limit")


def validate_token(token: str) -> str:
    """Return the stripped token, or raise when it does not look like a Discord bot token."""
    token = (token or "").strip()
    if token.lower().startswith("bot "):
        token = token[4:].strip()
    if not TOKEN_RE.match(token):
        raise ValidationError(
            "that does not look like a Discord bot token (three dot-separated parts, "
            "from the Bot page of the Discord developer portal)"
        )
    return token


def _split_list(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class BotFields(BaseModel):
    """The editable fields of a bot (all optional: an update names only what changes)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str | None = None
    enabled: bool | None = None
    personality: str | None = Field(default=None, max_length=20_000)
    agent_mode: AgentMode | None = None
    message_content_intent: bool | None = None
    members_intent: bool | None = None
    reply_to_mentions: bool | None = None
    reply_in_dms: bool | None = None
    reply_to_replies: bool | None = None
    reply_when_relevant: bool | None = None
    allowed_channel_ids: list[str] | None = Field(default=None, max_length=500)
    always_on_channel_ids: list[str] | None = Field(default=None, max_length=500)
    keywords: list[str] | None = Field(default=None, max_length=200)
    max_tool_rounds: int | None = Field(default=None, ge=0, le=20)
    user_cooldown_seconds: float | None = Field(default=None, ge=0, le=3600)
    max_concurrent_runs: int | None = Field(default=None, ge=1, le=100)
    # Daily limits: None ("default"): the global default; 0 ("unlimited"): no limit.
    daily_token_limit: int | None = Field(default=None, ge=0, le=10**12)
    daily_call_limit: int | None = Field(default=None, ge=0, le=10**9)
    user_daily_message_limit: int | None = Field(default=None, ge=0, le=10**9)
    daily_cost_limit: float | None = Field(default=None, ge=0, le=10**9)
    monthly_token_limit: int | None = Field(default=None, ge=0, le=10**13)
    monthly_call_limit: int | None = Field(default=None, ge=0, le=10**10)
    monthly_cost_limit: float | None = Field(default=None, ge=0, le=10**9)
    # The Archivist's notes wait for an admin's approval (suggestions) instead of being saved at once.
    notes_need_approval: bool | None = None
    # Answers from its documents (grobot.core.documents): on or off, the least similarity of a passage to
    # a message to go into the prompt (0-1), the largest file indexed, the most passages kept.
    documents_enabled: bool | None = None
    documents_threshold: float | None = Field(default=None, ge=0, le=1)
    documents_max_file_bytes: int | None = Field(default=None, ge=1024, le=1024**3)
    documents_max_passages: int | None = Field(default=None, ge=1, le=10**6)
    # The web tools (web_search, web_read), and the bot's own SearXNG instance ("" or "default": the global one).
    web_search: bool | None = None
    web_search_url: str | None = None

    @field_validator("web_search_url", mode="before")
    @classmethod
    def _searxng(cls, value: Any) -> Any:
        if isinstance(value, str):
            from grobot.core.tools.web import check_searxng_url

            if value.strip().lower() == "default":
                return None
            try:
                return check_searxng_url(value) or None
            except ValidationError as exc:
                raise ValueError(str(exc)) from None
        return value
    # Who may use the bot: Discord user and role ids (a block wins; no allowed ids: everyone not blocked).
    allowed_user_ids: list[str] | None = Field(default=None, max_length=1000)
    blocked_user_ids: list[str] | None = Field(default=None, max_length=1000)
    allowed_role_ids: list[str] | None = Field(default=None, max_length=500)
    blocked_role_ids: list[str] | None = Field(default=None, max_length=500)
    # Moderation (grobot.core.moderation): words (lines or commas), patterns (one per line), the action.
    moderation_words: list[str] | None = None
    moderation_patterns: list[str] | None = None
    moderation_action: str | None = None
    moderation_ask_model: bool | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not NAME_RE.match(value):
            raise ValueError(
                "must be 1-64 characters: letters, digits, space, '_', '.', '-', starting with a letter or digit"
            )
        if value is not None and value.isdigit():  # "42" would name bot number 42 in every command
            raise ValueError("must not be only digits: a bot is found by its name or its number")
        return value

    @field_validator("allowed_channel_ids", "always_on_channel_ids", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        value = _split_list(value)
        if isinstance(value, list):
            for item in value:
                if not str(item).isdigit():
                    raise ValueError(f"{item!r} is not a Discord channel id (digits only)")
            return [str(item) for item in value]
        return value

    @field_validator(*ACCESS_FIELDS, mode="before")
    @classmethod
    def _access_ids(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str):  # commas or spaces between the ids
            value = value.replace(",", " ").split()
        if isinstance(value, list):
            kind = "user" if "user" in (info.field_name or "") else "role"
            result: list[str] = []
            for item in value:
                item = str(item).strip()
                if not item.isdigit() or not 15 <= len(item) <= 20:
                    raise ValueError(f"{item!r} is not a Discord {kind} id (a number of 15 to 20 digits, as "
                                     "Discord's Copy ID gives it)")
                if item not in result:
                    result.append(item)
            return result
        return value

    @field_validator("moderation_words", mode="before")
    @classmethod
    def _moderation_words(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part for line in value.splitlines() for part in line.split(",")]
        return moderation.check_words(value) if isinstance(value, list) else value

    @field_validator("moderation_patterns", mode="before")
    @classmethod
    def _moderation_patterns(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.splitlines()
        return moderation.check_patterns(value) if isinstance(value, list) else value

    @field_validator("moderation_action", mode="before")
    @classmethod
    def _moderation_action(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
            if value not in moderation.ACTIONS:
                raise ValueError(f"must be one of {', '.join(moderation.ACTIONS)}")
        return value

    @field_validator(*DAILY_LIMIT_FIELDS, *BUDGET_FIELDS, mode="before")
    @classmethod
    def _limit(cls, value: Any) -> Any:
        if isinstance(value, str):
            word = value.strip().lower()
            if word in ("", "default"):
                return None
            if word == "unlimited":
                return 0
        return value

    @field_validator("keywords", mode="before")
    @classmethod
    def _keywords(cls, value: Any) -> Any:
        value = _split_list(value)
        if isinstance(value, list) and any(len(str(k)) > 100 for k in value):
            raise ValueError("a keyword is longer than 100 characters")
        return value


EDITABLE_FIELDS = tuple(BotFields.model_fields)


@dataclass(frozen=True)
class BotSummary:
    """A bot with its live status, as lists show it."""

    id: int
    name: str
    enabled: bool
    has_token: bool
    status: str
    status_detail: str
    discord_user_name: str | None
    guild_count: int
    heartbeat_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "enabled": self.enabled,
            "has_token": self.has_token,
            "status": self.status,
            "status_detail": self.status_detail,
            "discord_user_name": self.discord_user_name,
            "guild_count": self.guild_count,
            "heartbeat_at": self.heartbeat_at.isoformat() if self.heartbeat_at else None,
        }


def get_bot(ref: int | str, *, session: Session) -> Bot:
    """The bot with id or name ``ref``."""
    bot: Bot | None = None
    if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
        bot = session.get(Bot, int(ref))
    if bot is None and isinstance(ref, str):
        bot = session.exec(select(Bot).where(Bot.name == ref)).first()
    if bot is None:
        raise NotFoundError(f"no bot named or numbered {ref!r}")
    return bot


def _check_name_free(name: str, *, session: Session, exclude_id: int | None = None) -> None:
    existing = session.exec(select(Bot.id).where(Bot.name == name)).first()
    if existing is not None and existing != exclude_id:
        raise ConflictError(f"a bot named {name!r} already exists")


def create_bot(
    *,
    session: Session,
    name: str,
    token: str | None = None,
    personality: str = "",
    enabled: bool = True,
    **fields: Any,
) -> Bot:
    """Create a bot (validated) with its status row. Every field's problem is in one error
    (``name: …; token: …``), so that a form can show them all at once."""
    problems: list[str] = []
    data: BotFields | None = None
    try:
        data = validate(BotFields, {"name": name, "personality": personality, "enabled": enabled, **fields})
    except ValidationError as exc:
        problems.append(str(exc))
    if data is not None and not data.name:
        problems.append("name: required")
    if token:
        try:
            token = validate_token(token)
        except ValidationError as exc:
            problems.append(f"token: {exc}")
    if data is not None and data.name:
        try:
            _check_name_free(data.name, session=session)
        except ConflictError as exc:
            if not problems:
                raise
            problems.insert(0, f"name: {exc}")
    if problems or data is None:
        raise ValidationError("; ".join(problems))
    if data.agent_mode is AgentMode.NATIVE:
        _check_native(None, session=session)
    bot = Bot(**data.model_dump(exclude_none=True))
    if token:
        bot.discord_token_enc = security.encrypt(token)
    session.add(bot)
    try:
        session.flush()
    except IntegrityError:
        raise ConflictError(f"a bot named {data.name!r} already exists") from None
    session.add(BotStatus(bot_id=bot.id, state=BotState.STOPPED.value))
    session.flush()
    logger.info("Bot %s (%s) created", bot.id, bot.name)
    return bot


def update_bot(bot: Bot, changes: dict[str, Any], *, session: Session) -> Bot:
    """Apply validated ``changes``; intent changes bump the gateway revision."""
    data = validate(BotFields, changes)
    values = data.model_dump(exclude_unset=True)
    if "name" in values:
        if not values["name"]:
            raise ValidationError("name: required")
        _check_name_free(values["name"], session=session, exclude_id=bot.id)
    if values.get("agent_mode") is AgentMode.NATIVE and bot.agent_mode != AgentMode.NATIVE.value:
        _check_native(bot.id, session=session)
    bump = False
    for key, value in values.items():
        if key in GATEWAY_FIELDS and getattr(bot, key) != value:
            bump = True
        setattr(bot, key, value.value if isinstance(value, AgentMode) else value)
    if bump:
        bot.gateway_revision += 1
    bot.updated_at = utcnow()
    session.add(bot)
    session.flush()
    return bot


def _check_native(bot_id: int | None, *, session: Session) -> None:
    """Refuse native mode when the bot's output model is known not to call tools."""
    from grobot.core.services.llm_settings import native_mode_refusal

    refusal = native_mode_refusal(session=session, bot_id=bot_id)
    if refusal:
        raise ValidationError(f"agent_mode: {refusal}")


def set_token(bot: Bot, token: str | None, *, session: Session) -> Bot:
    """Store a new Discord token (or clear it); the bot process restarts with it."""
    bot.discord_token_enc = security.encrypt(validate_token(token)) if token else None
    bot.gateway_revision += 1
    bot.updated_at = utcnow()
    session.add(bot)
    session.flush()
    logger.info("Bot %s: token %s", bot.id, "changed" if token else "cleared")
    return bot


def get_token(bot: Bot) -> str | None:
    """The decrypted Discord token (only the bot process should ask for it)."""
    return security.decrypt_optional(bot.discord_token_enc)


def set_enabled(bot: Bot, enabled: bool, *, session: Session) -> Bot:
    return update_bot(bot, {"enabled": enabled}, session=session)


def delete_bot(bot: Bot, *, session: Session) -> None:
    """Delete a bot with everything of it: rows (by cascade) and its files on disk."""
    bot_id = bot.id
    assert bot_id is not None
    session.delete(bot)
    session.flush()
    for folder in (get_settings().bot_files_dir(bot_id), get_settings().mcp_state_dir(bot_id)):
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
    event.listen(session, "after_commit", lambda _session: _drop_memories(bot_id), once=True)
    logger.info("Bot %s (%s) deleted", bot_id, bot.name)


def _drop_memories(bot_id: int) -> None:
    """After the deletion is committed: drop the bot's memories (or the worker does it when it starts)."""
    from grobot.core.db import session_scope
    from grobot.core.errors import GroBotError
    from grobot.core.services.memories import drop_bot_memories

    try:
        with session_scope(readonly=True) as session:
            drop_bot_memories(bot_id, session=session)
    except GroBotError as exc:
        logger.info("The memories of deleted bot %s are dropped when the worker next starts (%s)", bot_id, exc)
    except Exception as exc:  # never fail the caller after its commit
        logger.warning("Dropping the memories of deleted bot %s failed: %s", bot_id, type(exc).__name__)


def list_bots(*, session: Session) -> list[BotSummary]:
    """Every bot with its status, by name."""
    rows = session.exec(
        select(Bot, BotStatus).join(BotStatus, BotStatus.bot_id == Bot.id, isouter=True).order_by(Bot.name)
    ).all()
    now = utcnow()
    return [summarize(bot, status, now=now) for bot, status in rows]


# The states a bot process keeps up by its heartbeats (any other is written once and stays true).
LIVE_STATES = (BotState.ONLINE.value, BotState.STARTING.value)


def _as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def stale_detail(heartbeat_at: datetime | None, *, now: datetime) -> str:
    """Why a bot that says it is online is shown offline (its last heartbeat, in UTC)."""
    if heartbeat_at is None:
        return "no heartbeat received; is the bot worker running?"
    beat = _as_utc(heartbeat_at).astimezone(UTC)
    when = beat.strftime("%H:%M UTC") if beat.date() == now.astimezone(UTC).date() else beat.strftime("%Y-%m-%d %H:%M UTC")
    return f"no heartbeat since {when}; is the bot worker running?"


def heartbeat_is_stale(state: str, heartbeat_at: datetime | None, *, now: datetime, stale_after: float) -> bool:
    """Is a bot shown ``online``/``starting`` silent for longer than ``stale_after`` seconds?
    (The rule of :func:`grobot.core.services.fleet.mark_stale_offline`, read without a worker.)"""
    if state not in LIVE_STATES:
        return False
    return heartbeat_at is None or _as_utc(heartbeat_at) < now - timedelta(seconds=stale_after)


def summarize(bot: Bot, status: BotStatus | None, *, now: datetime | None = None) -> BotSummary:
    """What lists show of a bot. A live state whose heartbeat is older than the worker's stale
    limit is shown ``offline`` with the reason: no worker runs to mark it so (killed, crashed)."""
    state = status.state if status else BotState.STOPPED.value
    detail = status.detail if status else ""
    heartbeat_at = status.heartbeat_at if status else None
    if not bot.enabled:
        state, detail = BotState.STOPPED.value, "disabled"
    elif not bot.discord_token_enc and state == BotState.STOPPED.value:
        detail = detail or "no Discord token set"
    else:
        now = now or utcnow()
        if heartbeat_is_stale(state, heartbeat_at, now=now, stale_after=stale_after_seconds()):
            state, detail = BotState.OFFLINE.value, stale_detail(heartbeat_at, now=now)
    return BotSummary(
        id=bot.id or 0,
        name=bot.name,
        enabled=bot.enabled,
        has_token=bot.discord_token_enc is not None,
        status=state,
        status_detail=detail,
        discord_user_name=status.discord_user_name if status else None,
        guild_count=status.guild_count if status else 0,
        heartbeat_at=heartbeat_at,
    )


def bot_names(*, session: Session, limit: int) -> list[tuple[int, str]]:
    """(id, name) of the first ``limit`` bots by name (for pickers: no status, no more rows)."""
    rows = session.exec(select(Bot.id, Bot.name).order_by(Bot.name, Bot.id).limit(limit)).all()
    return [(int(bot_id), name) for bot_id, name in rows if bot_id is not None]


def granted_bot_names(*, session: Session, per_user: int) -> dict[int, tuple[list[str], int]]:
    """Tester id -> (the first ``per_user`` names of the bots they may test, by name; how many
    they may test in all): two queries, a count per tester and at most ``per_user`` names each."""
    totals = session.exec(
        select(AppUserBot.app_user_id, func.count()).group_by(AppUserBot.app_user_id)
    ).all()
    rank = func.row_number().over(partition_by=AppUserBot.app_user_id, order_by=(Bot.name, Bot.id)).label("rank")
    ranked = (select(col(AppUserBot.app_user_id).label("user_id"), col(Bot.name).label("name"), rank)
              .join(Bot, col(Bot.id) == AppUserBot.bot_id).subquery())
    names: dict[int, list[str]] = {}
    for user_id, name in session.exec(
        select(ranked.c.user_id, ranked.c.name).where(ranked.c.rank <= per_user).order_by(ranked.c.user_id, ranked.c.rank)
    ).all():
        names.setdefault(int(user_id), []).append(name)
    return {int(user_id): (names.get(int(user_id), []), int(total)) for user_id, total in totals}


def bot_details(bot: Bot, *, session: Session) -> dict[str, Any]:
    """Everything about a bot that may be shown (no secrets: the token is "set" or not)."""
    status = session.get(BotStatus, bot.id)
    summary = summarize(bot, status)
    data = summary.as_dict()
    data.update({field: getattr(bot, field) for field in EDITABLE_FIELDS})
    data["token"] = "set" if bot.discord_token_enc else "not set"
    data["gateway_revision"] = bot.gateway_revision
    if status is not None:
        data.update(
            pid=status.pid,
            crash_count=status.crash_count,
            last_error=status.last_error,
            discord_user_id=status.discord_user_id,
        )
    return data
