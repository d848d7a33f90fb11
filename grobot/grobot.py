"""The Reflex app and its pages (nothing else lives here; the theme is in rxconfig.py).

Every page but the login page checks the session on load (``AppState.require_login``, or
``require_admin`` for admin-only pages) before its own on-load handlers.
"""

import reflex as rx

from grobot.pages import bots, login, mcp, settings, usage, users
from grobot.state import AppState

app = rx.App(html_lang="en")
app.add_page(login.login_page, route=login.ROUTE, title=login.TITLE, on_load=login.LoginState.open)
app.add_page(
    bots.bots_page, route=bots.ROUTE, title=bots.TITLE, on_load=[AppState.require_login, bots.BotsState.refresh]
)

# Admin-only pages: the on-load check refuses testers before the page reads anything.
for module, page, state in (
    (settings, settings.settings_page, settings.SettingsState),
    (mcp, mcp.mcp_page, mcp.McpState),
    (users, users.users_page, users.UsersState),
    (usage, usage.usage_page, usage.UsageState),
):
    app.add_page(page, route=module.ROUTE, title=module.TITLE, on_load=[AppState.require_admin, state.open])
