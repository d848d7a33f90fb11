"""The Reflex app and its pages (nothing else lives here; the theme is in rxconfig.py).

Every page but the login page checks the session on load (``AppState.require_login``, or
``require_admin`` for admin-only pages) before its own on-load handlers. A bot's tab pages
check it in ``BotPageState.open_bot``, together with the user's access to the bot and tab.
"""

from collections.abc import Callable

import reflex as rx

from grobot.components.bot_tabs import (
    BOT_ROUTE_PREFIX,
    CHAT,
    CONVERSATIONS,
    COUNCIL,
    FILES,
    KNOWLEDGE,
    LOGS,
    MEMORY,
    SCHEDULES,
    SETTINGS,
    BotTab,
)
from grobot.pages import (
    bot_conversations,
    bot_conversations_state,
    bot_council,
    bot_council_state,
    bot_files,
    bot_files_state,
    bot_knowledge,
    bot_logs,
    bot_logs_state,
    bot_memory,
    bot_memory_state,
    bot_schedules,
    bot_settings,
    bots,
    login,
    login_state,
    mcp,
    not_found,
    settings,
    tester_chat,
    usage,
    users,
)
from grobot.run_images import run_images_endpoint
from grobot.security_headers import security_headers
from grobot.state import AppState
from grobot.state.bot_page import BotPageState
from grobot.state.fleet import BotsState
from grobot.web_session import web_session

# The run images the page shows (inside the origin check), the session cookie's endpoint and the websocket
# origin check, then CSP & co. on every response (the first transformer is the innermost).
# assets/grobot_shell.js: the sidebar's drag-to-resize, in the browser (a same-origin script: CSP allows it).
app = rx.App(html_lang="en", api_transformer=[run_images_endpoint, web_session, security_headers],
             head_components=[rx.el.script(src="/grobot_shell.js", defer=True)])
app.add_page(login.login_page, route=login_state.ROUTE, title=login_state.TITLE, on_load=login_state.LoginState.open)
app.add_page(
    bots.bots_page, route=bots.ROUTE, title=bots.TITLE, on_load=[AppState.require_login, BotsState.refresh]
)
# Any address the app does not know: the frame and a way back, for every signed-in user.
app.add_page(not_found.not_found_page, route=not_found.ROUTE, title=not_found.TITLE,
             on_load=[AppState.require_login, BotsState.refresh])

# Admin-only pages: the on-load check refuses testers before the page reads anything.
for module, page, state in (
    (settings, settings.settings_page, settings.SettingsState),
    (mcp, mcp.mcp_page, mcp.McpState),
    (users, users.users_page, users.UsersState),
    (usage, usage.usage_page, usage.UsageState),
):
    app.add_page(page, route=module.ROUTE, title=module.TITLE,
                 on_load=[AppState.require_admin, BotsState.refresh, state.open])


def add_bot_page(tab: BotTab, page: Callable[[], rx.Component], *loads: Callable) -> None:
    """A bot's tab page: the access check and the sidebar first, then the tab's own loading."""
    app.add_page(page, route=tab.route, title=f"{tab.label} · GroBot",
                 on_load=[BotPageState.open_bot(tab.key, tab.admin_only), BotsState.refresh, *loads])


CHAT_LOADS = (tester_chat.ChatState.load, tester_chat.ChatModelState.load)
add_bot_page(CHAT, tester_chat.chat_page, *CHAT_LOADS)
app.add_page(tester_chat.chat_page, route=BOT_ROUTE_PREFIX, title="Test Chat · GroBot",
             on_load=[BotPageState.open_bot(CHAT.key, CHAT.admin_only), BotsState.refresh, *CHAT_LOADS])
add_bot_page(LOGS, bot_logs.logs_page, bot_logs_state.LogsState.load)
add_bot_page(SETTINGS, bot_settings.settings_page, bot_settings.BotSettingsState.load)
add_bot_page(FILES, bot_files.files_page, bot_files_state.FilesState.load)
add_bot_page(KNOWLEDGE, bot_knowledge.knowledge_page, bot_knowledge.KnowledgeState.load)
add_bot_page(MEMORY, bot_memory.memory_page, bot_memory_state.MemoryState.load)
add_bot_page(COUNCIL, bot_council.council_page, bot_council_state.CouncilState.load)
add_bot_page(CONVERSATIONS, bot_conversations.conversations_page, bot_conversations_state.ConversationsState.load)
add_bot_page(SCHEDULES, bot_schedules.schedules_page, bot_schedules.SchedulesState.load)
