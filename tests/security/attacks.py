"""The attacker's events for every event handler of the web app (issue 28), and the world they aim at.

``ATTACKS`` holds, for each handler, the events an attacker replays to act on what they may not:
a bot not granted to them, an object of another bot (through the page of a bot they may open), a
Test Chat run of another user, an admin's page or account. ``tests/security/test_authorization.py``
compares the handlers it covers with the handlers of the compiled app (read from the app itself):
a new handler fails that test until an attack here covers it.

An attack is written once and replayed in several scenarios: a tester on the page of a bot not
granted to them (``page`` is that bot), the same tester on the page of their granted bot
(``page`` is that one: objects are still named by the ids of the other bot, or of another user),
nobody signed in, and, for the attacks marked ``cross_bot``, an admin on the granted bot's page
naming objects of the other bot (an admin may act on every bot, but only through its own page).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import reflex as rx
from reflex.istate.shared import SharedStateBaseInternal
from reflex.state import FrontendEventExceptionState, OnLoadInternalState, UpdateVarsInternalState
from reflex.utils import format as rx_format
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import AgentEvent, ChannelPersona, Conversation, Deliberation, LogEntry, Message, Role
from grobot.core.services import discord_users, files, mcp_servers, schedules, tester_chat, user_notes, users
from grobot.pages.add_bot_state import AddBotState
from grobot.pages.bot_conversations_state import ConversationsState
from grobot.pages.bot_council_settings_state import CouncilSettingsState
from grobot.pages.bot_council_state import CouncilState
from grobot.pages.bot_documents_state import DocumentsState
from grobot.pages.bot_files_state import FilesState
from grobot.pages.bot_knowledge_state import KnowledgeState, ReviewState
from grobot.pages.bot_logs_state import LogsState
from grobot.pages.bot_memory_state import MemoryState
from grobot.pages.bot_schedules_state import SchedulesState
from grobot.pages.bot_settings_state import BotSettingsState
from grobot.pages.login_state import LoginState
from grobot.pages.mcp_presets_state import McpPresetState
from grobot.pages.mcp_state import McpState
from grobot.pages.settings_state import SettingsState
from grobot.pages.tester_chat_model import ChatModelState
from grobot.pages.tester_chat_state import ChatState, LiveState
from grobot.pages.usage_state import PricesState, UsageState
from grobot.pages.users_state import UsersState
from grobot.state.admin_state import AdminState
from grobot.state.app_state import AppState
from grobot.state.bot_page import BotPageState
from grobot.state.fleet import BotsState
from tests.security.replay import Sent
from tests.ui.auth import UiUser, create_ui_user

DISCORD_USER = "777000000000000777"
PERSONA_CHANNEL = "777000000000000888"  # a channel of the hidden bot with a persona


def canary(what: str) -> str:
    """A text that must never reach the attacker (unique per run: no other test writes it)."""
    return f"CANARY-{what}-{uuid.uuid4().hex[:10]}"


@dataclass
class World:
    """What the attacks aim at. ``hidden`` is the bot not granted to the tester, ``granted`` theirs."""

    admin: UiUser
    tester: UiUser
    other_tester: UiUser
    victim: UiUser  # a disabled tester (enable, reset password, sign in as them)
    hidden: int
    hidden_name: str
    granted: int
    granted_name: str
    note: int
    suggestion: int
    conversation: int
    deliberation: int
    file: str
    server: int
    admin_run_hidden: int  # the admin's live Test Chat answers, on both bots
    admin_run_granted: int
    other_run: int  # another tester's live answer on the granted bot
    schedule: int = 0  # a scheduled post of the hidden bot
    canaries: dict[str, str] = field(default_factory=dict)

    def tokens(self) -> dict[str, str]:
        with session_scope(readonly=True) as session:
            return {name: users.start_session(users.get_user(user.id, session=session))
                    for name, user in (("admin", self.admin), ("tester", self.tester))}

    @property
    def runs(self) -> list[int]:
        return [self.admin_run_hidden, self.admin_run_granted, self.other_run]


def _live_run(bot_id: int, user: UiUser, question: str, answer: str) -> int:
    """A Test Chat message of ``user`` being answered (pending: no worker here), with a streamed word."""
    with session_scope() as session:
        conv = tester_chat.open_session(bot_id, user.id, session=session)
        message = tester_chat.submit(conv.id or 0, question, session=session, author_name=user.username,
                                     author_id=f"app-user:{user.id}")
        session.add(AgentEvent(run_id=message.id or 0, seq=1, kind="token", data={"text": answer}))
        session.add(AgentEvent(run_id=message.id or 0, seq=2, kind="tool_call",
                               data={"name": "files_read", "arguments": {"path": answer}}))
        return message.id or 0


def build_world(admin: UiUser, unique: Callable[[str], str], add_bot: Callable[..., int]) -> World:
    """Two bots, three accounts, and on the hidden bot one object of every kind, each with a canary."""
    c = {name: canary(name) for name in ("bot", "directive", "note", "suggestion", "conversation", "deliberation",
                                         "log", "file", "server", "schedule", "run-hidden", "answer-hidden", "run-granted",
                                         "answer-granted", "run-other", "answer-other")}
    hidden_name, granted_name = c["bot"], unique("Granted")
    hidden, granted = add_bot(hidden_name), add_bot(granted_name)
    tester = create_ui_user(unique("tester"), Role.TESTER)
    other = create_ui_user(unique("other"), Role.TESTER)
    victim = create_ui_user(unique("victim"), Role.TESTER)
    with session_scope() as session:
        for user in (tester, other):
            users.grant_bot(users.get_user(user.id, session=session), granted, session=session)
        users.set_disabled(users.get_user(victim.id, session=session), True, session=session)
        discord_users.set_directives(session=session, bot_id=hidden, discord_user_id=DISCORD_USER,
                                     directives=c["directive"])
        note = user_notes.add_note(session=session, bot_id=hidden, discord_user_id=DISCORD_USER, note=c["note"],
                                   reliability=0.9, source="admin").id or 0
        suggestion = user_notes.add_note(session=session, bot_id=hidden, discord_user_id=DISCORD_USER,
                                         note=c["suggestion"], reliability=0.5, source="archivist",
                                         status=user_notes.SUGGESTED).id or 0
        conv = Conversation(bot_id=hidden, key=f"guild:{uuid.uuid4().hex[:8]}", kind="guild", title="general")
        session.add(conv)
        session.flush()
        session.add(Message(conversation_id=conv.id or 0, role="user", content=c["conversation"],
                            author_id=DISCORD_USER, author_name="someone"))
        deliberation = Deliberation(bot_id=hidden, question=c["deliberation"], synthesis=c["deliberation"])
        session.add(deliberation)
        # A persona in a channel of the hidden bot (its addition: the hidden bot's name, a canary).
        session.add(ChannelPersona(bot_id=hidden, channel_id=PERSONA_CHANNEL, personality=c["bot"]))
        session.add(LogEntry(bot_id=hidden, level="WARNING", logger="grobot.test", message=c["log"]))
        files.write_file(session=session, bot_id=hidden, path="secret.txt", data=c["file"].encode())
        server = mcp_servers.create_server(session=session, name=unique("srv"), command="python",
                                           args=["-m", c["server"]])
        schedule = schedules.create_schedule(hidden, channel_id="123456789012345678", content=c["schedule"],
                                             kind="prompt", cron="0 9 * * mon", session=session)
        session.flush()
        ids = (note, suggestion, conv.id or 0, deliberation.id or 0, server.id or 0, schedule.id or 0)
    return World(
        admin=admin, tester=tester, other_tester=other, victim=victim, hidden=hidden, hidden_name=hidden_name,
        granted=granted, granted_name=granted_name, note=ids[0], suggestion=ids[1], conversation=ids[2],
        deliberation=ids[3], file="secret.txt", server=ids[4], schedule=ids[5],
        admin_run_hidden=_live_run(hidden, admin, c["run-hidden"], c["answer-hidden"]),
        admin_run_granted=_live_run(granted, admin, c["run-granted"], c["answer-granted"]),
        other_run=_live_run(granted, other, c["run-other"], c["answer-other"]),
        canaries=c,
    )


@pytest.fixture(name="world")
def world_fixture(ui_env, ui_admin) -> Iterator[World]:
    """The world of the attacks (a fixture: import ``world_fixture`` into the test module)."""
    from tests.ui.chat import add_bot, unique

    built = build_world(ui_admin, unique, add_bot)
    yield built
    end_runs(built)


def end_runs(world: World) -> None:
    """The world's live runs end (no worker here: none of another test may claim them)."""
    with session_scope() as session:
        for run in world.runs:
            tester_chat.cancel(run, "ended by the test", session=session)


def run_statuses(world: World) -> dict[int, str]:
    with session_scope(readonly=True) as session:
        return {run: tester_chat.run_status(run, session=session)[0] for run in world.runs}


def hidden_bot_messages(world: World) -> list[str]:
    with session_scope(readonly=True) as session:
        return list(session.exec(select(Message.content).join(Conversation)
                                 .where(Conversation.bot_id == world.hidden)).all())


# --------------------------------------------------------------------------- the attacks


@dataclass
class Attack:
    """The events that try ``covers`` against objects the attacker may not act on. ``events(world,
    page)`` builds them for the page of bot ``page`` (the page's on-load check first); ``cross_bot(world)``,
    those of an admin on the granted bot's page naming the hidden bot's objects (its handlers take an id)."""

    covers: tuple[Any, ...]
    events: Callable[[World, int], list[Sent]]
    cross_bot: Callable[[World], list[Sent]] | None = None


def name_of(handler: Any) -> str:
    return handler if isinstance(handler, str) else rx_format.format_event_handler(handler)


def tab(bot: int, key: str, query: str = "") -> str:
    return f"/bots/{bot}/{key}" + (f"?{query}" if query else "")


def opened(bot: int, key: str, admin_only: bool, query: str = "") -> Sent:
    return Sent(BotPageState.open_bot, {"tab": key, "admin_only": admin_only}, tab(bot, key, query))


def on(bot: int, key: str, *calls: tuple[Any, dict[str, Any]], admin_only: bool = True, query: str = "") -> list[Sent]:
    """The page ``key`` of ``bot`` opened, then ``calls`` (handler, payload) from it."""
    path = tab(bot, key, query)
    return [opened(bot, key, admin_only, query), *(Sent(handler, payload, path) for handler, payload in calls)]


def admin_page(route: str, *calls: tuple[Any, dict[str, Any]]) -> list[Sent]:
    return [Sent(AppState.require_admin, {}, route), *(Sent(handler, payload, route) for handler, payload in calls)]


def _persona_events() -> list[tuple[Any, dict[str, Any]]]:
    return [(BotSettingsState.choose_persona_channel, {"value": PERSONA_CHANNEL}),
            (BotSettingsState.save_channel_persona, {"form_data": {"channel": PERSONA_CHANNEL, "personality": "evil",
                                                                   "output_model": "evil",
                                                                   "output_base_url": "http://127.0.0.1:9/evil",
                                                                   "output_context_window": "4096"}}),
            (BotSettingsState.remove_channel_persona, {"channel_id": PERSONA_CHANNEL})]


def _chat(w: World, page: int) -> list[Sent]:
    """The tester's chat actions, on the hidden bot (never granted): nothing reaches it."""
    return on(w.hidden, "chat", (ChatState.load, {}), (ChatState.set_draft, {"value": "to the hidden bot"}),
              (ChatState.attach_image, {"uploads": [{"name": "x.png", "size": 8, "content_type": "image/png"}]}),
              (ChatState.explain_no_images, {}), (ChatState.remove_image, {}),
              (ChatState.choose_test_channel, {"value": PERSONA_CHANNEL}),
              (ChatState.send, {"form_data": {}}), (ChatState.retry, {}), (ChatState.set_confirm_reset, {"value": True}),
              (ChatState.reset_chat, {}), admin_only=False)


def _live(w: World, page: int, runs: tuple[int, ...] = ()) -> list[Sent]:
    """Point the page's live run at another user's run (the old public ``start_live``, or ``setvar``),
    then follow and stop it: on the page of each run's own bot and of the other bot."""
    out: list[Sent] = []
    for run in runs or (w.admin_run_hidden, w.admin_run_granted, w.other_run):
        question = "what did they ask?"
        path = tab(page, "chat")
        out += [opened(page, "chat", False),
                Sent(f"{name_of(LiveState.follow).rsplit('.', 1)[0]}.start_live",
                     {"run_id": run, "status": "pending", "question": question}, path),
                Sent(LiveState.setvar, {"var_name": "live_id", "value": run}, path),
                Sent(LiveState.follow, {}, path), Sent(LiveState.stop, {}, path)]
    return out


def _setvar(w: World, page: int) -> list[Sent]:
    """``setvar`` of every state, on the vars a handler trusts: none of them may be set from outside."""
    values = {"user_id": w.admin.id, "role": "admin", "current_bot_id": w.hidden, "live_id": w.admin_run_hidden,
              "selected": DISCORD_USER, "editing_id": w.note, "confirm_path": w.file, "confirm_user_id": w.admin.id,
              "delete_id": w.server, "access_user_id": w.tester.id, "bot_loaded": True, "access_error": ""}
    out: list[Sent] = []
    for state in (*STATES, *REFLEX_STATES):
        wanted = {var: value for var, value in values.items() if var in state.vars} or {"user_id": w.admin.id}
        out += [Sent(state.setvar, {"var_name": var, "value": value}, tab(page, "chat")) for var, value in wanted.items()]
    return out


REFLEX_STATES = (rx.State, OnLoadInternalState, UpdateVarsInternalState, FrontendEventExceptionState,
                 SharedStateBaseInternal)
STATES = (AppState, AdminState, BotPageState, BotsState, LoginState, AddBotState, McpPresetState, McpState,
          SettingsState, UsageState, PricesState, UsersState, ChatState, LiveState, ChatModelState, ConversationsState, CouncilState,
          CouncilSettingsState, FilesState, DocumentsState, KnowledgeState, ReviewState, LogsState, MemoryState, BotSettingsState,
          SchedulesState)

ADMIN_PAGE_ATTACKS: list[Attack] = [
    Attack((AddBotState.start_add_bot, AddBotState.add_bot_open_change, AddBotState.add_bot),
           lambda w, page: admin_page("/", (AddBotState.start_add_bot, {}), (AddBotState.add_bot_open_change,
                                                                               {"is_open": True}),
                                      (AddBotState.add_bot, {"form": {"name": "Evil bot", "token": "", "enabled": "on"}}))),
    Attack((McpPresetState.open_presets, McpPresetState.choose, McpPresetState.back, McpPresetState.open_change,
            McpPresetState.submit_secrets),
           lambda w, page: admin_page("/mcp", (McpPresetState.open_presets, {}), (McpPresetState.choose, {"name": "time"}),
                                      (McpPresetState.back, {}), (McpPresetState.open_change, {"is_open": False}),
                                      (McpPresetState.submit_secrets, {"form": {"server_name": "evil",
                                                                                "secret_BRAVE_API_KEY": "x"}}))),
    Attack((McpState.open, McpState.start_add, McpState.set_editor_transport, McpState.editor_open_change,
            McpState.save, McpState.close_editor, McpState.start_edit, McpState.test_server, McpState.set_enabled,
            McpState.show_tools, McpState.close_tools, McpState.tools_open_change, McpState.ask_delete,
            McpState.cancel_delete, McpState.confirm_delete),
           lambda w, page: admin_page(
               "/mcp", (McpState.open, {}), (McpState.start_add, {}), (McpState.set_editor_transport, {"value": "stdio"}),
               (McpState.editor_open_change, {"is_open": True}),
               (McpState.save, {"form": {"name": "evil", "transport": "stdio", "command": "sh", "args": "-c id"}}),
               (McpState.close_editor, {}), (McpState.start_edit, {"server_id": w.server}),
               (McpState.test_server, {"server_id": w.server}),
               (McpState.set_enabled, {"server_id": w.server, "enabled": False}),
               (McpState.show_tools, {"server_id": w.server}), (McpState.close_tools, {}),
               (McpState.tools_open_change, {"is_open": False}),
               (McpState.ask_delete, {"server_id": w.server, "name": "x"}), (McpState.cancel_delete, {}),
               (McpState.ask_delete, {"server_id": w.server, "name": "x"}), (McpState.confirm_delete, {}))),
    Attack((SettingsState.open, SettingsState.edited, SettingsState.left, SettingsState.set_intent,
            SettingsState.choose_provider, SettingsState.submit_llm, SettingsState.type_file_bytes,
            SettingsState.save_app),
           lambda w, page: admin_page(
               "/settings", (SettingsState.open, {}), (SettingsState.edited, {"category": "output"}),
               (SettingsState.choose_provider, {"category": "output", "provider": "openai"}),
               (SettingsState.set_intent, {"category": "output", "intent": "force"}),
               (SettingsState.submit_llm, {"form": {"category": "output", "provider": "openai", "model": "evil",
                                                    "base_url": "http://127.0.0.1:1", "api_key": "sk-evil"}}),
               (SettingsState.type_file_bytes, {"value": "1"}),
               (SettingsState.save_app, {"form": {"max_file_bytes": "1", "daily_token_limit": "1"}}),
               (SettingsState.left, {}))),
    Attack((UsageState.open, UsageState.set_period),
           lambda w, page: admin_page("/usage", (UsageState.open, {}), (UsageState.set_period, {"value": "30"}))),
    Attack((PricesState.open, PricesState.save_price, PricesState.delete_price, PricesState.save_currency),
           lambda w, page: admin_page(
               "/usage", (PricesState.open, {}),
               (PricesState.save_price, {"form": {"provider": "openai", "model": "evil", "input": "1", "output": "1"}}),
               (PricesState.delete_price, {"provider": "openai", "model": "gpt-4o-mini"}),
               (PricesState.save_currency, {"form": {"currency": "USD"}}))),
    Attack((UsersState.open, UsersState.start_add, UsersState.add_open_change, UsersState.set_add_role,
            UsersState.add_user, UsersState.close_shown_once, UsersState.shown_once_open_change,
            UsersState.start_password, UsersState.password_open_change, UsersState.reset_password,
            UsersState.start_access, UsersState.access_open_change, UsersState.save_access, UsersState.enable,
            UsersState.ask, UsersState.cancel_confirm, UsersState.confirm),
           lambda w, page: admin_page(
               "/users", (UsersState.open, {}), (UsersState.start_add, {}), (UsersState.add_open_change, {"is_open": True}),
               (UsersState.set_add_role, {"role": "admin"}),
               (UsersState.add_user, {"form": {"username": "mallory", "password": "Mallory-pass-1234", "role": "admin"}}),
               (UsersState.close_shown_once, {}), (UsersState.shown_once_open_change, {"is_open": False}),
               (UsersState.start_password, {"user_id": w.admin.id, "username": "x"}),
               (UsersState.password_open_change, {"is_open": True}),
               (UsersState.reset_password, {"form": {"password": "Taken-over-1234"}}),
               (UsersState.start_access, {"user_id": w.tester.id, "username": "x"}),
               (UsersState.access_open_change, {"is_open": True}),
               (UsersState.save_access, {"form": {f"bot-{w.hidden}": "on", f"bot-{w.granted}": "on"}}),
               (UsersState.enable, {"user_id": w.victim.id}),
               (UsersState.ask, {"action": "delete", "user_id": w.admin.id, "username": "x"}),
               (UsersState.cancel_confirm, {}),
               (UsersState.ask, {"action": "disable", "user_id": w.admin.id, "username": "x"}),
               (UsersState.confirm, {}))),
]

BOT_PAGE_ATTACKS: list[Attack] = [
    Attack((BotPageState.open_bot, BotPageState.refresh_header, BotPageState.set_bot_enabled),
           lambda w, page: on(w.hidden, "chat", (BotPageState.refresh_header, {"_tick": "1"}),
                              (BotPageState.set_bot_enabled, {"enabled": False}), admin_only=False)),
    Attack((BotsState.refresh, AppState.require_login, AppState.require_admin),
           lambda w, page: [Sent(AppState.require_login, {}, "/"), Sent(AppState.require_admin, {}, "/users"),
                            Sent(BotsState.refresh, {"_tick": "1"}, "/")]),
    Attack((ChatState.load, ChatState.set_draft, ChatState.attach_image, ChatState.explain_no_images,
            ChatState.remove_image, ChatState.send, ChatState.retry, ChatState.set_confirm_reset,
            ChatState.reset_chat, ChatState.choose_test_channel), _chat),
    Attack((ChatModelState.load,), lambda w, page: on(page, "chat", (ChatModelState.load, {}), admin_only=False)),
    Attack((LiveState.follow, LiveState.stop), _live, lambda w: _live(w, w.granted, (w.admin_run_hidden,))),
    Attack((ConversationsState.load, ConversationsState.filter_user, ConversationsState.open_conversation,
            ConversationsState.close_conversation),
           lambda w, page: on(page, "conversations", (ConversationsState.load, {}),
                              (ConversationsState.filter_user, {"value": DISCORD_USER}),
                              (ConversationsState.open_conversation, {"conversation_id": w.conversation}),
                              (ConversationsState.close_conversation, {}),
                              query=f"user={DISCORD_USER}&c={w.conversation}"),
           lambda w: on(w.granted, "conversations", (ConversationsState.load, {}),
                        (ConversationsState.open_conversation, {"conversation_id": w.conversation}),
                        query=f"c={w.conversation}")),
    Attack((CouncilState.load, CouncilState.open_deliberation, CouncilState.refresh_live,
            CouncilState.close_deliberation),
           lambda w, page: on(page, "council", (CouncilState.load, {}),
                              (CouncilState.open_deliberation, {"deliberation_id": w.deliberation}),
                              (CouncilState.refresh_live, {"_tick": "1"}),
                              (CouncilState.close_deliberation, {}), query=f"deliberation={w.deliberation}"),
           lambda w: on(w.granted, "council", (CouncilState.load, {}),
                        (CouncilState.open_deliberation, {"deliberation_id": w.deliberation}),
                        query=f"deliberation={w.deliberation}")),
    Attack((CouncilSettingsState.load, CouncilSettingsState.set_council_enabled, CouncilSettingsState.edit_advisor,
            CouncilSettingsState.edit_synthesis, CouncilSettingsState.save_settings, CouncilSettingsState.open_add,
            CouncilSettingsState.add_open_changed, CouncilSettingsState.set_new_name, CouncilSettingsState.set_new_role,
            CouncilSettingsState.add_advisor, CouncilSettingsState.ask_remove, CouncilSettingsState.cancel_confirm,
            CouncilSettingsState.remove_advisor, CouncilSettingsState.ask_reset, CouncilSettingsState.reset_advisors),
           lambda w, page: on(
               page, "council", (CouncilSettingsState.load, {}), (CouncilSettingsState.set_council_enabled, {"enabled": True}),
               (CouncilSettingsState.edit_advisor, {"index": 0, "key": "role", "value": "evil"}),
               (CouncilSettingsState.edit_synthesis, {"key": "synthesis_model", "value": "evil"}),
               (CouncilSettingsState.save_settings, {}), (CouncilSettingsState.open_add, {}),
               (CouncilSettingsState.add_open_changed, {"is_open": True}),
               (CouncilSettingsState.set_new_name, {"value": "Evil"}), (CouncilSettingsState.set_new_role, {"value": "x"}),
               (CouncilSettingsState.add_advisor, {"_form_data": {}}),
               (CouncilSettingsState.ask_remove, {"name": "Analyst"}), (CouncilSettingsState.cancel_confirm, {}),
               (CouncilSettingsState.ask_remove, {"name": "Analyst"}), (CouncilSettingsState.remove_advisor, {}),
               (CouncilSettingsState.ask_reset, {}), (CouncilSettingsState.reset_advisors, {}))),
    Attack((FilesState.load, FilesState.set_folder, FilesState.upload_into, FilesState.upload, FilesState.answer_replace,
            FilesState.replace_dialog_changed, FilesState.preview, FilesState.preview_changed, FilesState.download,
            FilesState.ask_delete, FilesState.cancel_delete, FilesState.dialog_open_changed, FilesState.delete_file),
           lambda w, page: on(
               page, "files", (FilesState.load, {}), (FilesState.set_folder, {"value": "docs"}),
               (FilesState.upload_into, {"folder": "docs"}),
               (FilesState.upload, {"uploads": [{"name": "pwned.txt", "size": 5, "content_type": "text/plain"}]}),
               (FilesState.answer_replace, {"answer": "replace"}), (FilesState.replace_dialog_changed, {"is_open": False}),
               (FilesState.preview, {"path": w.file}), (FilesState.preview_changed, {"is_open": False}),
               (FilesState.download, {"path": w.file}), (FilesState.ask_delete, {"path": w.file}),
               (FilesState.cancel_delete, {}), (FilesState.dialog_open_changed, {"is_open": True}),
               (FilesState.ask_delete, {"path": w.file}), (FilesState.delete_file, {})),
           lambda w: on(w.granted, "files", (FilesState.preview, {"path": w.file}), (FilesState.download, {"path": w.file}),
                        (FilesState.ask_delete, {"path": w.file}), (FilesState.delete_file, {}))),
    Attack((DocumentsState.load, DocumentsState.files_changed, DocumentsState.follow, DocumentsState.set_threshold,
            DocumentsState.set_max_file_mb, DocumentsState.set_max_passages, DocumentsState.save_limits,
            DocumentsState.set_documents_enabled, DocumentsState.reindex),
           lambda w, page: on(
               page, "files", (DocumentsState.load, {}), (DocumentsState.files_changed, {}),
               (DocumentsState.follow, {"_tick": "1"}), (DocumentsState.set_threshold, {"value": "0.99"}),
               (DocumentsState.set_max_file_mb, {"value": "0.001"}), (DocumentsState.set_max_passages, {"value": "1"}),
               (DocumentsState.save_limits, {}), (DocumentsState.set_documents_enabled, {"enabled": False}),
               (DocumentsState.reindex, {}))),
    Attack((KnowledgeState.load, KnowledgeState.refresh_live, KnowledgeState.apply_search, KnowledgeState.select_user,
            KnowledgeState.set_lookup_id, KnowledgeState.open_lookup, KnowledgeState.close_user,
            KnowledgeState.set_directives, KnowledgeState.save_directives, KnowledgeState.set_note_text,
            KnowledgeState.set_note_reliability, KnowledgeState.add_note, KnowledgeState.delete_note,
            KnowledgeState.set_confirm_forget, KnowledgeState.forget_user),
           lambda w, page: on(
               page, "knowledge", (KnowledgeState.load, {}), (KnowledgeState.refresh_live, {"_tick": "1"}),
               (KnowledgeState.apply_search, {"form_data": {"search": ""}}),
               (KnowledgeState.select_user, {"user_id": DISCORD_USER}),
               (KnowledgeState.set_lookup_id, {"value": DISCORD_USER}), (KnowledgeState.open_lookup, {"_form": {}}),
               (KnowledgeState.set_directives, {"value": "obey mallory"}), (KnowledgeState.save_directives, {}),
               (KnowledgeState.set_note_text, {"value": "planted"}),
               (KnowledgeState.set_note_reliability, {"value": [99]}), (KnowledgeState.add_note, {"_form": {}}),
               (KnowledgeState.delete_note, {"note_id": w.note}), (KnowledgeState.set_confirm_forget, {"value": True}),
               (KnowledgeState.forget_user, {}), (KnowledgeState.close_user, {}), query=f"user={DISCORD_USER}"),
           lambda w: on(w.granted, "knowledge", (KnowledgeState.select_user, {"user_id": DISCORD_USER}),
                        (KnowledgeState.delete_note, {"note_id": w.note}))),
    Attack((ReviewState.load_review, ReviewState.set_need_approval, ReviewState.accept, ReviewState.dismiss,
            ReviewState.start_edit, ReviewState.set_edit_text, ReviewState.cancel_edit, ReviewState.save_edit),
           lambda w, page: on(
               page, "knowledge", (ReviewState.load_review, {}), (ReviewState.set_need_approval, {"value": False}),
               (ReviewState.accept, {"note_id": w.suggestion}), (ReviewState.dismiss, {"note_id": w.suggestion}),
               (KnowledgeState.select_user, {"user_id": DISCORD_USER}),
               (ReviewState.start_edit, {"kind": "note", "note_id": w.note, "text": "x"}),
               (ReviewState.set_edit_text, {"value": "rewritten"}), (ReviewState.save_edit, {"_form": {}}),
               (ReviewState.start_edit, {"kind": "suggestion", "note_id": w.suggestion, "text": "x"}),
               (ReviewState.save_edit, {"_form": {}}), (ReviewState.cancel_edit, {})),
           lambda w: on(w.granted, "knowledge", (ReviewState.accept, {"note_id": w.suggestion}),
                        (ReviewState.dismiss, {"note_id": w.suggestion}),
                        (KnowledgeState.select_user, {"user_id": DISCORD_USER}),
                        (ReviewState.start_edit, {"kind": "note", "note_id": w.note, "text": "x"}),
                        (ReviewState.set_edit_text, {"value": "rewritten"}), (ReviewState.save_edit, {"_form": {}}),
                        (ReviewState.start_edit, {"kind": "suggestion", "note_id": w.suggestion, "text": "x"}),
                        (ReviewState.save_edit, {"_form": {}}))),
    Attack((LogsState.load, LogsState.apply_search, LogsState.clear_filters, LogsState.download, LogsState.newer,
            LogsState.older, LogsState.set_first_day, LogsState.set_last_day, LogsState.set_level, LogsState.set_live,
            LogsState.set_zone, LogsState.tail),
           lambda w, page: on(
               page, "logs", (LogsState.load, {}), (LogsState.set_zone, {"zone": "UTC"}),
               (LogsState.set_level, {"level": "ALL"}), (LogsState.apply_search, {"form_data": {"search": ""}}),
               (LogsState.set_first_day, {"value": "2000-01-01"}), (LogsState.set_last_day, {"value": "2100-01-01"}),
               (LogsState.older, {}), (LogsState.newer, {}), (LogsState.set_live, {"live": True}),
               (LogsState.tail, {"_tick": "1"}), (LogsState.download, {"fmt": "jsonl"}), (LogsState.clear_filters, {}))),
    Attack((MemoryState.load, MemoryState.retry, MemoryState.load_more, MemoryState.set_filter_input,
            MemoryState.apply_filter, MemoryState.clear_filter, MemoryState.set_query, MemoryState.run_search,
            MemoryState.clear_search, MemoryState.set_add_text, MemoryState.set_add_user_id, MemoryState.add_memory,
            MemoryState.ask_delete, MemoryState.cancel_delete, MemoryState.delete_memory, MemoryState.ask_delete_user,
            MemoryState.cancel_delete_user, MemoryState.delete_user_memories),
           lambda w, page: on(
               page, "memory", (MemoryState.load, {}), (MemoryState.retry, {}), (MemoryState.load_more, {}),
               (MemoryState.set_filter_input, {"value": DISCORD_USER}), (MemoryState.apply_filter, {"_form": {}}),
               (MemoryState.set_query, {"value": "secret"}), (MemoryState.run_search, {"_form": {}}),
               (MemoryState.clear_search, {}), (MemoryState.set_add_text, {"value": "planted"}),
               (MemoryState.set_add_user_id, {"value": DISCORD_USER}), (MemoryState.add_memory, {"_form": {}}),
               (MemoryState.ask_delete, {"memory_id": "0" * 32, "text": "x"}), (MemoryState.cancel_delete, {}),
               (MemoryState.ask_delete, {"memory_id": "0" * 32, "text": "x"}), (MemoryState.delete_memory, {}),
               (MemoryState.ask_delete_user, {}), (MemoryState.cancel_delete_user, {}), (MemoryState.ask_delete_user, {}),
               (MemoryState.delete_user_memories, {}), (MemoryState.clear_filter, {}))),
    Attack((BotSettingsState.load, BotSettingsState.set_field, BotSettingsState.set_flag, BotSettingsState.discard,
            BotSettingsState.save, BotSettingsState.submit_bar, BotSettingsState.edited, BotSettingsState.left,
            BotSettingsState.set_intent, BotSettingsState.choose_provider, BotSettingsState.submit_llm,
            BotSettingsState.reset_llm,
            BotSettingsState.replace_token, BotSettingsState.clear_token, BotSettingsState.save_mcp,
            BotSettingsState.test_mcp, BotSettingsState.set_delete_confirm, BotSettingsState.delete_bot,
            BotSettingsState.add_access, BotSettingsState.remove_access),
           lambda w, page: on(
               page, "settings", (BotSettingsState.load, {}), (BotSettingsState.set_field, {"name": "personality",
                                                                                           "value": "evil"}),
               (BotSettingsState.set_flag, {"name": "enabled", "value": False}),
               (BotSettingsState.add_access, {"name": "blocked_user_ids", "value": DISCORD_USER}),
               (BotSettingsState.remove_access, {"name": "blocked_user_ids", "value": DISCORD_USER}),
               (BotSettingsState.save, {}),
               (BotSettingsState.submit_bar, {"_form_data": {}}), (BotSettingsState.discard, {}),
               (BotSettingsState.edited, {"category": "output"}),
               (BotSettingsState.set_intent, {"category": "output", "intent": "force"}),
               (BotSettingsState.choose_provider, {"category": "output", "provider": "openai"}),
               (BotSettingsState.submit_llm, {"form_data": {"category": "output", "provider": "openai",
                                                            "model": "evil", "api_key": "sk-evil"}}),
               (BotSettingsState.reset_llm, {"category": "output"}),
               (BotSettingsState.replace_token, {"form_data": {"token": "evil.token.value"}}),
               (BotSettingsState.clear_token, {}),
               (BotSettingsState.save_mcp, {"form_data": {"server_id": str(w.server), "enabled": "on"}}),
               (BotSettingsState.test_mcp, {"server_id": w.server}),
               # The name of a bot the tester may see (they cannot know the other's): the name check passes.
               (BotSettingsState.set_delete_confirm, {"value": w.granted_name if page == w.granted else "x"}),
               (BotSettingsState.delete_bot, {}), (BotSettingsState.left, {}))),
    # A channel's persona: changed or removed on the bot of the page only (an admin on another bot's page
    # naming the hidden bot's channel acts on that other bot, which has no persona there).
    Attack((BotSettingsState.choose_persona_channel, BotSettingsState.save_channel_persona,
            BotSettingsState.remove_channel_persona),
           lambda w, page: on(page, "settings", (BotSettingsState.load, {}), *_persona_events()),
           lambda w: on(w.granted, "settings", (BotSettingsState.load, {}),
                        (BotSettingsState.remove_channel_persona, {"channel_id": PERSONA_CHANNEL}))),
]


def _on_schedule(w: World) -> list[tuple[Any, dict[str, Any]]]:
    """The Schedules tab's events naming the hidden bot's schedule."""
    return [(SchedulesState.start_edit, {"schedule_id": w.schedule}), (SchedulesState.run_now, {"schedule_id": w.schedule}),
            (SchedulesState.try_in_chat, {"schedule_id": w.schedule}),
            (SchedulesState.set_enabled, {"schedule_id": w.schedule, "enabled": False}),
            (SchedulesState.ask_delete, {"schedule_id": w.schedule}), (SchedulesState.cancel_delete, {}),
            (SchedulesState.ask_delete, {"schedule_id": w.schedule}), (SchedulesState.confirm_delete, {})]


BOT_PAGE_ATTACKS.append(Attack(
    (SchedulesState.load, SchedulesState.start_add, SchedulesState.start_edit, SchedulesState.editor_open_change,
     SchedulesState.save, SchedulesState.set_enabled, SchedulesState.run_now, SchedulesState.try_in_chat,
     SchedulesState.ask_delete, SchedulesState.cancel_delete, SchedulesState.confirm_delete),
    lambda w, page: on(page, "schedules", (SchedulesState.load, {}), (SchedulesState.start_add, {}),
                       (SchedulesState.editor_open_change, {"is_open": True}),
                       (SchedulesState.save, {"form": {"channel_id": "123456789012345678", "content": "planted",
                                                       "timing": "interval", "every": "1"}}),
                       *_on_schedule(w),
                       (SchedulesState.save, {"form": {"channel_id": "123456789012345678", "content": "planted",
                                                       "timing": "interval", "every": "1"}})),
    # An admin on the granted bot's page names the hidden bot's schedule (no save: a new schedule of the
    # granted bot is theirs to add).
    lambda w: on(w.granted, "schedules", (SchedulesState.load, {}), *_on_schedule(w))))

OTHER_ATTACKS: list[Attack] = [
    # The login page: a guess at the disabled victim's account (never a real account's: the throttle
    # counts this client's failures, and the browser tests sign in from the same address).
    Attack((LoginState.open, LoginState.submit),
           lambda w, page: [Sent(LoginState.open, {}, "/login"),
                            Sent(LoginState.submit, {"form_data": {"username": w.victim.username,
                                                                   "password": w.victim.password}}, "/login")]),
    Attack(tuple(state.setvar for state in (*STATES, *REFLEX_STATES)), _setvar),
    # Reflex's own handlers: loading and hydrating the page, client storage, the frontend's error report.
    Attack((rx.State.hydrate, rx.State.hydrate_and_load, rx.State.set_is_hydrated, OnLoadInternalState.on_load_internal,
            OnLoadInternalState.set_is_hydrated, UpdateVarsInternalState.update_vars_internal,
            FrontendEventExceptionState.handle_frontend_exception),
           lambda w, page: [Sent(rx.State.hydrate, {}, tab(w.hidden, "files")),
                            Sent(rx.State.hydrate_and_load,
                                 {"vars": {f"{AppState.get_full_name()}.user_id": w.admin.id}, "hashes": []},
                                 tab(w.hidden, "files")),
                            Sent(OnLoadInternalState.on_load_internal, {}, tab(w.hidden, "files")),
                            Sent(rx.State.set_is_hydrated, {"value": True}, tab(w.hidden, "files")),
                            Sent(OnLoadInternalState.set_is_hydrated, {"value": True}, tab(w.hidden, "files")),
                            Sent(UpdateVarsInternalState.update_vars_internal,
                                 {"vars": {f"{AppState.get_full_name()}.user_id": w.admin.id,
                                           f"{AppState.get_full_name()}.role": "admin"}}, "/"),
                            Sent(FrontendEventExceptionState.handle_frontend_exception,
                                 {"info": "x", "component_stack": "y"}, "/")]),
]

# Covered by a test of its own: signing out ends the signed-in user's sessions, so it would end the
# replay's own (tests/security/test_authorization.py replays it alone, on a tab another user left).
SEPARATELY_COVERED: dict[str, str] = {
    name_of(AppState.sign_out): "test_sign_out_ends_only_the_sessions_of_its_own_cookie",
}

ATTACKS: list[Attack] = [*ADMIN_PAGE_ATTACKS, *BOT_PAGE_ATTACKS, *OTHER_ATTACKS]


def covered() -> set[str]:
    """The full names of the handlers the attacks (and the separate tests) cover."""
    return {name_of(handler) for attack in ATTACKS for handler in attack.covers} | set(SEPARATELY_COVERED)
