"""The Reflex app and its pages (nothing else lives here; the theme is in rxconfig.py)."""

import reflex as rx

from grobot.pages import bots

app = rx.App(html_lang="en")
app.add_page(bots.bots_page, route=bots.ROUTE, title=bots.TITLE, on_load=bots.BotsState.refresh)
