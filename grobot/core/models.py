"""The whole data model of GroBot as SQLModel tables.

Alembic (``alembic/versions``) is the only authority over the schema; a test fails when
these classes and the migrations disagree. Times are aware UTC datetimes (see :func:`utcnow`).
The enums and column shorthands live in :mod:`grobot.core.model_types` (re-exported here).
Secret columns end in ``_enc`` and hold Fernet tokens (:mod:`grobot.core.security`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, Index, Integer, LargeBinary, UniqueConstraint
from sqlmodel import Field, SQLModel

from grobot.core.model_types import (  # noqa: F401 - the enums and utcnow are re-exported
    AgentMode,
    BotState,
    LLMCategory,
    McpTransport,
    MessageStatus,
    Role,
    StrEnum,
    fk_column,
    json_column,
    text_column,
    utcnow,
)

# --------------------------------------------------------------------------- bots


class Bot(SQLModel, table=True):
    """One Discord bot: identity, personality, reply rules and limits."""

    __tablename__ = "bot"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=64, sa_column_kwargs={"unique": True}, nullable=False)
    enabled: bool = Field(default=True)
    discord_token_enc: str | None = text_column(nullable=True)
    # Bumped whenever the token or the intents change: the supervisor restarts the bot
    # process when the revision it runs differs from this one.
    gateway_revision: int = Field(default=1)
    message_content_intent: bool = Field(default=True)
    members_intent: bool = Field(default=False)
    personality: str = text_column()
    agent_mode: str = Field(default=AgentMode.CHAIN.value, max_length=16)
    reply_to_mentions: bool = Field(default=True)
    reply_in_dms: bool = Field(default=True)
    reply_to_replies: bool = Field(default=True)
    reply_when_relevant: bool = Field(default=False)
    allowed_channel_ids: list[str] = json_column(list)
    always_on_channel_ids: list[str] = json_column(list)
    keywords: list[str] = json_column(list)
    # Who may use the bot (Discord user and role ids; no allowed ids: everyone not blocked).
    allowed_user_ids: list[str] = json_column(list)
    blocked_user_ids: list[str] = json_column(list)
    allowed_role_ids: list[str] = json_column(list)
    blocked_role_ids: list[str] = json_column(list)
    # Moderation (grobot.core.moderation): what a message or an answer must not contain, whether the
    # decision model is asked if a message is abusive, and what happens then (ignore | refuse | log).
    moderation_words: list[str] = json_column(list)
    moderation_patterns: list[str] = json_column(list)
    moderation_action: str = Field(default="refuse", max_length=16)
    moderation_ask_model: bool = Field(default=False)
    max_tool_rounds: int = Field(default=5)
    user_cooldown_seconds: float = Field(default=2.0)
    max_concurrent_runs: int = Field(default=4)
    # Daily limits (UTC day); NULL: the global default in ``setting``; 0: unlimited.
    daily_token_limit: int | None = None
    daily_call_limit: int | None = None
    user_daily_message_limit: int | None = None
    # Budgets beside them (NULL: the global default; 0: none): cost per UTC day, and per UTC month.
    daily_cost_limit: float | None = None
    monthly_token_limit: int | None = None
    monthly_call_limit: int | None = None
    monthly_cost_limit: float | None = None
    # The Archivist's notes wait for an admin (suggestions to accept or dismiss) instead of being saved at once.
    notes_need_approval: bool = Field(default=False)
    # Answers from its documents (its files, indexed; see grobot.core.documents): on or off, the least
    # similarity of a passage to a message to go into the prompt, the largest file indexed, passages kept.
    documents_enabled: bool = Field(default=True)
    documents_threshold: float = Field(default=0.3)
    documents_max_file_bytes: int = Field(default=5 * 1024 * 1024)
    documents_max_passages: int = Field(default=20_000)
    # The web tools (web_search, web_read); the SearXNG instance they search (NULL: the global setting).
    web_search: bool = Field(default=False)
    web_search_url: str | None = Field(default=None, max_length=500)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class LLMSetting(SQLModel, table=True):
    """LLM settings of one category; ``bot_id`` NULL holds the global default."""

    __tablename__ = "llm_setting"
    __table_args__ = (UniqueConstraint("bot_id", "category", name="uq_llm_setting_bot_category"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int | None = fk_column("bot.id", nullable=True)
    category: str = Field(max_length=16)
    provider: str = Field(max_length=32)
    base_url: str = Field(default="", max_length=500)
    # A bot's override may leave these NULL: inherited (global default, or the provider's default).
    model: str | None = Field(default=None, max_length=200)
    context_window: int | None = Field(default=None)
    temperature: float | None = Field(default=None)
    # For the roles that write prose; NULL: the provider's default (GroBot's own for the embedded models), 1.0: off.
    repeat_penalty: float | None = Field(default=None)
    api_key_enc: str | None = text_column(nullable=True)
    fallback_model: str | None = Field(default=None, max_length=200)
    supports_images: bool = Field(default=False)
    updated_at: datetime = Field(default_factory=utcnow)


class BotStatus(SQLModel, table=True):
    """Live state of one bot, written by its process and its supervisor."""

    __tablename__ = "bot_status"

    bot_id: int | None = Field(
        default=None, sa_column=Column(Integer, ForeignKey("bot.id", ondelete="CASCADE"), primary_key=True)
    )
    state: str = Field(default=BotState.STOPPED.value, max_length=16)
    detail: str = text_column()
    pid: int | None = None
    supervisor_id: str | None = Field(default=None, max_length=100, index=True)
    lease_expires_at: datetime | None = None
    heartbeat_at: datetime | None = None
    started_at: datetime | None = None
    running_revision: int | None = None
    discord_user_id: str | None = Field(default=None, max_length=32)
    discord_user_name: str | None = Field(default=None, max_length=100)
    guild_count: int = Field(default=0)
    crash_count: int = Field(default=0)
    last_error: str = text_column()
    last_error_at: datetime | None = None
    # The token revision that Discord rejected: no retry until the revision changes.
    rejected_revision: int | None = None
    updated_at: datetime = Field(default_factory=utcnow)


class Supervisor(SQLModel, table=True):
    """A running ``bot_worker`` supervisor (for leases and job takeover)."""

    __tablename__ = "supervisor"

    id: str = Field(primary_key=True, max_length=100)
    hostname: str = Field(default="", max_length=255)
    pid: int = Field(default=0)
    started_at: datetime = Field(default_factory=utcnow)
    heartbeat_at: datetime = Field(default_factory=utcnow)


# --------------------------------------------------------------------------- tools


class McpServer(SQLModel, table=True):
    """An MCP server that bots may use."""

    __tablename__ = "mcp_server"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=64, sa_column_kwargs={"unique": True}, nullable=False)
    transport: str = Field(default=McpTransport.STDIO.value, max_length=32)
    command: str | None = Field(default=None, max_length=500)
    args: list[str] = json_column(list)
    env_enc: str | None = text_column(nullable=True)
    cwd: str | None = Field(default=None, max_length=500)
    url: str | None = Field(default=None, max_length=1000)
    headers_enc: str | None = text_column(nullable=True)
    enabled: bool = Field(default=True)
    tools_cache: list[dict[str, Any]] | None = json_column(nullable=True)
    tools_refreshed_at: datetime | None = None
    last_error: str = text_column()
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class BotMcpServer(SQLModel, table=True):
    """Association of a bot with an MCP server, with its own settings."""

    __tablename__ = "bot_mcp_server"

    bot_id: int | None = Field(
        default=None, sa_column=Column(Integer, ForeignKey("bot.id", ondelete="CASCADE"), primary_key=True)
    )
    mcp_server_id: int | None = Field(
        default=None,
        sa_column=Column(Integer, ForeignKey("mcp_server.id", ondelete="CASCADE"), primary_key=True, index=True),
    )
    enabled: bool = Field(default=True)
    # None: every tool of the server; otherwise the allowed tool names.
    allowed_tools: list[str] | None = json_column(nullable=True)
    timeout_seconds: float = Field(default=30.0)
    # None, or per tool of the server (its own name): {"fallback": "<tool>", "access": "read_only"|"writes"}.
    # A fallback is another tool of this server, "<server>__<tool>" of another one, or a built-in.
    tool_settings: dict[str, dict[str, str]] | None = json_column(nullable=True)


# --------------------------------------------------------------------------- conversations


class Conversation(SQLModel, table=True):
    """One history: a Discord channel, thread or DM of a bot, or a Test Chat session."""

    __tablename__ = "conversation"
    __table_args__ = (UniqueConstraint("bot_id", "key", name="uq_conversation_bot_key"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = fk_column("bot.id")
    # "guild:<channel>", "dm:<channel>", "thread:<id>", "test:<uuid>" ...
    key: str = Field(max_length=200)
    kind: str = Field(default="guild", max_length=16)
    title: str = Field(default="", max_length=200)
    discord_guild_id: str | None = Field(default=None, max_length=32)
    discord_channel_id: str | None = Field(default=None, max_length=32)
    app_user_id: int | None = fk_column("app_user.id", nullable=True, ondelete="SET NULL")
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow, index=True)


class Message(SQLModel, table=True):
    """One message of a conversation, in OpenAI format.

    ``status`` is set on Test Chat user messages: ``pending`` until a supervisor claims it,
    ``running``, then ``done`` or ``error``.
    """

    __tablename__ = "message"
    __table_args__ = (
        Index("ix_message_conversation_created", "conversation_id", "created_at", "id"),
        Index("ix_message_status", "status"),
    )

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: int = fk_column("conversation.id", index=False)
    role: str = Field(max_length=16)
    content: str = text_column()
    tool_calls: list[dict[str, Any]] | None = json_column(nullable=True)
    tool_call_id: str | None = Field(default=None, max_length=100)
    name: str | None = Field(default=None, max_length=200)
    author_id: str | None = Field(default=None, max_length=32)
    author_name: str | None = Field(default=None, max_length=100)
    discord_message_id: str | None = Field(default=None, max_length=32)
    attachments: list[dict[str, Any]] | None = json_column(nullable=True)
    status: str | None = Field(default=None, max_length=16)
    error: str = text_column()
    claimed_by: str | None = Field(default=None, max_length=100)
    claimed_at: datetime | None = None
    # A Test Chat message: the Discord channel it is tested as (that channel's persona answers it).
    as_channel_id: str | None = Field(default=None, max_length=32)
    created_at: datetime = Field(default_factory=utcnow)


class AgentEvent(SQLModel, table=True):
    """An ordered event of one agent run (``run_id`` = the user message's id)."""

    __tablename__ = "agent_event"
    __table_args__ = (UniqueConstraint("run_id", "seq", name="uq_agent_event_run_seq"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = fk_column("message.id", index=False)
    seq: int
    kind: str = Field(max_length=32)
    data: dict[str, Any] = json_column(dict)
    created_at: datetime = Field(default_factory=utcnow)


class RunImage(SQLModel, table=True):
    """An image of one run (``run_id`` = the user message's id): one a tool returned (``origin``
    ``tool``: shown in Test Chat, sent to Discord as an attachment), or one a tester sent with the
    message (``user``). Served to the web app's users who may see the run, never by another host."""

    __tablename__ = "run_image"

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = fk_column("message.id")
    origin: str = Field(max_length=16)
    mime_type: str = Field(max_length=32)
    name: str = Field(default="", max_length=200)
    size: int
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class LLMCall(SQLModel, table=True):
    """One LLM call: who made it, on which model, what it cost and how long it took."""

    __tablename__ = "llm_call"
    __table_args__ = (Index("ix_llm_call_bot_created", "bot_id", "created_at"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int | None = fk_column("bot.id", nullable=True, index=False)
    run_id: int | None = fk_column("message.id", nullable=True, ondelete="SET NULL")
    agent_role: str = Field(max_length=32)
    provider: str = Field(max_length=32)
    model: str = Field(max_length=200)
    tokens_in: int = Field(default=0)
    tokens_out: int = Field(default=0)
    ttft_ms: float | None = None
    latency_ms: float = Field(default=0.0)
    error: str = text_column()
    cost: float | None = None  # estimated, in the admin's currency; NULL: no price known
    created_at: datetime = Field(default_factory=utcnow)


class UsageDaily(SQLModel, table=True):
    """LLM usage per bot and UTC day, kept current with every ``llm_call`` insert (limits, dashboard)."""

    __tablename__ = "usage_daily"
    __table_args__ = (UniqueConstraint("bot_id", "day", name="uq_usage_daily_bot_day"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = fk_column("bot.id", index=False)
    day: str = Field(max_length=10)  # YYYY-MM-DD
    calls: int = Field(default=0)
    tokens_in: int = Field(default=0)
    tokens_out: int = Field(default=0)
    errors: int = Field(default=0)
    cost: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})


class UserUsageDaily(SQLModel, table=True):
    """Messages of one Discord user answered by one bot on one UTC day (the per-user daily limit)."""

    __tablename__ = "user_usage_daily"

    bot_id: int | None = Field(
        default=None, sa_column=Column(Integer, ForeignKey("bot.id", ondelete="CASCADE"), primary_key=True)
    )
    day: str = Field(primary_key=True, max_length=10)  # YYYY-MM-DD
    discord_user_id: str = Field(primary_key=True, max_length=32)
    messages: int = Field(default=0)


class LLMPrice(SQLModel, table=True):
    """The admin's price of a model, per million tokens in and out, in the admin's currency."""

    __tablename__ = "llm_price"
    __table_args__ = (UniqueConstraint("provider", "model", name="uq_llm_price_provider_model"),)

    id: int | None = Field(default=None, primary_key=True)
    provider: str = Field(max_length=32)
    model: str = Field(max_length=200)
    input_per_million: float = Field(default=0.0)
    output_per_million: float = Field(default=0.0)
    updated_at: datetime = Field(default_factory=utcnow)


class BudgetAlert(SQLModel, table=True):
    """A budget of a bot that reached 80 % in one period (a day or a month): alerted once."""

    __tablename__ = "budget_alert"

    bot_id: int | None = Field(
        default=None, sa_column=Column(Integer, ForeignKey("bot.id", ondelete="CASCADE"), primary_key=True)
    )
    budget: str = Field(primary_key=True, max_length=32)
    period: str = Field(primary_key=True, max_length=10)  # YYYY-MM-DD or YYYY-MM
    used: float = Field(default=0.0)
    budget_limit: float = Field(default=0.0)
    created_at: datetime = Field(default_factory=utcnow)


class LogEntry(SQLModel, table=True):
    """A log record of a bot (or of the platform when ``bot_id`` is NULL)."""

    __tablename__ = "log_entry"
    __table_args__ = (Index("ix_log_entry_bot_created", "bot_id", "created_at"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int | None = fk_column("bot.id", nullable=True, index=False)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    level: str = Field(max_length=10)
    logger: str = Field(max_length=200)
    message: str = text_column()


# --------------------------------------------------------------------------- users of a bot


class UserProfile(SQLModel, table=True):
    """Admin-written directives for one Discord user of one bot."""

    __tablename__ = "user_profile"
    __table_args__ = (UniqueConstraint("bot_id", "discord_user_id", name="uq_user_profile_bot_user"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = fk_column("bot.id", index=False)
    discord_user_id: str = Field(max_length=32)
    display_name: str = Field(default="", max_length=100)
    directives: str = text_column()
    updated_at: datetime = Field(default_factory=utcnow)


class DiscordRole(SQLModel, table=True):
    """A role of a guild, as a bot last saw it on Discord (for the access lists, by name)."""

    __tablename__ = "discord_role"

    bot_id: int | None = Field(
        default=None, sa_column=Column(Integer, ForeignKey("bot.id", ondelete="CASCADE"), primary_key=True)
    )
    role_id: str = Field(primary_key=True, max_length=32)
    guild_id: str = Field(max_length=32)
    guild_name: str = Field(default="", max_length=100)
    name: str = Field(default="", max_length=100)
    position: int = Field(default=0)
    updated_at: datetime = Field(default_factory=utcnow)


class ChannelPersona(SQLModel, table=True):
    """A bot's persona in one Discord channel (and its threads): a personality addition and LLM
    overrides per category (``{"output": {"model": "..."}}``: what is left out is the bot's own)."""

    __tablename__ = "channel_persona"

    bot_id: int | None = Field(
        default=None, sa_column=Column(Integer, ForeignKey("bot.id", ondelete="CASCADE"), primary_key=True)
    )
    channel_id: str = Field(primary_key=True, max_length=32)
    personality: str = text_column()
    llms: dict[str, Any] = json_column(dict)
    updated_at: datetime = Field(default_factory=utcnow)


class UserNote(SQLModel, table=True):
    """A fact about a Discord user, with how reliable it is (0..1)."""

    __tablename__ = "user_note"
    __table_args__ = (Index("ix_user_note_bot_user", "bot_id", "discord_user_id"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = fk_column("bot.id", index=False)
    discord_user_id: str = Field(max_length=32)
    note: str = text_column()
    reliability: float = Field(default=0.5)
    source: str = Field(default="admin", max_length=16)  # admin | tool | archivist
    # active: the bot knows it; suggested: an Archivist note waiting for an admin; dismissed: refused (never suggested again)
    status: str = Field(default="active", max_length=16)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class BotFile(SQLModel, table=True):
    """A file of a bot; the bytes live under ``<data dir>/files/<bot id>/<path>``."""

    __tablename__ = "bot_file"
    __table_args__ = (UniqueConstraint("bot_id", "path", name="uq_bot_file_bot_path"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = fk_column("bot.id", index=False)
    path: str = Field(max_length=500)
    size: int = Field(default=0)
    content_type: str = Field(default="application/octet-stream", max_length=100)
    sha256: str = Field(default="", max_length=64)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class BotDocument(SQLModel, table=True):
    """What the document index holds of one of a bot's files (the supervisor writes it as it indexes).

    Keyed by path, not by the file's row: a deleted file's row stays until its passages are gone.
    """

    __tablename__ = "bot_document"
    __table_args__ = (UniqueConstraint("bot_id", "path", name="uq_bot_document_bot_path"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = fk_column("bot.id", index=False)
    path: str = Field(max_length=500)
    sha256: str = Field(default="", max_length=64)  # of the content indexed (or that failed)
    state: str = Field(default="indexing", max_length=16)  # indexing, indexed, failed
    passages: int = Field(default=0)
    pages: int = Field(default=0)
    error: str = text_column()  # one plain line (state failed)
    settings_key: str = Field(default="", max_length=64)  # the limits and chunker it was indexed with
    updated_at: datetime = Field(default_factory=utcnow)


# --------------------------------------------------------------------------- platform


class Setting(SQLModel, table=True):
    """A global configuration value (JSON)."""

    __tablename__ = "setting"

    key: str = Field(primary_key=True, max_length=100)
    value: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    updated_at: datetime = Field(default_factory=utcnow)


class AppUser(SQLModel, table=True):
    """A person who logs into the web app: an admin, or a tester limited to some bots."""

    __tablename__ = "app_user"

    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(max_length=64, sa_column_kwargs={"unique": True}, nullable=False)
    password_hash: str = Field(max_length=255)
    role: str = Field(default=Role.TESTER.value, max_length=16)
    disabled: bool = Field(default=False)
    # Bumped when the user signs out: every session token issued before stops working.
    session_generation: int = Field(default=0)
    created_at: datetime = Field(default_factory=utcnow)
    last_login_at: datetime | None = None

    def __repr_args__(self) -> Any:  # repr() and str() never show the password hash
        return [(k, v) for k, v in super().__repr_args__() if k != "password_hash"]


class AppUserBot(SQLModel, table=True):
    """A bot that a tester may see."""

    __tablename__ = "app_user_bot"

    app_user_id: int | None = Field(
        default=None, sa_column=Column(Integer, ForeignKey("app_user.id", ondelete="CASCADE"), primary_key=True)
    )
    bot_id: int | None = Field(
        default=None,
        sa_column=Column(Integer, ForeignKey("bot.id", ondelete="CASCADE"), primary_key=True, index=True),
    )


# --------------------------------------------------------------------------- advisory council


class Council(SQLModel, table=True):
    """A bot's advisory council: on or off, and the LLM of its synthesis (empty: the bot's category)."""

    __tablename__ = "council"

    bot_id: int | None = Field(
        default=None, sa_column=Column(Integer, ForeignKey("bot.id", ondelete="CASCADE"), primary_key=True)
    )
    enabled: bool = Field(default=False)
    synthesis_category: str = Field(default=LLMCategory.OUTPUT.value, max_length=16)
    synthesis_provider: str = Field(default="", max_length=32)
    synthesis_model: str = Field(default="", max_length=200)
    updated_at: datetime = Field(default_factory=utcnow)


class CouncilAdvisor(SQLModel, table=True):
    """One advisor of a bot's council: its role text and its LLM (empty provider/model: the category's)."""

    __tablename__ = "council_advisor"
    __table_args__ = (UniqueConstraint("bot_id", "name", name="uq_council_advisor_bot_name"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = fk_column("bot.id", index=False)
    position: int = Field(default=0)
    name: str = Field(max_length=64)
    role: str = text_column()
    category: str = Field(default=LLMCategory.OUTPUT.value, max_length=16)
    provider: str = Field(default="", max_length=32)
    model: str = Field(default="", max_length=200)
    enabled: bool = Field(default=True)


class Deliberation(SQLModel, table=True):
    """A question put to a bot's council: each advisor's answer (JSON), the synthesis and its accounting."""

    __tablename__ = "deliberation"
    __table_args__ = (Index("ix_deliberation_bot_created", "bot_id", "created_at"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = fk_column("bot.id", index=False)
    question: str = text_column()
    asked_by: str = Field(default="", max_length=100)
    platform: str = Field(default="discord", max_length=16)
    # [{name, role, provider, model, answer, error, tokens_in, tokens_out, seconds}] in finishing order
    advisors: list[dict[str, Any]] = json_column(list)
    synthesis: str = text_column()
    consensus: str = text_column()
    disagreements: list[str] = json_column(list)
    recommendation: str = text_column()
    confidence: int | None = None  # 0-100; None: no synthesis
    tokens_in: int = Field(default=0)
    tokens_out: int = Field(default=0)
    cost: float | None = None  # estimated, where prices are known
    seconds: float = Field(default=0.0)
    error: str = text_column()
    # running (advisors still answering: the unanswered ones in ``advisors`` with a ``state``), done, failed (no
    # synthesis: ``error`` says why)
    status: str = Field(default="done", max_length=10, sa_column_kwargs={"server_default": "done"})
    created_at: datetime = Field(default_factory=utcnow)


# --------------------------------------------------------------------------- scheduled posts


class BotSchedule(SQLModel, table=True):
    """A post a bot makes on its own in a channel, on a cron or an interval in a time zone.

    ``kind``: ``text`` (``content`` is posted as it is) or ``prompt`` (``content`` is answered by the bot's
    chain with its tools, and the answer posted). ``next_run_at`` (UTC) is the run to come, computed with
    APScheduler's triggers; a supervisor claims a due run by moving it on (compare and set), so a run happens
    once however many supervisors see it due. ``run_requested``: "Run now" was asked.
    """

    __tablename__ = "bot_schedule"
    __table_args__ = (Index("ix_bot_schedule_due", "enabled", "next_run_at"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = fk_column("bot.id")
    name: str = Field(default="", max_length=100)
    channel_id: str = Field(max_length=32)
    kind: str = Field(default="text", max_length=10)  # text | prompt
    content: str = text_column()
    cron: str = Field(default="", max_length=100)  # five crontab fields ("": an interval)
    interval_seconds: int = Field(default=0)  # 0: a cron
    timezone: str = Field(default="UTC", max_length=64)
    grace_seconds: int = Field(default=300)  # a run missed by more than this is skipped
    enabled: bool = Field(default=True)
    run_requested: bool = Field(default=False)
    next_run_at: datetime | None = None
    last_run_at: datetime | None = None
    last_status: str = Field(default="", max_length=200)
    created_at: datetime = Field(default_factory=utcnow)


class BotScheduleRun(SQLModel, table=True):
    """A claimed run of a schedule, until its post is confirmed (then it is deleted).

    The supervisor that claims a due run (``owner``) holds it until ``expires_at`` and renews that
    while it works; a run whose claim expired (its supervisor died) is taken again by any supervisor.
    Its post carries a nonce derived from the run (Discord returns the existing message for a nonce
    it saw in the past minutes), so a run taken again is not seen twice. ``text``: a prompt's answer
    once written, so that a run taken again posts the same words. ``sent_at``: when its post began (a run
    taken again is posted again only while Discord's nonce dedupe still holds).
    """

    __tablename__ = "bot_schedule_run"

    id: int | None = Field(default=None, primary_key=True)
    schedule_id: int = fk_column("bot_schedule.id")
    bot_id: int = fk_column("bot.id")
    due_at: datetime  # when it was due (UTC); a "Run now": when it was asked for
    run_now: bool = Field(default=False)
    owner: str = Field(default="", max_length=100)  # the supervisor that holds the claim
    claimed_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime = Field(index=True)
    text: str | None = text_column(nullable=True, default=None)
    sent_at: datetime | None = None
